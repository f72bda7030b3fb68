"""Variants: a dict of settings (encryption=on, cache=cold, ...) and the matrix of them.

An engine declares its variant keys; `--variant KEY=V1,V2` narrows (or, for keys such as
page_size, widens) the values of one key. Keys that only apply to some variants
(kdf_iter only when encryption=on) are dropped where they do not apply.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import BadValueError, UnknownNameError, UsageError
from ..util.units import shown, split_list

Variant = dict[str, str]


@dataclass(frozen=True)
class VariantKey:
    name: str
    description: str
    default: tuple[str, ...]
    allowed: tuple[str, ...] | None = None  # None: any value `validate` accepts
    validate: Callable[[str], str] | None = None  # returns the canonical value or raises
    applies_when: tuple[tuple[str, str], ...] = ()  # e.g. (("encryption", "on"),)
    workloads: tuple[str, ...] | None = None  # only these workloads vary it (None: all)
    named_only: tuple[str, ...] = ()  # of those, these vary it only when a filter names it (no default values)
    # of those, these take other default values: ((workload, values), ...) (e.g. tls=off,on for oltp)
    workload_defaults: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def for_workload(self, workload: str | None) -> bool:
        return workload is None or self.workloads is None or workload in self.workloads

    def default_for(self, workload: str | None) -> tuple[str, ...]:
        """The values a workload varies this key over when no filter names it."""
        if workload in self.named_only:
            return ()
        return dict(self.workload_defaults).get(workload, self.default)

    def check(self, value: str) -> str:
        if self.allowed is not None:
            if value not in self.allowed:
                raise UnknownNameError(
                    f"unknown value {value!r} for variant key {self.name!r}",
                    hint=f"valid: {', '.join(self.allowed)}",
                )
            return value
        if self.validate is not None:
            return self.validate(value)
        return value

    def applies(self, variant: Variant) -> bool:
        return all(variant.get(k) == v for k, v in self.applies_when)


PLACEBO = "placebo"
_PLACEBO_VALUE = re.compile(r"^[A-Za-z0-9_-]{1,16}$")


def _check_placebo(value: str) -> str:
    if not _PLACEBO_VALUE.match(value):
        raise BadValueError(f"variant placebo={value!r} is not a short name",
                            hint="use letters, digits, - or _ (up to 16), e.g. --variant placebo=a,b")
    return value


PLACEBO_KEY = VariantKey(
    PLACEBO, "identical twins for an A/A check: the values change nothing; each twin is compared with the first "
             "value's variant, apart from the real comparisons (e.g. placebo=a,b)",
    default=(), validate=_check_placebo)


def with_placebo(keys: Sequence[VariantKey]) -> tuple[VariantKey, ...]:
    """An engine's keys plus `placebo` (last, so twins sit side by side in the matrix)."""
    keys = tuple(keys)
    return keys if any(k.name == PLACEBO for k in keys) else (*keys, PLACEBO_KEY)


def placebo_reference(variants: Sequence[Variant]) -> str | None:
    """The placebo value the twins are compared with: the first one in matrix order (None: no placebo)."""
    return next((v[PLACEBO] for v in variants if PLACEBO in v), None)


def placebo_twin(variant: Variant, reference: str | None) -> Variant | None:
    """For a twin (placebo set, not the reference), the variant it is compared with; else None."""
    if reference is None or variant.get(PLACEBO) in (None, reference):
        return None
    return {**variant, PLACEBO: reference}


def label(variant: Variant) -> str:
    return ",".join(f"{k}={v}" for k, v in variant.items())


