#!/usr/bin/env python3
"""The per-page estimate checked against real mixes (issue 22): its error per mix and memory share.

One encbench run per engine measures, side by side: cold scans (scan-eq: the per-page read cost `encbench
estimate` took before), a warm rebuild (the per-page write cost) and the oltp workload's mixes at two memory shares,
encrypted and plain. For every mix and share it prints the added CPU per transaction measured, and what two
estimates predict from that mix's own page reads and writes per transaction:

- scan-based: the scans' per-page read cost x its reads + the rebuild's per-page write cost x its writes (what
  `encbench estimate --read-rate R --write-rate W` computes from a scan file);
- mix-based: a per-page read cost and a per-page write cost fitted (least squares) to the OTHER mixes of the same
  share (leave-one-out: the mix predicted never lends its own figure) x its reads and writes: random single-page
  I/O priced as a real mix pays it (`encbench estimate --access random`).

- hybrid: the scans' per-page read cost for the reads, a per-page write cost fitted to the other mixes of the
  share (leave-one-out) for the writes.

with each error in percent (goal: |error| <= 15% of the measured added CPU) and its 95% CI where it has one; an
error against an added CPU (or a per-page cost) whose CI holds 0 is not given.

    .venv/bin/python bench/estimate_oltp.py --engine mariadb
    .venv/bin/python bench/estimate_oltp.py --engine postgres --encryption fscrypt   # as root
    .venv/bin/python bench/estimate_oltp.py --engine sqlite
    .venv/bin/python bench/estimate_oltp.py --from RESULT.json                       # a kept run again

Prints what was measured in this run; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = {"mariadb": "oltp_read_only,oltp_read_write,oltp_point_select",
           "postgres": "select-only,tpcb-like,simple-update", "sqlite": "select-only,tpcb-like,simple-update"}


def measure(args, out: Path) -> dict:
    cmd = [sys.executable, "-m", "encbench.cli", "run", "--engine", args.engine, "--workload", "scan-eq,rebuild,oltp",
           "--variant", f"script={args.scripts or SCRIPTS[args.engine]}",
           "--variant", f"memory={args.memory}", "--variant", f"encryption=off,{args.encryption}",
           "--param", f"seconds={args.seconds}", "--param", f"warmup_seconds={args.warmup_seconds}",
           "--runs", str(args.runs), "--size", args.size, "-o", str(out)]
    if args.data_dir:
        cmd += ["--data-dir", args.data_dir]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    print(f"encbench run: exit {done.returncode}, {time.monotonic() - t0:.0f} s ({' '.join(cmd[3:])})")
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip().splitlines()[-1:])
    return json.loads(out.read_text())


def fitted(others: list[dict], e: dict) -> float | None:
    """The added µs per transaction of `e` from per-page read and write costs fitted to the other mixes (non-negative
    least squares; the write cost only when the others write and differ in how much)."""
    import numpy as np

    if not others:
        return None
    reads = np.array([o["pages_read_per_txn"] for o in others])
    writes = np.array([o["pages_written_per_txn"] or 0.0 for o in others])
    added = np.array([o["added_cpu_us_per_txn"] for o in others])
    if len(others) >= 2 and np.linalg.matrix_rank(np.column_stack([reads, writes])) == 2:
        from scipy.optimize import nnls  # a page's cost is not negative: least squares with r, w >= 0

        (r, w), _ = nnls(np.column_stack([reads, writes]), added)
    else:  # one mix, or mixes that do not tell reads from writes: a cost per page read alone
        r, w = float(added.sum() / reads.sum()), 0.0
    return r * e["pages_read_per_txn"] + w * (e["pages_written_per_txn"] or 0.0)


def hybrid(others: list[dict], e: dict, per_read_us: float | None) -> float | None:
    """The scans' per-page read cost for the reads, and a per-page write cost fitted to the other mixes' added CPU
    left after their reads are priced so (what a rebuild's write cost cannot give when it did not resolve): None
    without a resolved scan cost, or when no other mix writes."""
    if per_read_us is None:
        return None
    writers = [o for o in others if o["pages_written_per_txn"]]
    if not writers:
        return per_read_us * e["pages_read_per_txn"] if not e["pages_written_per_txn"] else None
    rest = sum(o["added_cpu_us_per_txn"] - per_read_us * o["pages_read_per_txn"] for o in writers)
    w = max(0.0, rest / sum(o["pages_written_per_txn"] for o in writers))
    return per_read_us * e["pages_read_per_txn"] + w * (e["pages_written_per_txn"] or 0.0)


def _pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:+5.0f}%"


def report(doc: dict) -> None:
    from encbench.analysis import summary as an

    a = an.analyze(doc)
    entries = [e for e in a.oltp_costs or [] if e["added_cpu_us_per_txn"] is not None]
    print(f"{'mix':<22} {'memory':>6} {'reads/txn':>9} {'added µs/txn [95% CI]':>26} {'scan est':>9} {'error':>7} "
          f"{'[95% CI]':>12} {'mix est':>9} {'error':>7} {'hybrid':>9} {'error':>7}")
    scan_errors, mix_errors, hybrid_errors = [], [], []
    for e in sorted(entries, key=lambda e: (e["memory"] or "", e["script"] or "")):
        chk = e.get("estimate_check") or {}
        others = [o for o in entries if o is not e and o["memory"] == e["memory"] and o["pages_read_per_txn"]]
        mix_pred = fitted(others, e)
        measured = e["added_cpu_us_per_txn"]
        ci = e["added_cpu_us_per_txn_ci"]
        resolved = bool(ci) and ci[0] > 0  # an error against an added CPU whose CI holds 0 is not a figure
        mix_err = 100 * (mix_pred / measured - 1) if mix_pred is not None and measured > 0 and resolved else None
        eci = chk.get("error_ci_pct")
        per_read = chk.get("per_page_read_us") if chk.get("per_page_resolved", True) and chk else None
        hyb = hybrid(others, e, per_read)
        hyb_err = 100 * (hyb / measured - 1) if hyb is not None and measured > 0 and resolved else None
        print(f"{e['script']:<22} {e['memory']:>6} {e['pages_read_per_txn'] or 0:>9.2f} "
              f"{measured:>9.1f} [{ci[0] if ci else float('nan'):>6.1f}, {ci[1] if ci else float('nan'):>6.1f}] "
              f"{chk['predicted_us_per_txn'] if chk.get('per_page_resolved', True) and chk else float('nan'):>9.1f} "
              f"{_pct(chk.get('error_pct')):>7} "
              f"{f'[{eci[0]:+.0f}, {eci[1]:+.0f}]' if eci else '':>12} "
              f"{mix_pred if mix_pred is not None else float('nan'):>9.1f} {_pct(mix_err):>7} "
              f"{hyb if hyb is not None else float('nan'):>9.1f} {_pct(hyb_err):>7}")
        if hyb_err is not None:
            hybrid_errors.append(abs(hyb_err))
        if chk.get("error_pct") is not None:
            scan_errors.append(abs(chk["error_pct"]))
        if mix_err is not None:
            mix_errors.append(abs(mix_err))
        if chk.get("unresolved"):
            print(f"    not compared: {chk['unresolved']}")
        for m in chk.get("misses") or []:
            print(f"    misses: {m}")
    for name, errs in (("scan-based (scans' read cost, rebuild's write cost)", scan_errors),
                       ("mix-based, leave-one-out (--access random)", mix_errors),
                       ("hybrid: scans' read cost + writes fitted to the other mixes", hybrid_errors)):
        if errs:
            print(f"{name}: median |error| {statistics.median(errs):.0f}%, worst {max(errs):.0f}%, within 15% in "
                  f"{sum(x <= 15 for x in errs)} of {len(errs)}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", default="mariadb", choices=sorted(SCRIPTS))
    p.add_argument("--encryption", default="on", help="the encrypted value (postgres: fscrypt or gocryptfs)")
    p.add_argument("--scripts", default=None)
    p.add_argument("--memory", default="25%,10%")
    p.add_argument("--runs", default="6")
    p.add_argument("--seconds", default="5")
    p.add_argument("--warmup-seconds", default="3")
    p.add_argument("--size", default="48MB")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--from", dest="source", default=None, help="a result file of an earlier run of this bench")
    args = p.parse_args()
    if args.source:
        doc = json.loads(Path(args.source).read_text())
    else:
        out = Path(tempfile.mkdtemp(prefix="estimate-oltp-")) / f"{args.engine}.json"
        doc = measure(args, out)
        print(f"result file: {out}")
    report(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
