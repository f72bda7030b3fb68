"""The words of the metrics a verdict rests on: what `costs +34% throughput` says, for every renderer."""

from __future__ import annotations

import re
from collections.abc import Mapping

# a fixed-work workload's verdict metrics (workloads.base.FIXED_WORK), with their words
VERDICT_METRICS = (("cpu_s", "CPU"), ("client_cpu_s", "client CPU"), ("wall_s", "elapsed"))
VERDICT_WORDS = dict(VERDICT_METRICS)
# the words of the other metrics a workload's verdict may rest on (a fixed-duration run: what it got done)
METRIC_WORDS = {**VERDICT_WORDS, "qps": "throughput", "tps": "throughput", "mb_per_s": "throughput",
                "connections_per_s": "connections/s", "rows_per_s": "rows/s", "latency_p50_ms": "p50 latency",
                "latency_p95_ms": "p95 latency", "latency_p99_ms": "p99 latency",
                "instructions": "instructions", "l1_misses": "L1 misses", "ll_misses": "last-level misses"}
_PER_UNIT = re.compile(r"(client_)?cpu_us_per_(\w+)")
_INSTRUCTIONS_PER = re.compile(r"instructions_per_(\w+)")


def metric_word(metric: str, words: Mapping[str, str] | None = None) -> str:
    """A metric in a verdict's words: the table's own word (engine.metric_words: 'server CPU'), else ours;
    a CPU per unit follows its CPU's word ('server CPU per query')."""
    words = words or {}
    if metric in words:
        return words[metric]
    m = _INSTRUCTIONS_PER.fullmatch(metric)
    if m:
        return f"instructions per {m.group(1)}"
    m = _PER_UNIT.fullmatch(metric)
    if m:
        base = "client_cpu_s" if m.group(1) else "cpu_s"
        return f"{words.get(base, METRIC_WORDS[base])} per {m.group(2)}"
    return METRIC_WORDS.get(metric, metric)
