from __future__ import annotations

import time

from .base import Metric, Probe, Target


class WallProbe(Probe):
    name = "wall"
    rank = 2
    description = "elapsed (wall-clock) time of the operation, monotonic clock"
    metrics = (Metric("wall_s", "s", "elapsed", resolution=time.get_clock_info("perf_counter").resolution),)

    def start(self, target: Target) -> None:
        self._t0 = time.perf_counter()

    def stop(self, target: Target) -> dict[str, float]:
        return {"wall_s": time.perf_counter() - self._t0}
