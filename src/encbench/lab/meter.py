"""`--meter`: what a run measures its operations with. `time` (the default): clocks and CPU time, as ever;
`instructions`: valgrind's callgrind counts the instructions each operation executes (probes/instructions),
exactly and the same from one process to the next, so that a 1% change shows on a noisy machine, at the
price of running 20-50x slower on a simulated CPU that lacks some of this CPU's instructions (the CPU-model
gap, host/cpugap). The clocks and CPU times are still recorded beside the count; under valgrind they
describe the simulation, not this CPU, and no verdict rests on them.

What can be metered is the engine's to say (Engine.metered, metered_workloads): an engine running in the
worker (SQLite) is counted in a worker under callgrind (lab/meterfork); a server engine's private server
is started under callgrind. A server encbench did not start (--dsn) is never run under valgrind.
"""

from __future__ import annotations

import re

from ..errors import BadValueError, RunFailedError, UsageError
from ..host import valgrind
from ..engines import ENGINES

TIME, INSTRUCTIONS = "time", "instructions"
# probes of the whole machine (every process's context switches, the kernel workers' CPU, the server's wait
# events sampled by a second connection): under valgrind they describe the simulation, and they cost it
# seconds of simulated Python or a second server process; a metered run leaves them out unless --probe names them
UNMETERED_PROBES = ("sysctx", "kworkers", "waits")
METERS = (TIME, INSTRUCTIONS)
WORKER, SERVER = "worker", "server"  # Engine.metered: where the engine's instructions are counted
_PER_UNIT = re.compile(r"cpu_us_per_(\w+)")


def check(meter: str, engine, workloads: list, options: dict, probes: list[str], params: list[str],
          adaptive: bool = False) -> None:
    """Refuse, in one line, what cannot be metered: before anything is created."""
    if meter not in METERS:
        raise UsageError(f"--meter {meter!r} is not one of {', '.join(METERS)}")
    if meter == TIME:
        if "instructions" in probes:
            raise UsageError("the instructions probe counts with valgrind: use --meter instructions",
                             hint="drop --probe instructions, or add --meter instructions")
        return
    if options.get("dsn"):
        raise BadValueError("--meter instructions runs the server under valgrind, and encbench does not run other "
                            "people's servers under valgrind: not with --dsn",
                            hint="drop --dsn to let encbench start a private server, or use --meter time")
    if not engine.metered:
        raise BadValueError(f"engine {engine.name} cannot be metered in instructions",
                            hint=f"engines that can: {', '.join(metered_engines())}")
    refused = [wl.name for wl in workloads if wl.name not in engine.metered_workloads]
    if refused:
        why = f": {engine.meter_refusal}" if engine.meter_refusal else ""
        raise BadValueError(f"--meter instructions cannot count {', '.join(refused)} on {engine.name}{why}",
                            hint=f"workloads it can: {', '.join(engine.metered_workloads)}")
    if adaptive:
        raise BadValueError("--precision, --max-time and --budget add rounds until the elapsed and CPU intervals "
                            "narrow, and under valgrind those measure the simulation; a count is as exact after "
                            "--runs runs", hint="drop --precision/--max-time/--budget, or use --meter time")
    if any(p.partition("=")[0].strip() == "profile" for p in params):
        raise BadValueError("--profile samples with perf, which cannot sample a process under valgrind",
                            hint="drop --profile: --meter instructions says where the instructions go itself")

    if not valgrind.supported_machine():
        raise BadValueError("--meter instructions talks to valgrind through x86-64 instructions: not on this CPU",
                            hint="use --meter time")
    valgrind.find()  # exit 10 with the apt-get line when it is missing


def default_probes(meter: str, probes: list[str]) -> list[str]:
    return [p for p in probes if meter == TIME or p not in UNMETERED_PROBES]


def metered_engines() -> list[str]:
    return [name for name, e in ENGINES.items() if e.metered]


def verdict_metrics(workload) -> tuple[str, ...]:
    """A workload's verdict metrics in instructions: fixed work, its instructions; a fixed-duration workload (its
    count grows with the time it runs), its instructions per unit of what it got done (per query)."""
    units = [m.group(1) for metric in workload.verdict_metrics if (m := _PER_UNIT.fullmatch(metric))]
    if workload.fixed_duration and units:
        return tuple(f"instructions_per_{u}" for u in units)
    return ("instructions",)


OPEN_VERDICT = ("instructions",)
# what callgrind counts (probes/instructions): the same work gives the same count, so a verdict on them needs only
# the runs that show it repeats (analysis/stats.exact_contrast); a count per unit of a fixed-duration run
# (instructions_per_query) repeats only when the run's fixed costs are small: its runs' spread decides
_COUNTED = ("instructions", "l1_misses", "ll_misses", "l1i_misses", "l1d_read_misses", "l1d_write_misses",
            "ll_instr_misses", "ll_read_misses", "ll_write_misses")


def is_count(metric: str) -> bool:
    """Is this metric an exact count (instructions, cache misses, instructions per unit), not a timed figure?"""
    return metric in _COUNTED or metric.startswith("instructions_per_")
TIMES_NOTE = ("--meter instructions: every time and CPU time in this file is valgrind's (its simulated CPU runs "
              "20-50x slower than this one): recorded, never judged; the verdicts rest on instruction counts")


# Under the meter a count needs no repetition and no length to be exact, and valgrind is 20-50x slower: these
# settings (unless --param names them) keep a run's size what its count needs (bench/meter_speed.py)
METER_PARAMS = {"repeat": 1, "messages": 50_000, "connections": 30}
METER_QUICK_PARAMS = {"repeat": 1, "messages": 5_000, "connections": 10}


def params(meter: str, resolved: dict[str, dict], given: list[str], quick: bool = False) -> dict[str, dict]:
    """The workloads' settings under the meter: METER_PARAMS (--quick: METER_QUICK_PARAMS) where --param is silent."""
    if meter != INSTRUCTIONS:
        return resolved
    named = {p.partition("=")[0].strip() for p in given}
    table = METER_QUICK_PARAMS if quick else METER_PARAMS
    return {wl: {k: (table[k] if k in table and k not in named else v) for k, v in p.items()}
            for wl, p in resolved.items()}


def is_metered(doc: dict) -> bool:
    """Was this result file's run counted in instructions?"""
    return ((doc.get("meter") or {}).get("kind") or (doc.get("config") or {}).get("meter")) == INSTRUCTIONS


def facts(cache_sim: bool) -> dict:
    """What a metered result file records about the meter: the tool, and the CPU it simulates beside this one
    (the features a crypto library picks its code by: host/valgrind.FEATURES)."""
    host = valgrind.cpu_features()
    simulated = valgrind.simulated_cpu_features()
    return {"kind": INSTRUCTIONS, "tool": "callgrind", "valgrind": valgrind.version(), "cache_sim": cache_sim,
            "host_cpu_features": host, "simulated_cpu_features": simulated,
            "missing_cpu_features": [f for f in host if simulated is not None and f not in simulated]}


def check_counted(record: dict, where: str) -> None:
    """A metered run without its count is no measurement: every operation (and a counted open) must have one."""
    for op in record.get("operations", []):
        if "instructions" not in (op.get("metrics") or {}):
            why = (op.get("probe_errors") or {}).get("instructions", "no count")
            raise RunFailedError(f"{where}: {op['operation']} has no instruction count: {why}")
