#!/usr/bin/env python3
"""encbench's oltp workload against the community's own driver invoked by hand on the same server (issue 22).

    .venv/bin/python bench/oltp_vs_peers.py --engine mariadb [sysbench options...]   # bench/oltp_peers_mariadb.py
    .venv/bin/python bench/oltp_vs_peers.py --engine postgres [pgbench options...]   # bench/oltp_peers_postgres.py

Each engine's peer runner starts a private server, runs encbench's oltp runs and the driver by hand interleaved,
and prints the ratios encbench / driver of transactions per second, p95 latency and server CPU per transaction
with their 95% CIs (agreement: every CI holds 1), and encbench's own cost per transaction. The options after
--engine are the peer runner's own (`--help` after the engine lists them). Prints; asserts nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PEERS = {"mariadb": "oltp_peers_mariadb.py", "postgres": "oltp_peers_postgres.py"}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--engine" or argv[1] not in PEERS:
        print(f"usage: oltp_vs_peers.py --engine {{{','.join(PEERS)}}} [the peer runner's options]", file=sys.stderr)
        return 2
    path = Path(__file__).with_name(PEERS[argv[1]])
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return module.main(argv[2:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
