"""Read and write unit costs fitted at once from an oltp file's mixes (issue 31: `encbench calibrate`).

Every measured oltp run gives its server CPU per transaction y, its physical page reads r and page writes w per
transaction, and whether it ran encrypted. Runs are grouped in cells (the same mix: every variant key but the axis,
e.g. script and memory share). The model, fitted over every run:

    y = a_cell + e x (c_read x r + c_write x w)

a_cell: the cell's plain cost (one intercept per cell, so the plain work of each mix cancels); e: 1 for an encrypted
run. c_read and c_write, the added CPU per page read and per page written, are identified when the cells' encrypted
runs read and write in different proportions (a read-only and a write-heavy mix, at two memory shares). Weighted
least squares: each run weighted by 1 / its group's variance (the mix, encrypted or plain: a write-heavy mix varies
far more than a read-only one). Their 95% CIs: s^2 (X'WX)^-1 (s^2 the weighted residual variance) with Student's t
at n - p degrees of freedom (the runs are independent: each is its own process and connection). A cost whose CI reaches zero is reported as such (the bill says "not resolved").
"""

from __future__ import annotations

import math

import numpy as np

from ..util.tdist import t_ppf
from .summary import baseline_for, table_for

WORKLOAD = "oltp"
METHOD = ("weighted least squares over every run (1 / each mix's variance, encrypted and plain apart): server CPU per "
          "transaction = a plain cost per mix + (encrypted) x (c_read x page reads + c_write x page writes per "
          "transaction); 95% CI from s^2 (X'WX)^-1, Student's t")


def _rows(doc: dict) -> list[tuple[str, bool, float, float, float]]:
    """(cell, encrypted, cpu µs, reads, writes) per measured oltp run, per transaction."""
    table = table_for(doc["engine"], WORKLOAD)
    axis, base = table["axis"], table["axis_baseline"]
    out = []
    for run in doc["runs"]:
        if run.get("warmup") or run["workload"] != WORKLOAD:
            continue
        variant = run["variant"]
        # an encrypted run's cell is its plain baseline's (keys only the encrypted side has, e.g. kdf_iter, drop)
        plain = baseline_for(variant, doc["engine"], WORKLOAD) if variant.get(axis) not in (None, base) else variant
        cell = ",".join(f"{k}={v}" for k, v in sorted((plain or variant).items()) if k != axis)
        for op in run.get("operations", []):
            m, n = op.get("metrics", {}), (op.get("extra") or {}).get("transactions")
            if not n or "cpu_s" not in m or "pages_read" not in m:
                continue
            out.append((cell, variant.get(axis) != base, 1e6 * m["cpu_s"] / n, m["pages_read"] / n,
                        (m.get("pages_written") or 0.0) / n))
    return out


def _weights(rows) -> np.ndarray:
    """1 / the variance of each run's group (its mix, encrypted or plain): a write-heavy mix's CPU per transaction
    varies tens of times more than a read-only one's, and unweighted its noise would drown the read cost."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1]), []).append(r[2])
    var = {g: float(np.var(v, ddof=1)) if len(v) > 1 else 0.0 for g, v in groups.items()}
    known = [v for v in var.values() if v > 0]
    floor = min(known) if known else 1.0  # a group without spread: weighted as the steadiest group seen
    return np.array([1.0 / (var[(r[0], r[1])] if var[(r[0], r[1])] > 0 else floor) for r in rows])


def fit(doc: dict) -> dict | None:
    """The fitted per-page read and write costs (µs) with 95% CIs, or None where the file cannot give them (no
    oltp runs, a single cell, or reads and writes that never vary apart)."""
    rows = _rows(doc)
    cells = sorted({r[0] for r in rows})
    if len(cells) < 2 or not any(r[1] for r in rows) or not any(not r[1] for r in rows):
        return None
    x = np.array([[1.0 if r[0] == c else 0.0 for c in cells] + [r[3] if r[1] else 0.0, r[4] if r[1] else 0.0]
                  for r in rows])
    y = np.array([r[2] for r in rows])
    n, p = x.shape
    if n <= p or np.linalg.matrix_rank(x) < p:
        return None
    w = _weights(rows)
    xw, yw = x * np.sqrt(w)[:, None], y * np.sqrt(w)
    beta, *_ = np.linalg.lstsq(xw, yw, rcond=None)
    resid = yw - xw @ beta
    s2 = float(resid @ resid) / (n - p)
    cov = s2 * np.linalg.inv(xw.T @ xw)
    q = t_ppf(0.975, n - p)
    out = {"method": METHOD, "runs": n, "cells": cells, "df": n - p}
    for name, i in (("read", p - 2), ("write", p - 1)):
        se = math.sqrt(max(float(cov[i, i]), 0.0))
        out[f"{name}_us"] = float(beta[i])
        out[f"{name}_ci_us"] = [float(beta[i]) - q * se, float(beta[i]) + q * se]
    return out
