"""The width of the output, and plain aligned columns that keep within it.

A terminal's width is its own; in a pipe or a file it is COLUMNS when that is a width, else 100 (`PIPE_COLUMNS`).
Tables are made to fit it (rich's, through cli/common.console; the plain ones of tls-scan and leak-check through
`fit`); prose lines in a pipe stay whole, so that grep finds them.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

PIPE_COLUMNS = 100
MIN_LAST = 20  # the last cell wraps beside the others while it has this many columns; else on lines of its own


def pipe_columns() -> int:
    """COLUMNS when it says a width (20 to 1000), else PIPE_COLUMNS."""
    text = os.environ.get("COLUMNS", "")
    return int(text) if text.isdigit() and 20 <= int(text) <= 1000 else PIPE_COLUMNS


def output_width() -> int:
    """The width of standard output: a terminal's, else pipe_columns()."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size((PIPE_COLUMNS, 24)).columns
    return pipe_columns()


def fit(rows: list[tuple[str, ...]], width: int, indent: str = "") -> list[str]:
    """Rows of cells as columns two spaces apart, each line within `width`: every cell but the last is padded to its
    column; the last wraps at its spaces, its next lines under its column, or (when the columns before it leave it
    fewer than MIN_LAST) on lines of their own, indented four more. When a row does not fit and the columns before
    the last leave it too little (a long target name), each row's first cell stands on its own line and the other
    cells follow under it, indented four."""
    return [line for lines in _fit_rows(rows, width, indent) for line in lines]


def _fit_rows(rows: list[tuple[str, ...]], width: int, indent: str) -> list[list[str]]:
    """fit's lines, grouped by row."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)] if rows else []
    lead = len(indent) + sum(w + 2 for w in widths)
    if len(widths) > 1 and lead + MIN_LAST > width and any(lead + len(r[-1]) > width for r in rows):
        tails = _fit_rows([r[1:] for r in rows], width, indent + "    ")
        return [[(indent + r[0]).rstrip()] + tail for r, tail in zip(rows, tails)]
    out = []
    for r in rows:
        head = indent + "".join(c.ljust(w) + "  " for c, w in zip(r[:-1], widths))
        last = r[-1]
        if lead + len(last) <= width or not last:
            out.append([(head + last).rstrip()])
        elif width - lead >= MIN_LAST:
            parts = textwrap.wrap(last, width - lead) or [""]
            out.append([head + parts[0]] + [" " * lead + p for p in parts[1:]])
        else:
            out.append([head.rstrip()] + textwrap.wrap(last, max(MIN_LAST + len(indent) + 4, width),
                                                       initial_indent=indent + "    ",
                                                       subsequent_indent=indent + "    "))
    return out
