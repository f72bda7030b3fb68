"""bench/doc_times.py's table and the pages agree (issue 30 item 8): every time README.md and docs/ quote for a
command is an entry the bench script measures, and every entry's words are still on its page."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("doc_times", ROOT / "bench" / "doc_times.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["doc_times"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_every_entry_is_on_its_page():
    assert _bench().check_pages() == []


def test_a_page_that_changed_its_time_is_caught():
    bench = _bench()
    q = bench.QUOTES[0]
    moved = bench.Quote(q.name, q.page, q.words.replace("2", "3"), q.seconds, q.argv)
    assert bench.check_pages((moved,)) and "no longer says" in bench.check_pages((moved,))[0]


def test_every_command_time_in_a_shell_block_is_in_the_table():
    """`encbench ...  # ..., about N minutes` in a page's shell block is a time a DBA plans from: it is measured."""
    quoted = {(q.page, q.words) for q in _bench().QUOTES}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for line in page.read_text().splitlines():
            if "encbench " in line and re.search(r"#.*\b(about|under) [\w ]*\d* ?(s|min|minutes?|seconds?)\b", line):
                rel = str(page.relative_to(ROOT))
                if not any(p == rel and w.split("\n")[0] in line for p, w in quoted):
                    missing.append(f"{rel}: {line.strip()}")
    assert not missing, "times quoted beside a command that bench/doc_times.py does not measure:\n" + "\n".join(missing)


def test_a_range_holds_what_lies_in_it_widened_by_the_goal():
    judge = _bench().judge
    assert judge((40, 150), 100)[1] == "within" and judge((40, 150), 180)[1] == "within"
    assert judge((40, 150), 200)[1] == "longer" and judge((40, 150), 20)[1] == "shorter"
    assert judge(120, 150) == (1.25, "within") and judge(120, 300)[1] == "longer"
