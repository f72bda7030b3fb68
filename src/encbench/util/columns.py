"""The width of the output, plain aligned columns that keep within it, and prose wrapped to it.

A terminal's width is its own; in a pipe or a file it is COLUMNS when that is a width, else 100 (`PIPE_COLUMNS`).
Tables are made to fit it (rich's, through cli/common.console; the plain ones of tls-scan and leak-check through
`fit`); every other line is wrapped to it by `wrap` (`echo` prints through it), in a terminal and in a pipe alike:
broken at spaces only, never inside a number, a path or a command a user copies.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable

PIPE_COLUMNS = 100
MIN_LAST = 20  # the last cell wraps beside the others while it has this many columns; else on lines of its own


def pipe_columns() -> int:
    """COLUMNS when it says a width (20 to 1000), else PIPE_COLUMNS."""
    text = os.environ.get("COLUMNS", "")
    return int(text) if text.isdigit() and 20 <= int(text) <= 1000 else PIPE_COLUMNS


def output_width(stream=None) -> int:
    """The width of standard output (or of `stream`, e.g. sys.stderr): a terminal's, else pipe_columns()."""
    stream = sys.stdout if stream is None else stream
    if not stream.isatty():
        return pipe_columns()
    if stream is sys.stdout:
        return shutil.get_terminal_size((PIPE_COLUMNS, 24)).columns
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        return pipe_columns()


HANG = "    "  # a wrapped line's next lines: four more than its own indent (a line of its own below it has two)
MARKER = re.compile(r"(?:-|\d+\.) +")  # an item's mark ("- ", "3. "): its wrapped lines go on under its text
GLUE = "\ue000"  # a space that does not break (a private-use character: never in encbench's text)
# what stays on one line: a figure with its bracketed CI ("+12% [+3, +20]", "873.3 ms [647.0 ms, 1.10 s]",
# "elapsed [95% CI]"), a short aside ("(> 0.5)", "(12 runs)"), a `command`
TOGETHER = re.compile(r"(?:[-+]?\d[\d.,]*%? )?(?:[^\s\[\]]+ )?\[[^\[\]\n]{1,40}\]|\([^()\[\]\n]{1,16}\)|`[^`\n]+`")


def wrap(text: str, width: int, keep: Iterable[str] = ()) -> list[str]:
    """A line of prose as lines within `width`: an item's next lines under its text ("  - " -> "    "), any other
    line's four more than its own indent (HANG). Broken at spaces only: a word (a number, a path, a flag) is never
    cut, and one longer than the width stands whole on a line of its own; a figure stays with its bracketed CI, a
    `backticked` command whole, and so does each text of `keep` (a command or a path a user copies: on a line of its
    own when it does not fit beside the rest). A text with newlines is wrapped line by line."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        lead = line[:len(line) - len(body)]
        mark = MARKER.match(body)
        hang = lead + (" " * mark.end() if mark else HANG)
        parts = textwrap.wrap(_glued(body, keep), width, initial_indent=lead, subsequent_indent=hang,
                              break_long_words=False, break_on_hyphens=False)
        out += [p.replace(GLUE, " ") for p in parts] or [line]
    return out


def _glued(text: str, keep: Iterable[str]) -> str:
    """The text with the spaces of what stays together (TOGETHER, each `keep`) made unbreakable (GLUE)."""
    for span in sorted({k for k in keep if k and " " in k}, key=len, reverse=True):
        text = text.replace(span, span.replace(" ", GLUE))
    return TOGETHER.sub(lambda m: m.group(0).replace(" ", GLUE), text)


def echo(text: str, file=None, keep: Iterable[str] = (), flush: bool = False) -> None:
    """print() of prose, wrapped (`wrap`) to the width of where it goes (output_width): standard output, or `file`."""
    stream = sys.stdout if file is None else file
    for line in wrap(text, output_width(stream), keep):
        print(line, file=stream)
    if flush:
        stream.flush()


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
