from __future__ import annotations

import os
from pathlib import Path

import zstandard

from .base import Operation, Workload
from .capabilities import BackupSession

ZSTD_LEVEL = 3


def _compress(src: Path, dest: Path) -> None:
    cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    with open(src, "rb") as fin, open(dest, "wb") as fout:
        cctx.copy_stream(fin, fout)
        fout.flush()
        os.fsync(fout.fileno())


class Backup(Workload):
    name = "backup"
    needs = BackupSession
    description = ("online backup to a new file, plain and zstd-compressed (SQLite: the backup API; MariaDB: "
                   "mariadb-backup --stream of the table); an encrypted source must give an encrypted backup")

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        ops = []
        for compress in (False, True):
            dest = scratch / f"backup-{'zstd' if compress else 'plain'}.db"
            state: dict = {}

            def before(dest=dest, state=state) -> None:
                state["handle"] = session.prepare_backup(dest)

            def run(dest=dest, state=state, compress=compress) -> dict:
                session.run_backup(state.pop("handle"))
                out = dest
                if compress:
                    out = dest.with_suffix(".db.zst")
                    _compress(dest, out)
                return {"output_bytes": out.stat().st_size, "backup_bytes": dest.stat().st_size}

            def after(dest=dest) -> dict:
                try:
                    return session.check_backup(dest)
                finally:
                    for p in (dest, dest.with_suffix(".db.zst")):
                        p.unlink(missing_ok=True)

            ops.append(Operation("to-file+zstd" if compress else "to-file", run, before, after))
        return ops
