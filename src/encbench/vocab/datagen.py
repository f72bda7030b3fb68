"""Deterministic, seeded synthetic rows, the same for every engine.

Table shape (portable SQL types): id (primary key), k (unique, unindexed), grp (indexed,
1000 groups), name (short text), body (100-300 characters of word-like text). About one
row in a thousand has the needle word in its body (for scan-like).
"""

from __future__ import annotations

import random
from typing import Iterator

GENERATOR_VERSION = 1
ROW_BYTES_ESTIMATE = 240  # average stored bytes per row in SQLite, used to size the table
NEEDLE = "wibble"
NEEDLE_RATE = 0.001
MIN_ROWS = 2_000
_LETTERS = "abcdefghijklmnopqrstuvxyz"  # no 'w': the needle cannot appear by chance
_POOL_CHARS = 1 << 20

COLUMNS = ("id", "k", "grp", "name", "body")


def row_count_for(size_bytes: int) -> int:
    return max(MIN_ROWS, size_bytes // ROW_BYTES_ESTIMATE)


def key_of(row_id: int) -> int:
    """k for a row: a bijective scramble of id (odd multiplier mod 2^31), unique and unindexed."""
    return (row_id * 2654435761) % (1 << 31)


def _pool(rng: random.Random) -> str:
    words = []
    total = 0
    while total < _POOL_CHARS:
        w = "".join(rng.choices(_LETTERS, k=rng.randint(2, 9)))
        words.append(w)
        total += len(w) + 1
    return " ".join(words)


def rows(n: int, seed: int) -> Iterator[tuple[int, int, int, str, str]]:
    rng = random.Random(seed)
    pool = _pool(rng)
    limit = len(pool) - 400
    randrange, random_ = rng.randrange, rng.random
    for row_id in range(1, n + 1):
        off = randrange(limit)
        body = pool[off : off + randrange(100, 301)]
        if random_() < NEEDLE_RATE:
            cut = randrange(len(body))
            body = f"{body[:cut]} {NEEDLE} {body[cut:]}"
        noff = randrange(limit)
        yield (row_id, key_of(row_id), randrange(1000), pool[noff : noff + 12], body)
