"""Flame graphs and CPU shares from `perf script` output, stdlib only.

Feed it the text printed by `perf script` for a `perf record -g` recording:
parse it into samples, fold the stacks (Brendan Gregg's format), draw a
standalone SVG flame graph, and work out where the time went (which
functions, which shared objects, how much in libcrypto, how much in locks).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterable, Literal

UNKNOWN = "[unknown]"
LIBCRYPTO_PATTERN = r"libcrypto"
LOCK_PATTERN = r"pthread_rwlock|pthread_mutex|futex|__lll_lock|LWLock|spin_lock|s_lock"

By = Literal["sym", "dso"]


@dataclass(frozen=True)
class Frame:
    sym: str
    dso: str


@dataclass
class Sample:
    """One sample; frames are root first (outermost caller first, leaf last)."""

    comm: str
    pid: int
    tid: int
    frames: list[Frame]
    period: int = 1


# --- parsing -----------------------------------------------------------------------------

# comm  pid[/tid]  [cpu]  secs.usecs:  [period]  event:  [rest]
# comm may contain spaces (and is right-aligned with leading blanks when there is no
# callchain); the event name itself may contain colons (cpu-clock:pppH, sched:sched_switch).
_HEADER = re.compile(
    r"^\s*(?P<comm>\S(?:.*?\S)?)\s+"
    r"(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?"
    r"(?P<time>\d+\.\d+):\s*"
    r"(?:(?P<period>\d+)\s+)?"
    r"(?P<event>\S+):(?=\s|$)"
    r"(?P<rest>.*)$"
)
_STACK_ADDR = re.compile(r"(?P<addr>[0-9a-fA-F]+)(?:\s+(?P<tail>.*))?$")  # on a stripped line
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")


def _split_dso(tail: str) -> tuple[str, str]:
    """Split 'sym+0x1a (dso)' into ('sym+0x1a', 'dso'); the dso is the last balanced (...)."""
    if not tail.endswith(")"):
        return tail, ""
    depth = 0
    for i in range(len(tail) - 1, -1, -1):
        c = tail[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                # a dso group is separated from the symbol by whitespace (or is alone)
                if i == 0 or tail[i - 1].isspace():
                    return tail[:i].rstrip(), tail[i + 1 : -1]
                return tail, ""
    return tail, ""


def _parse_frame(line: str, need_dso: bool = False) -> Frame | None:
    """One stack line ('<hex addr> sym+0x1a (dso)') as a Frame, or None."""
    m = _STACK_ADDR.match(line.strip())
    if not m:
        return None
    sym, dso = _split_dso(m.group("tail") or "")
    if need_dso and not dso:
        return None
    sym = _OFFSET.sub("", sym).strip()
    return Frame(sym or UNKNOWN, dso.strip() or UNKNOWN)


def _finish(header: dict | None, leaf_first: list[Frame], out: list[Sample]) -> None:
    if header is None:
        return
    inline = header.pop("inline")
    frames = list(reversed(leaf_first)) or ([inline] if inline else [Frame(UNKNOWN, UNKNOWN)])
    out.append(Sample(frames=frames, **header))


def parse_perf_script(text: str) -> list[Sample]:
    """Samples from default `perf script` output; unparseable lines are skipped."""
    if not isinstance(text, str):
        return []
    samples: list[Sample] = []
    header: dict | None = None
    frames: list[Frame] = []
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if not line.strip():
            _finish(header, frames, samples)
            header, frames = None, []
            continue
        if line.lstrip().startswith("#"):
            continue
        # Stack lines are tab-indented; try them first so a symbol never passes as a header.
        if header is not None and line[:1] == "\t":
            frame = _parse_frame(line)
            if frame is not None:
                frames.append(frame)
            continue
        m = _HEADER.match(line)
        if m:
            _finish(header, frames, samples)
            pid = int(m.group("pid"))
            tid = int(m.group("tid")) if m.group("tid") is not None else pid
            period = int(m.group("period")) if m.group("period") else 0
            header = {
                "comm": m.group("comm").strip(),
                "pid": pid,
                "tid": tid,
                "period": period if period > 0 else 1,
                # Without -g, perf prints the sampled ip/sym/dso on the header line itself;
                # used only when no stack lines follow.
                "inline": _parse_frame(m.group("rest"), need_dso=True),
            }
            frames = []
            continue
        if header is not None:
            frame = _parse_frame(line, need_dso=True)
            if frame is not None:
                frames.append(frame)
    _finish(header, frames, samples)
    return samples


# --- folding and shares ------------------------------------------------------------------


def _clean(name: str) -> str:
    return name.replace(";", ":").replace("\n", " ").replace("\r", " ")


def _frame_text(f: Frame, dso_for_unknown: bool) -> str:
    if dso_for_unknown and f.sym == UNKNOWN and f.dso != UNKNOWN:
        return _clean("[" + f.dso.rstrip("/").rsplit("/", 1)[-1] + "]")
    return _clean(f.sym)


def fold(
    samples: Iterable[Sample], *, with_comm: bool = True, dso_for_unknown: bool = False
) -> dict[str, int]:
    """Folded stacks: 'comm;root;...;leaf' -> summed weight (period).

    With dso_for_unknown, an '[unknown]' symbol in a known object is shown as
    '[libcrypto.so.3]' (the object's file name) instead.
    """
    out: dict[str, int] = {}
    for s in samples:
        parts = [_frame_text(f, dso_for_unknown) for f in s.frames]
        if with_comm:
            parts.insert(0, _clean(s.comm))
        key = ";".join(parts)
        out[key] = out.get(key, 0) + s.period
    return out


def _attr(by: str):
    if by not in ("sym", "dso"):
        raise ValueError(f"by must be 'sym' or 'dso', not {by!r}")
    return (lambda f: f.sym) if by == "sym" else (lambda f: f.dso)


def _leaf_weights(samples: Iterable[Sample], by: By) -> tuple[dict[str, int], int]:
    key = _attr(by)
    weights: dict[str, int] = {}
    total = 0
    for s in samples:
        leaf = s.frames[-1] if s.frames else Frame(UNKNOWN, UNKNOWN)
        name = key(leaf)
        weights[name] = weights.get(name, 0) + s.period
        total += s.period
    return weights, total


def self_shares(samples: Iterable[Sample], by: By = "sym", top: int = 15) -> list[tuple[str, float]]:
    """Share (0..1) of total weight whose leaf frame has each sym/dso, largest first."""
    weights, total = _leaf_weights(samples, by)
    if total <= 0:
        return []
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(name, w / total) for name, w in ranked[: max(top, 0)]]


def inclusive_share(samples: Iterable[Sample], pattern: str, by: By = "sym") -> float:
    """Share of weight whose stack has any frame whose sym/dso matches regex `pattern`."""
    key = _attr(by)
    rx = re.compile(pattern)
    hit = total = 0
    for s in samples:
        total += s.period
        if any(rx.search(key(f)) for f in s.frames):
            hit += s.period
    return hit / total if total > 0 else 0.0


def _named(sample: Sample) -> Sample:
    """The sample with an unsymbolized leaf named after its object: '[unknown] in libcrypto.so.3'."""
    leaf = sample.frames[-1] if sample.frames else None
    if leaf is None or leaf.sym != UNKNOWN or leaf.dso == UNKNOWN:
        return sample
    named = Frame(f"{UNKNOWN} in {leaf.dso.rsplit('/', 1)[-1]}", leaf.dso)
    return Sample(sample.comm, sample.pid, sample.tid, sample.frames[:-1] + [named], sample.period)


def summarize(samples: Iterable[Sample]) -> dict:
    """Total weight, top leaf functions and objects, libcrypto and lock shares."""
    samples = list(samples)
    dso_weights, total = _leaf_weights(samples, "dso")
    rx = re.compile(LIBCRYPTO_PATTERN)
    crypto_self = sum(w for d, w in dso_weights.items() if rx.search(d))
    return {
        "samples": total,
        "top_functions": self_shares([_named(x) for x in samples], by="sym"),
        "top_objects": self_shares(samples, by="dso"),
        "libcrypto_share": inclusive_share(samples, LIBCRYPTO_PATTERN, by="dso"),
        "libcrypto_self_share": crypto_self / total if total > 0 else 0.0,
        "lock_share": inclusive_share(samples, LOCK_PATTERN, by="sym"),
    }


# --- SVG flame graph ---------------------------------------------------------------------

ROW_HEIGHT = 16
FONT_SIZE = 12
CHAR_WIDTH = 0.6 * FONT_SIZE  # monospace estimate
X_PAD = 10
TOP_PAD = 36
BOTTOM_PAD = 10
MIN_FRACTION = 0.001  # frames narrower than 0.1% of the image width are left out

_XML_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _esc(s: str) -> str:
    s = _XML_BAD.sub("?", s)
    return (
        s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _colour(name: str) -> str:
    """A warm (red-orange-yellow) colour, the same for the same name on every run."""
    h = hashlib.md5(name.encode("utf-8", "replace")).digest()
    v1, v2, v3 = h[0] / 255, h[1] / 255, h[2] / 255
    return f"rgb({205 + int(50 * v3)},{int(230 * v1)},{int(55 * v2)})"


class _Node:
    __slots__ = ("name", "value", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.value = 0
        self.children: dict[str, _Node] = {}


def _tree(folded: dict[str, int]) -> _Node:
    root = _Node("all")
    for stack, count in folded.items():
        if not isinstance(count, (int, float)) or not count > 0:
            continue
        root.value += count
        node = root
        for part in stack.split(";"):
            node = node.children.setdefault(part, _Node(part))
            node.value += count
    return root


def _label(name: str, width_px: float) -> str:
    chars = int((width_px - 6) / CHAR_WIDTH)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 2] + ".."


def flamegraph_svg(folded: dict[str, int], title: str, width: int = 1200) -> str:
    """A standalone SVG flame graph (root at the bottom) of folded stacks."""
    width = max(int(width), 2 * X_PAD + 10)
    root = _tree(folded)
    total = root.value
    plot_w = width - 2 * X_PAD
    min_px = MIN_FRACTION * width

    # Lay out visible frames: (depth, x, w, node).
    boxes: list[tuple[int, float, float, _Node]] = []
    if total > 0:
        todo = [(root, 0, 0.0)]
        while todo:
            node, depth, x = todo.pop()
            w = node.value / total * plot_w
            if w < min_px:
                continue
            boxes.append((depth, x, w, node))
            cx = x
            for name in sorted(node.children):
                child = node.children[name]
                todo.append((child, depth + 1, cx))
                cx += child.value / total * plot_w
    depth_max = max((b[0] for b in boxes), default=0)
    height = TOP_PAD + (depth_max + 1) * ROW_HEIGHT + BOTTOM_PAD

    out = [
        '<?xml version="1.0" standalone="no"?>',
        f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="monospace" font-size="{FONT_SIZE}">',
        f"<title>{_esc(title)}</title>",
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="16">{_esc(title)}</text>',
    ]
    if not boxes:
        out.append(f'<text x="{width / 2:.1f}" y="{TOP_PAD + 12}" text-anchor="middle">no samples</text>')
    boxes.sort(key=lambda b: (b[0], b[1]))
    for depth, x, w, node in boxes:
        y = height - BOTTOM_PAD - (depth + 1) * ROW_HEIGHT
        pct = 100.0 * node.value / total
        name = _esc(node.name)
        out.append(
            f'<g><title>{name} ({node.value:,} samples, {pct:.2f}%)</title>'
            f'<rect x="{X_PAD + x:.1f}" y="{y}" width="{w:.1f}" height="{ROW_HEIGHT - 1}" '
            f'fill="{_colour(node.name)}" rx="2" ry="2"/>'
        )
        label = _label(node.name, w)
        if label:
            out.append(f'<text x="{X_PAD + x + 3:.1f}" y="{y + ROW_HEIGHT - 4}">{_esc(label)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
