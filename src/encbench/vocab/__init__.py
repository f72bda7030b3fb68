"""The vocabulary every layer shares (issue 29): variants, what a probe measures, what a session is.

The bottom package: its modules import nothing of encbench's but `errors` and `util`, so any layer
(engines, workloads, probes, lab, analysis, report) may import them without reaching upwards.
"""
