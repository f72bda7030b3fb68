"""The answer of a command that prints no result file, in one line printed first (leak-check, tls-scan): within
100 columns with its "Summary: "."""

from __future__ import annotations

from .lead import ONE_LINE, fit, signed_pct


def _pct(x: float) -> str:
    return f"{signed_pct(x, 1 if abs(x - 1) < 0.1 else 0)}%"


def leak_check_line(report) -> str:
    """leak-check's answer in one line, from its LeakReport: a leak (where), or none (and whether the control
    proves the scan could have found one)."""
    if report.findings:
        where = ", ".join(dict.fromkeys(f.role for f in report.findings))
        return fit(f"LEAK: plaintext canary on disk in {len(report.findings)} of {report.scanned_files} files",
                   [where, f"although {report.configuration}"], width=ONE_LINE)
    if report.control and not report.control.get("found_in"):
        return fit("no leak seen, but the control finds none either: this scan proves nothing",
                   [report.configuration], width=ONE_LINE)
    extras = ["the control finds it: the scan sees a leak"] if report.control else []
    return fit(f"no leak: canary in none of the {report.scanned_files} files scanned",
               extras + [report.configuration], width=ONE_LINE)


GRADES = "ABCF"  # tls/scan.py's grades, best first


def _first(names: list[str], n: int) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def tls_scan_line(result: dict, changes: list[str] | None = None, measured: dict | None = None) -> str:
    """tls-scan's answer in one line: protocols, suites and the worst grade, drift from a baseline, and with
    --measure the cheapest and dearest suite by storm elapsed (its ratio vs no TLS with the 95% CI)."""
    suites = [s for ss in result["suites"].values() for s in ss]
    worst = max((s["grade"] for s in suites), default="-", key=lambda g: GRADES.find(g))
    weak = [s["suite"] for s in suites if s["grade"] in ("C", "F")]
    head = f"{result['target']}: {', '.join(result['protocols']) or 'no protocol'}; {len(suites)} suites, worst {worst}"
    extras = []
    if changes is not None:  # drift is what a scan against a baseline is for: said before the rest
        real = [c for c in changes if not c.startswith("note:")]
        extras.append(f"{len(real)} change(s) from the baseline" if real else "no change from the baseline")
    rated = [r for r in (measured or {}).get("ranking", []) if (r.get("storm elapsed") or {}).get("ratio") is not None]
    if rated:
        lo = min(rated, key=lambda r: r["storm elapsed"]["ratio"])
        hi = max(rated, key=lambda r: r["storm elapsed"]["ratio"])
        extras.append(f"storm {_pct(lo['storm elapsed']['ratio'])} to {_pct(hi['storm elapsed']['ratio'])} with TLS"
                      if lo is not hi else f"storm {_pct(lo['storm elapsed']['ratio'])} with TLS")
    if weak:
        extras.append(f"{len(weak)} weak: {_first(weak, 2)}")
    return fit(head, extras, width=ONE_LINE)
