"""Storm: the Python client vs the native C driver, interleaved (issue 12, item 9).

Each round runs `encbench run --engine ENGINE --workload storm` once with
--param native_client=0 (psycopg or PyMySQL in the worker) and once with native_client=1 (the
C/libpq driver; the `mariadb` client), in alternating order (ABBA), and prints per invocation: the client's CPU share
(client CPU / wall, mean of the measured runs) and client/server CPU per message for tls=off
and the forced suite, and the TLS-vs-plain elapsed ratio with its CI and verdict.

    .venv/bin/python bench/storm_client.py --rounds 3 --runs 6 --messages 200000
    .venv/bin/python bench/storm_client.py --engine mariadb --rounds 2 --runs 6 --messages 50000
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

FORCED = "TLSv1.3:TLS_AES_256_GCM_SHA384"
CLIENTS = {0: "python", 1: "native"}


def one(engine: str, native: int, runs: int, messages: int, out: Path) -> dict:
    cmd = [str(Path(sys.executable).parent / "encbench"), "run", "--engine", engine, "--workload", "storm",
           "--runs", str(runs), "--warmups", "1", "--variant", f"tls=off,{FORCED}", "--param",
           f"messages={messages}", "--param", f"native_client={native}", "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"encbench failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(out.read_text())


def facts(doc: dict) -> dict:
    per: dict[str, dict] = {}
    for run in doc["runs"]:
        if run.get("warmup"):
            continue
        for op in run["operations"]:
            if op["operation"] != "messages":
                continue
            v = per.setdefault(run["variant"]["tls"], {"share": [], "client_us": [], "server_us": [], "wall": []})
            m, e = op["metrics"], op["extra"]
            v["share"].append(e["client_share"])
            v["client_us"].append(1e6 * m["client_cpu_s"] / e["messages"])
            v["server_us"].append(1e6 * m["cpu_s"] / e["messages"])
            v["wall"].append(m["wall_s"])
    wall = next(c for c in doc["comparisons"] if c["workload"] == "storm" and c["operation"] == "messages"
                and c["metric"] == "wall_s")
    return {"per": {k: {n: statistics.mean(x) for n, x in v.items()} | {"share_max": max(v["share"])}
                    for k, v in per.items()},
            "ratio": wall["ratio"], "ci": wall["ci"], "verdict": wall.get("verdict_text") or wall.get("verdict")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="postgres", choices=("postgres", "mariadb"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--messages", type=int, default=200_000)
    args = ap.parse_args()
    print(f"{'round':>5} {'client':7} {'share off':>9} {'share tls':>9} {'max':>5} {'cli µs/msg off/tls':>19} "
          f"{'srv µs/msg off/tls':>19} {'tls/off elapsed [95% CI]':>26}  verdict", flush=True)
    with tempfile.TemporaryDirectory(prefix="encbench-stormclient-") as tmp:
        for r in range(args.rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for native in order:
                f = facts(one(args.engine, native, args.runs, args.messages, Path(tmp) / f"r{r}-{native}.json"))
                off, tls = f["per"]["off"], f["per"][FORCED]
                ci = f"[{f['ci'][0]:.2f}, {f['ci'][1]:.2f}]" if f["ci"] else "[-]"
                print(f"{r:>5} {CLIENTS[native]:7} {off['share']:9.0%} {tls['share']:9.0%} "
                      f"{max(off['share_max'], tls['share_max']):5.0%} "
                      f"{off['client_us']:8.2f} / {tls['client_us']:6.2f}  {off['server_us']:8.2f} / "
                      f"{tls['server_us']:6.2f}  {f['ratio']:10.2f}x {ci:>14}  {f['verdict']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
