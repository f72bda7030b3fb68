"""What the server engines' column sessions share (the in-column lab, workloads/column.py): the per-worker table,
the key from the setup, the searchable methods, and the raw reference of every method's cipher."""

from __future__ import annotations

import os

from ..workloads import column as column_lab
from ..host import rawcolumn


# the raw reference (host/rawcolumn.CODECS) of each engine's in-database method, as its SQL calls it
# (engines/postgres/column.py, engines/mariadb/column.py: the unit tests check the SQL still says so)
IN_DATABASE_CIPHERS = {
    "pg-pgp": "openpgp-aes256-s2k",  # pgp_sym_encrypt_bytea(v, hex password, 'cipher-algo=aes256'), other defaults
    "pg-aes": "aes-256-cbc-pkcs7",  # iv || encrypt_iv(v, 32-byte key, gen_random_bytes(16), 'aes-cbc/pad:pkcs')
    "maria-aes": "aes-128-ecb-pkcs7",  # AES_ENCRYPT(v, 16-byte key): MariaDB 10.11's only mode
}


def cipher_of(method: str) -> str | None:
    """The raw reference a column method's per-row cost is set beside (None: `none`, or a method without one)."""
    client = column_lab.CLIENT_METHODS.get(method)
    return (client.algorithm or None) if client else IN_DATABASE_CIPHERS.get(method)


def raw_reference(setup: dict) -> dict:
    """Every method's cipher on one value (host/rawcolumn): the floor of its per-row cost, keyed by reference name,
    each naming the methods it stands for."""
    col = setup.get("column")
    if not col:
        return {}

    methods: dict[str, list[str]] = {}
    for m in col["methods"]:
        if cipher_of(m):
            methods.setdefault(cipher_of(m), []).append(m)
    refs = rawcolumn.reference(list(methods), col["value_bytes"])
    return {"raw_column_cipher": {a: dict(r, methods=methods[a]) for a, r in refs.items()}} if methods else {}


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
