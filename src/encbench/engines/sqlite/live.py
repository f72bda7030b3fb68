"""`encbench calibrate` on SQLite/SQLCipher: the bill's terms that never apply to an embedded engine, and the ones
its designed mixes do not fit (analysis/calibration.py). SQLite has no server to sample: `estimate` takes its rates
with --rate."""

from __future__ import annotations

_EMBEDDED = "an embedded engine: no connection, no TLS"
ABSENT = {
    "log_bytes": "SQLCipher encrypts the WAL as pages (each frame one page): counted as page writes",
    "tls_handshakes": _EMBEDDED,
    "tls_resumptions": _EMBEDDED,
    "tls_bytes": _EMBEDDED,
    "tls_records_in": _EMBEDDED,
    "tls_records_out": _EMBEDDED,
}
NOT_FITTED = {"temp_bytes": "no calibrated mix spills to temporary files (encbench's SQLite mixes sort in memory)"}
