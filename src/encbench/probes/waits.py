from __future__ import annotations

import threading
import time
from collections import Counter

from .base import Metric, Probe, Target

DEFAULT_INTERVAL_S = 0.1
ON_CPU = "CPU"  # an active backend with no wait event: running (or runnable)


def metric_name(event: str) -> str:
    return "wait_share_" + event.replace("/", "_")


class WaitEventProbe(Probe):
    """Samples what the engine's backends are waiting on, from a thread with its own connection.

    The engine supplies target.extra["wait_sampler"]: a factory returning an object with
    sample() -> list of "Type/Event" strings (or "CPU") for the backends of the
    operation, and close(). Each event's share of the samples is reported. The thread
    runs beside the workload's client, whose CPU is measured on its own thread only.
    """

    name = "waits"
    description = f"wait-event sampler: share of samples per wait event (every {DEFAULT_INTERVAL_S * 1000:.0f} ms)"
    metrics = (
        Metric("wait_samples", "count", "wait samples", resolution=1),
        Metric("wait_sampler_cpu_s", "s", "sampler thread CPU"),
    )

    def start(self, target: Target) -> None:
        self._thread = None
        factory = target.extra.get("wait_sampler")
        if factory is None:
            return
        self._interval = float(target.extra.get("wait_interval_s", DEFAULT_INTERVAL_S))
        self._sampler = factory()
        self._counts: Counter = Counter()
        self._samples = 0
        self._cpu = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="encbench-wait-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        t0 = time.thread_time()
        self._error = None
        try:
            # the first sample one interval in: never before the operation has started
            while not self._stop.wait(self._interval):
                events = self._sampler.sample()
                if events:
                    self._samples += 1
                    for e in events:
                        self._counts[e] += 1 / len(events)
        except Exception as e:  # reported by stop(): the worker records it as a probe error
            self._error = e
        finally:
            self._cpu = time.thread_time() - t0

    def stop(self, target: Target) -> dict[str, float]:
        if self._thread is None:
            return {}
        self._stop.set()
        self._thread.join()
        self._sampler.close()
        if self._error is not None:
            raise RuntimeError(f"wait sampler failed after {self._samples} samples: {self._error}")
        out = {"wait_samples": self._samples, "wait_sampler_cpu_s": self._cpu}
        if self._samples:
            out.update({metric_name(e): c / self._samples for e, c in self._counts.items()})
        return out
