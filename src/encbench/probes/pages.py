from __future__ import annotations

from .base import Metric, Probe, Target, read_proc_kv


def _rchar(target: Target) -> int:
    return sum(read_proc_kv(f"/proc/{pid}/io").get("rchar", 0) for pid in target.pids)


class PagesProbe(Probe):
    """Pages the engine read into (and wrote out of) its page cache.

    An engine that counts its own pages puts a callable returning {"pages_read": n,
    "pages_written": m, ...} in target.extra["counters"] (SQLite: sqlite3_db_status;
    MariaDB: InnoDB's status counters, with pages decrypted/encrypted and buffer-pool misses). Otherwise,
    for an engine that reads one page per read() call, pages read = bytes read by
    syscalls / page size (which also counts any other file the operation reads).
    """

    name = "pages"
    description = "database pages read into / written from the engine's cache (engine counters)"
    metrics = (
        Metric("pages_read", "pages", "pages read", resolution=1),
        Metric("pages_written", "pages", "pages written", resolution=1),
        Metric("pages_decrypted", "pages", "pages decrypted", resolution=1),
        Metric("pages_encrypted", "pages", "pages encrypted", resolution=1),
        Metric("pool_misses", "pages", "buffer pool misses", resolution=1),
        Metric("engine_read_bytes", "bytes", "bytes read by the engine", resolution=1),
        Metric("engine_written_bytes", "bytes", "bytes written by the engine", resolution=1),
        # what the server's encryption settings act on besides pages (MariaDB: its status counters)
        Metric("redo_bytes_written", "bytes", "redo log bytes written", resolution=1),
        Metric("binlog_bytes_written", "bytes", "binary log bytes written", resolution=1),
        Metric("tmp_files_created", "files", "temporary files created", resolution=1),
        Metric("sort_merge_passes", "passes", "sort merge passes", resolution=1),
    )

    def _count(self, target: Target) -> dict[str, float]:
        counters = target.extra.get("counters")
        if counters is not None:
            return counters()
        if target.page_size:
            return {"pages_read": _rchar(target) / target.page_size}
        return {}

    def start(self, target: Target) -> None:
        self._c0 = self._count(target)

    def stop(self, target: Target) -> dict[str, float]:
        c = self._count(target)
        return {k: round(v - self._c0[k], 1) for k, v in c.items() if k in self._c0}