def parse_filters(specs: Sequence[str], keys: Sequence[VariantKey]) -> dict[str, list[str]]:
    """['cache=cold', 'page_size=1024,4096'] -> {'cache': ['cold'], 'page_size': [...]}."""
    by_name = {k.name: k for k in keys}
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise UsageError(f"--variant {spec!r} is not KEY=VALUE", hint="e.g. --variant cache=cold")
        if name not in by_name:
            raise UnknownNameError(
                f"unknown variant key {name!r}", hint=f"valid: {', '.join(by_name)}"
            )
        checked = [by_name[name].check(v) for v in split_list(values, what=f"--variant {shown(spec)}",
                                                              example=f"--variant {name}=A,B")]
        out.setdefault(name, [])
        for v in checked:
            if v not in out[name]:
                out[name].append(v)
    if PLACEBO in out and len(out[PLACEBO]) < 2:
        raise BadValueError(f"--variant placebo={','.join(out[PLACEBO])} needs two or more values",
                            hint="e.g. --variant placebo=a,b: identical twins compared with each other")
    return out


def normalize(variant: Variant, keys: Sequence[VariantKey]) -> Variant:
    """Drop the keys that do not apply to this variant, in declared key order."""
    return {k.name: variant[k.name] for k in keys if k.name in variant and k.applies(variant)}


def matrix(keys: Sequence[VariantKey], filters: dict[str, list[str]], workload: str | None = None) -> list[Variant]:
    """Every combination of the chosen values, normalized and without repeats.

    With a workload, only the keys that workload varies take part; a key without default
    values (placebo) only when a filter names it.
    """
    keys = [k for k in keys if k.for_workload(workload) and (k.default_for(workload) or k.name in filters)]
    choices = [filters.get(k.name, list(k.default_for(workload))) for k in keys]
    seen: list[Variant] = []
    for combo in itertools.product(*choices):
        v = normalize(dict(zip((k.name for k in keys), combo)), keys)
        if v not in seen:
            seen.append(v)
    if not seen:
        raise BadValueError("the --variant filters leave nothing to run")
    return seen


def baseline_of(variant: Variant, axis: str, baseline_value: str, keys: Sequence[VariantKey]) -> Variant | None:
    """The variant a contender is compared with: same settings, axis at its baseline value."""
    if variant.get(axis) in (None, baseline_value):
        return None
    return normalize({**variant, axis: baseline_value}, keys)


def int_validator(name: str, allowed: Callable[[int], bool], hint: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            n = int(value)
        except ValueError:
            raise BadValueError(f"variant {name}={value!r} is not a whole number", hint=hint) from None
        if not allowed(n):
            raise BadValueError(f"variant {name}={n} is not allowed", hint=hint)
        return str(n)

    return check


PLACEBO_METRICS = ("wall_s", "cpu_s")  # the headline metrics an A/A check counts
UNJUDGED = ("too_few_runs", "no_estimate")  # verdicts that claim nothing either way (stats.py)


def flagged(comparison: dict) -> bool:
    """Does this comparison claim a difference? (verdict costs or saves; a file without verdicts: significant)."""
    verdict = comparison.get("verdict")
    if isinstance(verdict, str) and verdict:
        return verdict.split(" ", 1)[0] in ("costs", "saves")
    return bool(comparison.get("significant"))


def judged(comparison: dict) -> bool:
    """Did this comparison get a verdict at all? (too few runs, or no estimate: it claims nothing)."""
    return comparison.get("ratio") is not None and comparison.get("verdict") not in UNJUDGED


def placebo_note(comparisons: list[dict]) -> str:
    """One plain line on the placebo twins: how many identical pairs were called different."""
    head = [c for c in comparisons if c["metric"] in PLACEBO_METRICS and judged(c)]
    bad = [c for c in head if flagged(c)]
    unjudged = sum(1 for c in comparisons if c["metric"] in PLACEBO_METRICS and not judged(c))
    worst = max(head, key=lambda c: abs(c["ratio"] - 1), default=None)
    text = (f"placebo (A/A) check: {len(bad)} of {len(head)} comparisons of identical twins (elapsed, CPU) came out "
            "different (about 5% would be by chance alone); these rows are kept out of the table")
    if unjudged:
        text += f"; {unjudged} not judged (too few runs)"
    if worst is not None:
        text += (f"; largest: {worst['workload']}/{worst['operation']} {worst['contender']} {worst['metric']} "
                 f"{(worst['ratio'] - 1) * 100:+.1f}%")
    return text
