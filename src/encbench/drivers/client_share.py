"""Is the client the bottleneck? The client's CPU share of an in-transit operation.

client_share = client CPU / elapsed wall time of the operation (the worker's calling thread
plus its load drivers: pgbench, the native storm driver, the select drivers), as the hash
sweep reports its client share. A client that is busy nearly all the time it waits for the
server is the one setting the pace: what is timed is then the client, not the server.

SATURATED_SHARE = 0.90: the client is saturated when its CPU reaches 90% of the wall time
(one core's worth). Every in-transit operation stores `client_share` and `client_saturated`
(1 or 0) in its extra values; a comparison where a run on either side is saturated gets no
verdict (analysis.row_verdict says so, with the shares).

With C clients (clients > 1) the share can exceed 1 (several cores): the rule is per core
of client, so the limit is SATURATED_SHARE x clients.
"""

from __future__ import annotations

SATURATED_SHARE = 0.90


def share(metrics: dict) -> float | None:
    """client CPU / wall of one operation; None when either was not measured."""
    cpu, wall = metrics.get("client_cpu_s"), metrics.get("wall_s")
    if cpu is None or not wall or wall <= 0:
        return None
    return cpu / wall


def share_extra(metrics: dict, *, client_cores: int = 1) -> dict:
    """What an in-transit operation stores: client_share, and client_saturated (1/0) against the limit."""
    s = share(metrics)
    if s is None:
        return {}
    return {"client_share": s, "client_saturated": int(s >= SATURATED_SHARE * max(1, client_cores))}


def saturated_runs(values: list[float] | None) -> int:
    """How many runs of a group were flagged client_saturated."""
    return sum(1 for v in values or [] if v)


def withheld_reason(base: dict, cont: dict) -> str | None:
    """Why a comparison gets no verdict (a client saturated on either side), else None.

    base, cont: the metric -> per-run values of the two compared groups.
    """
    parts = []
    for side, group in (("baseline", base), ("contender", cont)):
        n = saturated_runs(group.get("client_saturated"))
        if n:
            top = max(group.get("client_share") or [0.0])
            parts.append(f"{side} {n} of {len(group['client_saturated'])} runs (client CPU up to {top:.0%} of wall)")
    if not parts:
        return None
    return (f"no verdict: the client is saturated (client CPU >= {SATURATED_SHARE:.0%} of wall) in "
            + "; ".join(parts) + ": the client, not the server, set the pace")


def notes(groups: dict) -> list[str]:
    """One plain line: each in-transit operation's highest client share, and whether the client set the pace.

    groups: analysis.collect's (workload, operation, variant) -> metric -> per-run values.
    """
    top: dict[tuple[str, str], float] = {}
    busy: list[str] = []
    for (wl, op, vl), metrics in groups.items():
        shares = metrics.get("client_share")
        if not shares:
            continue
        top[(wl, op)] = max(top.get((wl, op), 0.0), max(shares))
        if saturated_runs(metrics.get("client_saturated")):
            busy.append(f"{wl}/{op} {vl}")
    if not top:
        return []
    shares_text = ", ".join(f"{wl}/{op} {s:.0%}" for (wl, op), s in sorted(top.items()))
    if busy:
        return [f"the client was saturated (client CPU >= {SATURATED_SHARE:.0%} of wall) in {', '.join(sorted(busy))}: "
                f"those comparisons get no verdict; highest client share per operation: {shares_text}"]
    return [f"the client is not the bottleneck: its CPU is below {SATURATED_SHARE:.0%} of wall in every run "
            f"(highest client share per operation: {shares_text})"]
