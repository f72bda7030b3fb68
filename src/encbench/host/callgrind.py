"""Reading callgrind's output files: the totals of a dump and each function's own (exclusive) cost.

`--meter instructions` runs the measured code under valgrind's callgrind tool; every measured
operation ends in a dump (a "part" file: `<out>.<N>`, or `<out>` at the process's end) whose
`totals:` line is the operation's count and whose cost lines say which function spent it. The
file format (valgrind.org/docs/manual/cl-format.html) in the parts read here:

    events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw   the columns of every cost line
    totals: 169387490 ...                            the sum over the dump
    ob=(2) /usr/lib/x86_64-linux-gnu/libcrypto.so.3  object, file and function names, each given in
    fl=(7) ???                                       full once with an id, then by the id alone
    fn=(15) sha512_block_data_order_avx2             (--compress-strings, the default)
    0 108000                                         a cost line: position, costs (missing costs are 0)
    cob=(3) ... / cfi=(5) ... / cfn=(9) ...          the callee of the next calls= line
    calls=2 0                                        a call: the cost line after it is the callee's
    0 4000                                           inclusive cost, never the caller's own

A function's own cost is the sum of its cost lines that do not follow `calls=`; `callgrind_annotate
--inclusive=no` prints the same figures (tests/unit/profiling/test_callgrind.py checks one file both ways).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

INSTRUCTIONS = "Ir"
OTHER = "(other)"  # Dump.top's name for an object's functions left out of the list
# the cache simulation's events (--cache-sim=yes) and the names encbench stores them under
CACHE_EVENTS = {"I1mr": "l1i_misses", "D1mr": "l1d_read_misses", "D1mw": "l1d_write_misses",
                "ILmr": "ll_instr_misses", "DLmr": "ll_read_misses", "DLmw": "ll_write_misses"}
_NAMED = re.compile(r"^\((\d+)\)(?:\s(.*))?$")
_PART = re.compile(r"\.(\d+)$")


class FormatError(ValueError):
    """Not a callgrind output file, or one cut short (a dump still being written)."""


@dataclass
class Dump:
    """One dump of one process: its events, totals and the functions' own costs."""

    path: str
    pid: int | None
    part: int | None
    trigger: str
    events: list[str]
    totals: dict[str, int]
    functions: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # (object, function) -> costs

    @property
    def instructions(self) -> int:
        return self.totals.get(INSTRUCTIONS, 0)

    def top(self, limit: int = 200, min_share: float = 0.0001) -> list[list]:
        """[object, function, instructions] of the functions with the most own instructions: at most `limit`,
        each at least `min_share` of the dump's total; what is left out is one [object, "(other)", n] entry per
        object (so that it still has a library), largest first."""
        total = self.instructions
        ranked = sorted(((o, f, c.get(INSTRUCTIONS, 0)) for (o, f), c in self.functions.items()),
                        key=lambda x: -x[2])
        kept = [[o, f, n] for o, f, n in ranked[:limit] if n > 0 and n >= min_share * total]
        chosen = {(o, f) for o, f, _ in kept}
        rest: dict[str, int] = {}
        for o, f, n in ranked:
            if (o, f) not in chosen and n:
                rest[o] = rest.get(o, 0) + n
        return kept + [[o, OTHER, n] for o, n in sorted(rest.items(), key=lambda kv: -kv[1]) if n > 0]


def _name(value: str, table: dict[str, str]) -> str:
    """A compressed name: '(12) name' defines id 12, '(12)' refers to it; an uncompressed name is itself."""
    m = _NAMED.match(value.strip())
    if not m:
        return value.strip()
    ident, text = m.group(1), m.group(2)
    if text is not None:
        table[ident] = text
        return text
    return table.get(ident, f"({ident})")


def parse(text: str, path: str = "") -> Dump:
    """One callgrind output file's text -> Dump (FormatError when it is not one, or has no totals yet)."""
    events: list[str] = []
    header: dict[str, str] = {}
    names = {"ob": {}, "fl": {}, "fn": {}}
    obj = fn = ""
    functions: dict[tuple[str, str], list[int]] = {}
    current: list[int] | None = None
    after_call = False
    totals_line = summary_line = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            if after_call:  # the callee's inclusive cost: not the caller's own
                after_call = False
                continue
            if current is None:
                continue
            parts = line.split()
            for i, v in enumerate(parts[1:1 + len(events)]):
                current[i] += int(v)
            continue
        key, sep, value = line.partition("=")
        if sep and key in ("ob", "cob", "fl", "fi", "fe", "cfi", "cfl", "fn", "cfn"):
            table = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn"}.get(key, "fl")
            name = _name(value, names[table])
            if key == "ob":
                obj = name
            elif key == "fn":
                fn = name
                current = functions.setdefault((obj, fn), [0] * len(events))
            continue
        if sep and key in ("calls", "jump", "jcnd"):
            after_call = True  # the line after a call is the callee's inclusive cost (after a jump: its source)
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if key == "events":
            events = value.split()
        elif key == "totals":
            totals_line = value
        elif key == "summary":
            summary_line = value
        elif key in ("pid", "part", "cmd") or key == "desc":
            if key == "desc" and value.strip().startswith("Trigger:"):
                header["trigger"] = value.strip()[len("Trigger:"):].strip()
            elif key != "desc":
                header[key] = value.strip()
    if not events:
        raise FormatError(f"{path or 'the file'} is not a callgrind output file (no events line)")
    line = totals_line if totals_line is not None else summary_line
    if line is None:
        raise FormatError(f"{path or 'the file'} has no totals (a dump cut short?)")
    totals = {e: int(v) for e, v in zip(events, line.split())}
    totals.update({e: totals.get(e, 0) for e in events})
    return Dump(path=path, pid=int(header["pid"]) if header.get("pid", "").isdigit() else None,
                part=int(header["part"]) if header.get("part", "").isdigit() else None,
                trigger=header.get("trigger", ""), events=events, totals=totals,
                functions={k: dict(zip(events, v)) for k, v in functions.items() if any(v)})


def read(path: str | Path) -> Dump:
    p = Path(path)
    return parse(p.read_text(errors="replace"), str(p))


def parts(directory: str | Path, pid: int, prefix: str = "cg") -> list[Path]:
    """The numbered dumps of a process (`<prefix>.<pid>.<N>`), in part order; the final one (`<prefix>.<pid>`,
    written at exit) is not among them."""
    found = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    stem = f"{prefix}.{pid}."
    for name in names:
        if name.startswith(stem):
            m = _PART.search(name)
            if m and name == stem + m.group(1):
                found.append((int(m.group(1)), Path(directory) / name))
    return [p for _, p in sorted(found)]


def final(directory: str | Path, pid: int, prefix: str = "cg") -> Path:
    """The dump a process writes when it exits."""
    return Path(directory) / f"{prefix}.{pid}"


def object_name(path: str) -> str:
    """'/usr/lib/x86_64-linux-gnu/libcrypto.so.3' -> 'libcrypto.so.3' (what reports show)."""
    return os.path.basename(path) if path else ""
