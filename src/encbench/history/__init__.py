"""History in a real database: what `run`, `tls-scan` and `leak-check` measured, kept over time.

`--store URL` on those commands records one Entry (record.py) in a Store (store.py: a SQLite file by
default, or PostgreSQL for a team); `encbench history` lists the runs and the trend of a figure
(trend.py). The schema is versioned (schema.py). See docs/RESULTS.md, "History store".
"""

from __future__ import annotations

from .record import Entry, leak_entry, run_entry, scan_entry
from .store import Store, StoreURL, default_path, parse_url

__all__ = ["Entry", "Store", "StoreURL", "default_path", "parse_url", "leak_entry", "run_entry", "scan_entry",
           "save"]


def save(url: StoreURL | str | None, entry: Entry) -> int:
    """Open (and migrate) the store, record the entry in one transaction, close; the run's id."""
    with Store.open(url) as store:
        return store.record(entry)
