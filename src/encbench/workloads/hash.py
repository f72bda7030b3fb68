from __future__ import annotations

import time
from pathlib import Path

from ..profiling.profiler import MAX_REPEATS, PROFILE_HZ, PROFILE_SECONDS, Profiler
from .base import Operation, Param, Workload
from .capabilities import InQuerySession


class Hash(Workload):
    name = "hash"
    needs = InQuerySession
    description = ("an aggregate over a hash of every row in k concurrent sessions started together, and the "
                   "same query without the function: rows hashed per second, scaling efficiency, degradation")
    params = (
        Param("hash_rows", "rows each session hashes (the seed used 11M)", 2_000_000, 200_000, minimum=1000),
        Param("profile", "1: record a CPU profile of the server with perf during the warmup runs", 0, 0, minimum=0,
              maximum=1),
        Param("parallel", "1: let the engine use parallel query (PostgreSQL); 0: one session is one CPU", 0, 0,
              minimum=0, maximum=1),
    )

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        k = int(session.variant["sessions"])
        function = session.variant["function"]
        rows = params["hash_rows"]
        ops = []

        def op(name: str, sql: str, profile: bool) -> Operation:
            state: dict = {}

            def before() -> None:
                state["conns"] = session.open_sessions(k, parallel=bool(params["parallel"]))
                target = session.sessions_target(state["conns"])
                session.use_target(target)
                if profile:
                    state["profiler"] = Profiler(scratch, frequency=PROFILE_HZ)
                    state["profiler"].start(target.pids)

            def run() -> dict:
                results, elapsed = session.run_sessions(state["conns"], sql)
                out = {"sessions": k, "rows_hashed": rows * k, "rows_per_s": rows * k / elapsed,
                       "sessions_elapsed_s": elapsed, "results_agree": int(len(set(map(str, results))) == 1)}
                if profile:  # repeated until the profile holds enough samples (one small query: a handful)
                    repeats, t0 = 1, time.perf_counter()
                    while repeats < MAX_REPEATS and time.perf_counter() - t0 < PROFILE_SECONDS:
                        session.run_sessions(state["conns"], sql)
                        repeats += 1
                    out["profile_repeats"] = repeats
                return out

            def after() -> dict:
                out = state["profiler"].stop() if profile else {}
                session.use_target(None)
                session.close_sessions(state.pop("conns"))
                return out

            return Operation(name, run, before, after)

        ops.append(op("hash", session.hash_sql(function, True), False))
        ops.append(op("baseline", session.hash_sql(function, False), False))
        if params["profile"] and params.get("_warmup"):  # perf costs time: never in a measured run
            ops.append(op("profile", session.hash_sql(function, True), True))
        return ops
