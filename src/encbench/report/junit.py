"""`encbench compare A B --fail-if COND --junit FILE`: the regression gate as JUnit XML.

Any CI system (GitLab, Jenkins, GitHub test reporters) shows a failed gate from this file.
One <testcase> per gate condition per comparison it applies to, in the gate's order:

- classname = workload/operation/variant, name = the condition and the metric it judged on that row (e.g.
  `overhead>5% on cpu_s`: `overhead` judges each row on its workload's verdict metric);
- <failure> when the row is over the limit (B shown worse than allowed, after Holm's
  correction), its message the gate's own line: the measured ratio, its 95% CI, the p-value;
- <error> when the row is not resolved at the limit (neither shown over nor within it; or too few
  runs, no estimate, a saturated client), its message the gate's line: why, and the runs per side
  that would resolve it (exit 23: CI may treat it as a failure; never a silent skip);
- otherwise (shown within the limit) a passed case whose <system-out> says what was measured.

The verdicts are the gate's (analysis/gate.py, `cases`, made once by analysis/compare.build): this module only
writes them down.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from ..analysis import gate
from ..analysis import stats
from ..util import files

METHOD = gate.METHOD.format(alpha=gate.ALPHA)
HINT = "choose a writable --junit path"


def _classname(c: dict) -> str:
    return f"{c['workload']}/{c['operation']}/{c['variant']}"


def _detail(x: dict) -> str:
    """What was measured for one case, one fact a line (the body of a failure, or a passed case's output)."""
    c, cond = x["comparison"], x["condition"]
    kind = "overhead (contender / baseline inside each file), B against A" if c.get("kind") == "overhead" \
        else "the same variant's value, B against A"
    basis = " (its workload's verdict metric)" if cond.metric == gate.VERDICT else ""
    lines = [f"condition: {cond.text} on {x['metric']}{basis}, {kind}",
             f"measured: {stats.pct(c['ratio'])} {stats.ci_text(c['ci'])} (ratio {c['ratio']!r}, 95% CI "
             f"{c['ci']!r})" if c.get("ratio") is not None else "measured: no estimate",
             f"runs: A {c.get('n_a')}, B {c.get('n_b')}",
             f"verdict of the comparison: {c.get('verdict_text') or c.get('verdict')}"]
    if c.get("floor_pct"):
        lines.append(f"noise floor: ±{c['floor_pct']:g}% ({c.get('floor_source')})")
    if x["p"] is not None:
        lines.append(f"one-sided p (over) = {x['p']:.3g}, (within) = {x['p_within']:.3g} against a threshold of "
                     f"{cond.percent:g}%")
    if x.get("runs_needed"):
        lines.append(f"runs per side that would resolve it: about {x['runs_needed']}")
    return "\n".join(lines)


def _case(suite: ET.Element, x: dict) -> None:
    tc = ET.SubElement(suite, "testcase", classname=_classname(x["comparison"]),
                       name=f"{x['condition'].text} on {x['metric']}")
    if x["state"] == gate.OVER:
        ET.SubElement(tc, "failure", message=x["line"], type="regression").text = _detail(x)
    elif x["state"] == gate.NOT_RESOLVED:
        ET.SubElement(tc, "error", message=x["line"], type="not resolved").text = _detail(x)
    else:
        ET.SubElement(tc, "system-out").text = x["line"] + "\n" + _detail(x)


def document(conditions: list[gate.Condition], judged: list[dict], path_a: str, path_b: str) -> ET.Element:
    """The <testsuites> element of the gate's cases (gate.cases: each condition on each row it judged)."""
    counts = {"tests": str(len(judged)), "failures": str(sum(x["state"] == gate.OVER for x in judged)),
              "errors": str(sum(x["state"] == gate.NOT_RESOLVED for x in judged)), "skipped": "0"}
    root = ET.Element("testsuites", name="encbench compare", **{k: v for k, v in counts.items() if k != "skipped"})
    suite = ET.SubElement(root, "testsuite", name=f"encbench gate: {path_b} against {path_a}", **counts)
    props = ET.SubElement(suite, "properties")
    for name, value in [("a", path_a), ("b", path_b)] + [("condition", c.text) for c in conditions] + [
            ("method", METHOD)]:
        ET.SubElement(props, "property", name=name, value=value)
    for x in judged:
        _case(suite, x)
    return root


def render(conditions: list[gate.Condition], judged: list[dict], path_a: str, path_b: str) -> str:
    root = document(conditions, judged, path_a, path_b)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def check_writable(path: Path) -> None:
    """Before any file is read: the JUnit file can be written (a regular file in an existing directory)."""
    files.check_writable(Path(path), what="the JUnit file", hint=HINT)


def write(path: Path, conditions: list[gate.Condition], judged: list[dict], path_a: str, path_b: str) -> Path:
    """The JUnit XML of the gate's cases, written atomically (a temporary file, then a rename): never half a file."""
    files.replace_atomic(Path(path), render(conditions, judged, path_a, path_b), what="the JUnit file", hint=HINT)
    return Path(path)
