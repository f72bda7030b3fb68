"""One client of the MariaDB roundtrip load: primary-key SELECTs for T seconds, latencies out.

Run by a worker as `python -m encbench.engines.mariadb.select_driver` (one process per client, so
clients do not share a Python interpreter lock). The password comes in the environment
(ENCBENCH_DRIVER_PASSWORD), never on the command line. Prints one JSON object: the
server's view of the connection's TLS, the seconds run and each query's latency in µs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

from .client import pymysql, server_tls_state, tls_params


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="encbench.engines.mariadb.select_driver")
    ap.add_argument("--tls", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--marker", required=True)
    ap.add_argument("--params", required=True, help="JSON: host, port, user, database")
    ap.add_argument("--queries", type=int, default=None, help="this many queries instead of --seconds (fixed work)")
    args = ap.parse_args(argv)
    params = json.loads(args.params)
    params["password"] = os.environ.get("ENCBENCH_DRIVER_PASSWORD", "")
    try:
        conn = pymysql().connect(**params, autocommit=True, **tls_params(args.tls))
    except Exception as e:  # one line for the worker to report
        print(f"cannot connect: {e}", file=sys.stderr)
        return 1
    cur = conn.cursor()
    state = server_tls_state(cur)
    sql = f"SELECT /* {args.marker} */ v FROM rt WHERE id = %s"
    rng = random.Random()
    lat: list[int] = []
    clock = time.perf_counter_ns
    t_start = clock()
    end = t_start + int(args.seconds * 1e9)
    while True:
        t0 = clock()
        if (t0 >= end) if args.queries is None else len(lat) >= args.queries:
            break
        cur.execute(sql, (rng.randint(1, args.rows),))
        cur.fetchall()
        lat.append((clock() - t0) // 1000)
    elapsed = (clock() - t_start) / 1e9
    conn.close()
    json.dump({"tls": state, "seconds": elapsed, "latencies_us": lat}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
