"""The shape of a result file, as `show`, `compare`, `report` and `estimate` read it.

One declarative spec (`RESULT_V1`), checked by `results.load` after the JSON parse: every
key those commands read with `doc[...]` is required, every key they read with `.get` may be
absent, and every value has the type they use it as. Keys nobody reads are not checked (a
newer file may add keys). A problem is named by its JSON path (`engine.variant_keys[2]
has no 'applies_when'`). Numbers that feed arithmetic must be finite, except raw run
values, where a non-finite value is kept and shown as what it is ("not a number").
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field

MAX_DEPTH = 64  # a result file nests about 8 levels; deeper is not one of ours (and would exhaust the stack)
# What one result file may hold (docs/RESULTS.md), so that show/compare/report load any file in bounded time and
# memory. The runner never writes more (runner.plan, precision.Budget): --runs 1000 over the default suite is
# ~30,000 runs, and a run rewrites the whole file after each run, so a 24 h --max-time run stays below this.
MAX_RUNS = 50_000
MAX_STRING = 2**20  # characters of any one string (a server's log tail, a folded stack, an error: a few kB)
MAX_COMMAND = 64 * 2**10  # config.command: a command line (split again when shown, in quadratic time)
# No probe or count comes near 10^18 (an exabyte, 30 billion years, 10^18 pages): a larger number is not a
# measurement, and its squares and sums would overflow the statistics. Refused, never clamped.
MEASURABLE = 1e18


class Problem(Exception):
    """What is wrong and where: `where` is a JSON path, `what` a phrase that follows it."""

    def __init__(self, where, what: str):
        where = spelled(where)
        super().__init__(f"{where or 'the document'} {what}")
        self.where, self.what = where, what


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def child(path, key) -> tuple:
    """The path of `key` under `path`, spelled only if a Problem names it (a result file of 100,000 runs has
    millions of values: their paths are never formatted on the way)."""
    return path, key


def spelled(path) -> str:
    """A path of child() as a JSON path: runs[3].operations[0].metrics.wall_s."""
    keys = []
    while isinstance(path, tuple):
        path, key = path
        keys.append(key)
    out = path or ""
    for key in reversed(keys):
        if isinstance(key, int):
            out = f"{out}[{key}]"
        elif _IDENT.match(str(key)):
            out = f"{out}.{key}" if out else str(key)
        else:
            out = f'{out}["{_printable(str(key))}"]'
    return out


def _printable(text: str, limit: int = 40) -> str:
    text = text.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace").replace('"', '\\"')
    return text if len(text) <= limit else text[:limit] + "..."


def kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def non_finite_word(x: float) -> str:
    return "not a number (NaN)" if math.isnan(x) else "infinite"


class Spec:
    expected = "a value"

    def check(self, value, path: str) -> None:
        raise NotImplementedError

    def _wrong(self, value, path: str):
        raise Problem(path, f"is {kind(value)}, not {self.expected}")


@dataclass(frozen=True)
class AnyValue(Spec):
    def check(self, value, path: str) -> None:
        return None


@dataclass(frozen=True)
class Str(Spec):
    expected = "a string"
    pattern: str | None = None  # a regular expression the whole string must match
    choices: tuple[str, ...] = ()
    max_length: int | None = None

    def check(self, value, path: str) -> None:
        if not isinstance(value, str):
            self._wrong(value, path)
        _check_text(value, path)
        if self.max_length is not None and len(value) > self.max_length:
            raise Problem(path, f"is {len(value):,} characters long, more than the {self.max_length:,} a result file "
                                "holds there")
        if self.choices and value not in self.choices:
            raise Problem(path, f"is {_printable(value)!r}, not one of {', '.join(self.choices)}")
        if self.pattern and not re.fullmatch(self.pattern, value):
            raise Problem(path, f"is {_printable(value)!r}, not {self.pattern_words}")

    @property
    def pattern_words(self) -> str:
        return {r"\d{1,9}": "a whole number"}.get(self.pattern or "", f"of the form {self.pattern}")


def _check_text(value: str, path: str) -> None:
    if value.isascii():  # the usual case, read from the string's header: no copy
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Problem(path, "is not valid text (a lone surrogate escape)") from None


@dataclass(frozen=True)
class Num(Spec):
    """A JSON number (not true/false). finite=False keeps NaN and infinities (raw run values)."""

    expected = "a number"
    finite: bool = True
    integer: bool = False
    minimum: float | None = None
    positive: bool = False

    def check(self, value, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self._wrong(value, path)
        if isinstance(value, float) and not math.isfinite(value):
            if self.finite:
                raise Problem(path, f"is {non_finite_word(value)}, not a finite number")
            return
        if abs(value) > MEASURABLE:  # ints compared exactly: 10**400 never becomes a float here
            shown = f"{value:.3g}" if abs(value) <= 1e300 else "above 1e+300"
            raise Problem(path, f"is {shown}, beyond any measured value (more than {MEASURABLE:.0e})")
        if self.integer and not isinstance(value, int):
            raise Problem(path, f"is {value!r}, not a whole number")
        if self.minimum is not None and value < self.minimum:
            raise Problem(path, f"is {value!r}, below {self.minimum:g}")
        if self.positive and value <= 0:
            raise Problem(path, f"is {value!r}, not a positive number")


def _plain_float(spec: Spec) -> bool:
    """A spec any float within ±MEASURABLE satisfies (RAW, NUMBER): MapOf checks such values in one pass."""
    return isinstance(spec, Num) and not spec.integer and spec.minimum is None and not spec.positive


def Int(**kw) -> Num:
    return Num(integer=True, **kw)


@dataclass(frozen=True)
class Bool(Spec):
    expected = "true/false"

    def check(self, value, path: str) -> None:
        if not isinstance(value, bool):
            self._wrong(value, path)


@dataclass(frozen=True)
class Scalar(Spec):
    """A string, number, true/false or null: printed as it is, never computed with."""

    expected = "a string, number or null"

    def check(self, value, path: str) -> None:
        if isinstance(value, (dict, list)):
            self._wrong(value, path)
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
            raise Problem(path, "is a number too large for a float")  # printed only, but str(10**5000) fails


@dataclass(frozen=True)
class Free(Spec):
    """Any value; a finite number in it is still a measurable one (the readers take every numeric extra)."""

    def check(self, value, path: str) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            Num(finite=False).check(value, path)


@dataclass(frozen=True)
class Nullable(Spec):
    inner: Spec

    @property
    def expected(self) -> str:
        return f"{self.inner.expected} or null"

    def check(self, value, path: str) -> None:
        if value is not None:
            self.inner.check(value, path)


@dataclass(frozen=True)
class ListOf(Spec):
    item: Spec
    length: int | None = None  # exactly this many items (a pair: 2)
    max_items: int | None = None

    @property
    def expected(self) -> str:
        return "a pair" if self.length == 2 else "a list"

    def check(self, value, path: str) -> None:
        if not isinstance(value, list):
            self._wrong(value, path)
        if self.length is not None and len(value) != self.length:
            raise Problem(path, f"has {len(value)} items, not {self.length}")
        if self.max_items is not None and len(value) > self.max_items:
            raise Problem(path, f"has {len(value):,} items, more than the {self.max_items:,} a result file holds")
        for i, x in enumerate(value):
            self.item.check(x, child(path, i))


@dataclass(frozen=True)
class Tuple(Spec):
    """A list of fixed length whose items have their own specs (e.g. [name, share])."""

    items: tuple[Spec, ...]
    expected = "a list"

    def check(self, value, path: str) -> None:
        if not isinstance(value, list):
            self._wrong(value, path)
        if len(value) != len(self.items):
            raise Problem(path, f"has {len(value)} items, not {len(self.items)}")
        for i, (x, spec) in enumerate(zip(value, self.items)):
            spec.check(x, child(path, i))


@dataclass(frozen=True)
class MapOf(Spec):
    """An object used as a map: any keys (valid text), every value of one spec."""

    value: Spec
    expected = "an object"

    def check(self, value, path: str) -> None:
        if not isinstance(value, dict):
            self._wrong(value, path)
        if _plain_float(self.value) and _all_plain(value):
            return  # every key ASCII text, every value a float within ±MEASURABLE: nothing to name
        for k, v in value.items():
            where = child(path, k)
            _check_text(k, where)
            self.value.check(v, where)


def _all_plain(value: dict) -> bool:
    """The common case of a map of measured values, checked at C speed (the slow path names what is wrong)."""
    try:
        return (all(type(k) is str and k.isascii() for k in value)
                and all((type(v) is float or type(v) is int) and -MEASURABLE <= v <= MEASURABLE for v in value.values()))
    except TypeError:
        return False


@dataclass(frozen=True)
class Both(Spec):
    """Every spec holds (a map of strings that also has a few keys of a stricter form)."""

    specs: tuple[Spec, ...]

    def check(self, value, path: str) -> None:
        for spec in self.specs:
            spec.check(value, path)


@dataclass(frozen=True)
class NumberIfTrue(Spec):
    """Anything false (absent, 0, null, "") or a number: a count that is skipped when false, else divides."""

    def check(self, value, path: str) -> None:
        if value:
            Num(positive=True).check(value, path)


@dataclass(frozen=True)
class Opt:
    """A key that may be absent (it is read with .get); when present, `spec` holds."""

    spec: Spec


@dataclass(frozen=True, eq=False)
class Obj(Spec):
    """An object with known keys: a bare Spec is required, Opt(spec) may be absent; others are not checked."""

    fields: dict = field(default_factory=dict)
    expected = "an object"

    def check(self, value, path: str) -> None:
        if not isinstance(value, dict):
            self._wrong(value, path)
        for key, spec in self.fields.items():
            if key not in value:
                if isinstance(spec, Opt):
                    continue
                raise Problem(path, f"has no {key!r}")
            (spec.spec if isinstance(spec, Opt) else spec).check(value[key], child(path, key))


# -- what the readers read (analysis, report, compare, html_report, estimate) ----------------

NUMBER = Num()
RAW = Num(finite=False)  # a measured value: kept as it is, shown as "not a number" / "infinite"
TEXT = Str()
NAMES = ListOf(TEXT)

WHOLE = Str(pattern=r"\d{1,9}")
# variant values are strings (labels, sets, sorting); sessions and page_size are read as int(...)
VARIANT = Both((MapOf(TEXT), Obj({"sessions": Opt(WHOLE), "page_size": Opt(WHOLE)})))

TABLE = Obj({
    "title": Nullable(TEXT), "axis": TEXT, "axis_baseline": TEXT, "workloads": Nullable(NAMES),
    "table_columns": Opt(Nullable(NAMES)), "metric_words": MapOf(TEXT),
})

ENGINE = Obj({
    "name": TEXT, "axis": TEXT, "axis_baseline": TEXT,
    "variant_keys": ListOf(Obj({"name": TEXT, "applies_when": ListOf(Tuple((TEXT, Scalar()))),
                                "workloads": Opt(Nullable(NAMES))})),
    "variants": Opt(ListOf(VARIANT)),
    "table_columns": Opt(Nullable(NAMES)),
    "metric_words": Opt(Nullable(MapOf(TEXT))),
    "tables": Opt(Nullable(ListOf(TABLE))),
})

ENVIRONMENT = Obj({
    "cpu": Obj({"model": Scalar(), "logical_cores": Nullable(Int(minimum=1)), "flags": MapOf(Scalar())}),
    "kernel": Scalar(),
    "engine_versions": Opt(MapOf(Scalar())),
    "os_cache": Opt(Obj({"data_dir_filesystem": Opt(Scalar())})),
})

CONFIG = Obj({"command": Opt(Nullable(Str(max_length=MAX_COMMAND))), "size_bytes": Num(minimum=0)})

WORKLOADS = MapOf(Obj({"reads_only": Opt(Scalar()), "rewrites": Opt(Scalar()),
                       "params": Opt(Nullable(MapOf(Scalar()))), "fixed_duration": Opt(Scalar()),
                       "verdict_metrics": Opt(Nullable(NAMES))}))

DATASET = Obj({
    "rows": Opt(Int(minimum=0)), "seed": Opt(Scalar()), "generator_version": Opt(Scalar()),
    "page_size": Opt(Nullable(Int(minimum=1))),
    "server": Opt(Obj({"version": Opt(Scalar()), "host": Opt(Scalar()), "port": Opt(Scalar()),
                       "ssl_library": Opt(Scalar())})),
})

CALIBRATION = Obj({
    "raw_cipher": Opt(Nullable(MapOf(Obj({
        "cipher": Scalar(), "library": Scalar(), "mb_per_s_per_core": Num(positive=True), "per_page_cpu_s": NUMBER,
        "bulk_aes_256_cbc_mb_per_s": Opt(NUMBER), "bulk_hmac_sha512_mb_per_s": Opt(NUMBER),
        "bulk_aes_256_ctr_mb_per_s": Opt(NUMBER),
    })))),
    "raw_hash": Opt(Nullable(MapOf(Obj({"us_per_call": NUMBER, "method": Scalar()})))),
})

PROFILE = Obj({  # report.profile_lines reads every one of these; flame.flamegraph_svg the folded stacks
    "folded": Opt(Nullable(MapOf(NUMBER))),
    "top_functions": ListOf(Tuple((Scalar(), NUMBER))), "top_objects": ListOf(Tuple((TEXT, NUMBER))),
    "libcrypto_share": NUMBER, "lock_share": NUMBER, "sample_count": Scalar(), "frequency_hz": Scalar(),
    "event": Scalar(),
})

# the counts that divide a CPU time (analysis.PER_UNIT); other extra values are free
EXTRA = Both((MapOf(Free()), Obj({**{k: Opt(NumberIfTrue()) for k in ("queries", "messages", "connections",
                                                                          "rows_hashed", "transactions")},
                                       "profile": Opt(PROFILE), "profile_error": Opt(TEXT)})))

CACHE = Obj({"cache": Opt(Scalar()), "restart_s": Opt(NUMBER), "method": Opt(Scalar()),
             "os_cache_dropped": Opt(Scalar())})

OPERATION = Obj({
    "operation": TEXT, "metrics": MapOf(RAW), "extra": Opt(EXTRA), "cache": Opt(CACHE),
})

RUN = Obj({
    "workload": TEXT, "variant": VARIANT, "variant_label": TEXT, "operations": ListOf(OPERATION),
    "warmup": Opt(Scalar()), "open": Opt(Nullable(MapOf(RAW))),
    "session": Opt(Nullable(Obj({"tls": Opt(Nullable(Obj({
        "ssl": Opt(Scalar()), "version": Scalar(), "cipher": Scalar(), "bits": Opt(Scalar())})))}))),
    "context": Opt(Nullable(Obj({"flags": Opt(Nullable(NAMES))}))),  # lab/runctx: why a run was flagged
})

# the run's own records that analysis/context.py words (Analysis.context: show, the HTML report, Markdown)
PLACEMENT = Obj({"text": Opt(Nullable(Scalar()))})
PRECISION_ROW = Obj({"workload": Scalar(), "operation": Scalar(), "contender": Scalar(), "metric": Scalar(),
                     "half_width_points": Nullable(NUMBER), "n_baseline": Scalar(), "n_contender": Scalar(),
                     "reached": Opt(Nullable(Scalar()))})
PRECISION = Obj({"rows": Opt(Nullable(ListOf(PRECISION_ROW))), "elapsed_s": Opt(Nullable(NUMBER)),
                 "target_points": Opt(Nullable(NUMBER)), "widest_points": Opt(Nullable(NUMBER)),
                 "runs_per_variant": Opt(Nullable(MapOf(Int(minimum=0)))), "stopped_because": Opt(Nullable(Scalar()))})
RUN_CONTEXT = Obj({"runs": Opt(Nullable(Int(minimum=0))), "flagged_runs": Opt(Nullable(ListOf(Int(minimum=0)))),
                   "max_steal_pct": Opt(Nullable(NUMBER)), "median_other_load_cores": Opt(Nullable(NUMBER)),
                   "median_other_load_resolution_cores": Opt(Nullable(NUMBER))})

STATUSES = ("running", "complete", "interrupted", "failed")

RESULT_V1 = Obj({
    "encbench_version": Scalar(),
    "status": Str(choices=STATUSES),
    "config": CONFIG,
    "environment": ENVIRONMENT,
    "engine": ENGINE,
    "workloads": Opt(WORKLOADS),
    "dataset": Opt(Nullable(DATASET)),
    "calibration": Opt(Nullable(CALIBRATION)),
    "runs": ListOf(RUN, max_items=MAX_RUNS),
    # a private server that died during a failed run: its kept log and last lines (Engine.failure_detail)
    "error_detail": Opt(ListOf(Obj({"server": TEXT, "server_log": TEXT, "server_log_tail": NAMES}))),
    "placement": Opt(Nullable(PLACEMENT)), "precision": Opt(Nullable(PRECISION)),
    "run_context": Opt(Nullable(RUN_CONTEXT)),
})


SCHEMAS = {1: RESULT_V1}  # schema_version -> the spec (results.KNOWN_VERSIONS)


def check(doc: dict, version: int) -> None:
    """Raise Problem for the first thing in `doc` its readers could not use."""
    SCHEMAS[version].check(doc, "")


def prescan(text: str) -> str | None:
    """What makes `text` no result file of ours before json.loads reads it, as a phrase ("nests deeper than 64
    levels"), else None. In C-speed string operations (under 2 s for 40 MB here; a per-token loop took 10):
    once the escaped backslashes and quotes are gone, every '"' delimits a string."""
    plain = text.replace("\\\\", "").replace('\\"', "")
    if len(plain) - _SHORT_STRINGS.match(plain).end() > MAX_STRING + 1:  # stopped at a string it could not take
        return f"holds a string of more than {MAX_STRING:,} characters"
    if _nests_deeper(_NOT_BRACKET.sub("", plain), MAX_DEPTH):
        return f"nests deeper than {MAX_DEPTH} levels"
    return None


def nesting_depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when brackets (outside strings) nest deeper than `limit`: json.loads would exhaust the interpreter's
    stack on a few thousand levels."""
    return _nests_deeper(_NOT_BRACKET.sub("", text.replace("\\\\", "").replace('\\"', "")), limit)


def _nests_deeper(brackets: str, limit: int) -> bool:
    """The innermost pairs removed `limit` times; brackets left that still pair up nest deeper. Brackets that do
    not pair up are not JSON: False, and json.loads names where."""
    for _ in range(limit):
        brackets, removed = _PAIR.subn("", brackets)
        if not brackets or not removed:
            return False
    return bool(brackets) and bool(_PAIR.search(brackets))


_NOT_BRACKET = re.compile(r'"[^"]*"|[^\[\]{}"]+')  # a string (no escaped quote left in it), or no bracket
_PAIR = re.compile(r"\[\]|\{\}")
# from the start, possessively (no backtracking): runs outside strings, and strings of at most MAX_STRING characters
_SHORT_STRINGS = re.compile(r'(?:[^"]++|"[^"]{0,%d}+")*+' % MAX_STRING)
