"""What the server engines' column sessions share (the in-column lab, workloads/column.py): the per-worker table,
the key from the setup, the searchable methods, and the raw reference of the client methods' ciphers."""

from __future__ import annotations

import os

from ..workloads import column as column_lab


def raw_reference(setup: dict) -> dict:
    """The client methods' AEADs on one value (host/rawcolumn): the floor of their per-row cost."""
    col = setup.get("column")
    if not col:
        return {}
    from ..host import rawcolumn

    algorithms = [column_lab.CLIENT_METHODS[m].algorithm for m in col["methods"]
                  if m in column_lab.CLIENT_METHODS and column_lab.CLIENT_METHODS[m].algorithm]
    return {"raw_column_cipher": rawcolumn.reference(algorithms, col["value_bytes"])} if algorithms else {}


class ServerColumn:
    """The shared half of a server session's ColumnSession (self.schema, self.setup): a table of its own per worker;
    `searchable`: the engine's in-database methods, True when equal values encrypt alike (an index serves lookups)."""

    searchable: dict[str, bool] = {}
    _col_method = ""

    @property
    def _col_table(self) -> str:
        return f"{self.schema}.col_{os.getpid()}"

    def column_key(self) -> bytes:
        return bytes.fromhex(self.setup.get("_column_key", ""))

    def column_methods(self) -> dict[str, bool]:
        return dict(self.searchable)
