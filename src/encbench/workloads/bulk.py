from __future__ import annotations

import time
from pathlib import Path

from ..drivers.client_share import share_extra
from .base import Operation, Param, Workload
from .capabilities import StreamSession


class Bulk(Workload):
    name = "bulk"
    needs = StreamSession
    description = ("one large result streamed to the client (~1 KB rows; PostgreSQL: COPY ... TO STDOUT, "
                   "MariaDB: an unbuffered SELECT): MB/s")
    params = (Param("rows", "rows of ~1 KB in the streamed table", 200_000, 20_000),)

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        def copy_out() -> dict:
            t0 = time.perf_counter()
            out = session.stream_out()
            out["mb_per_s"] = out["bytes_received"] / (time.perf_counter() - t0) / 1e6
            return out

        return [Operation("copy-out", copy_out, check=share_extra)]
