"""A sort larger than its buffer (issue 24): the server's temporary files, where encrypt_tmp_files shows.

Every row of the at-rest table is sorted on unindexed columns (MariaDB: ORDER BY name, k, the last row only sent),
with the session's sort buffer set to `sort_buffer_kb`, so the sort spills: sorted runs written to temporary files
in the server's tmpdir, then merged, pass after pass. The operation proves it spilled: the server's count of
temporary files created moved (Created_tmp_files; the pages probe reads it as tmp_files_created). The smaller the
buffer against the data, the more merge passes read and write the temporary files.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import CheckFailedError
from . import repeat
from .base import Operation, Param, Workload
from .capabilities import SortSession


def check_spilled(metrics: dict) -> dict:
    """The sort wrote temporary files (when the engine counts them), else it did not measure what it says."""
    created = metrics.get("tmp_files_created")
    if created is None:
        return {}
    if created <= 0:
        raise CheckFailedError("the sort did not spill: no temporary file was created during it (Created_tmp_files)",
                               hint="use a smaller --param sort_buffer_kb, or a larger --size")
    return {"spilled": 1}


class Sort(Workload):
    name = "sort"
    needs = SortSession
    description = ("every row sorted on unindexed columns with a small sort buffer, so the sort spills to the "
                   "server's temporary files (merge passes): the server CPU of one sort; where encrypt_tmp_files shows")
    params = (Param("sort_buffer_kb", "the session's sort buffer in KB: the smaller against the data, the more merge "
                                      "passes over the temporary files", 32, 32, minimum=16, maximum=1 << 20),
              repeat.param(2))

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        buffer_bytes = int(params["sort_buffer_kb"]) * 1024
        return [Operation("sort", repeat.repeated(repeat.times(session, params),
                                                  lambda: session.sort_all(buffer_bytes)),
                          check=check_spilled)]
