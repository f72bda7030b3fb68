from __future__ import annotations

import uuid
from pathlib import Path

from ..drivers.client_share import share_extra
from .base import Operation, Param, Workload
from .capabilities import SelectLoadSession


class Roundtrip(Workload):
    name = "roundtrip"
    needs = SelectLoadSession
    description = ("C client connections (variant clients) each sending small primary-key SELECTs for T seconds, "
                   "driven by pgbench -M prepared (PostgreSQL) or one encbench client process each (MariaDB): "
                   "queries/s and latency p50/p95/p99")
    # pgbench -T: every run lasts `seconds`, so what TLS costs shows in queries/s and CPU per query
    fixed_duration = True
    verdict_metrics = ("qps", "cpu_us_per_query", "client_cpu_us_per_query")
    params = (Param("seconds", "duration of each run in whole seconds (pgbench -T)", 3, 1, minimum=1, maximum=3600),
              Param("metered_queries", "--meter instructions: queries per client instead of a duration (fixed work: "
                    "the count per query is then exact; under valgrind a second holds few queries)", 400, 100,
                    maximum=10**6))

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        clients = int(session.variant.get("clients", "1"))
        appname = f"encbench-rt-{uuid.uuid4().hex[:8]}"
        queries = params["metered_queries"] if params.get("_metered") else None

        def before() -> None:
            session.use_target(session.churn_target(appname))

        def run() -> dict:
            return session.select_load(clients=clients, seconds=params["seconds"], appname=appname, scratch=scratch,
                                       queries=queries)

        return [Operation("select-by-pk", run, before, lambda: session.use_target(None),
                          check=lambda metrics: share_extra(metrics, client_cores=clients))]
