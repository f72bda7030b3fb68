"""`encbench report`: one self-contained HTML file, rendered in headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from encbench.engines.postgres import server as pg_server
from encbench.profiling.profiler import Profiler
from integration_helpers import assert_one_line_error

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "results-v1.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh --test installs it)")


def _chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def hash_results(tmp_path_factory, encbench) -> Path | None:
    """A small PostgreSQL hash sweep with a profile: scaling curves and flame graphs for the report."""
    try:
        pg_server.find_bindir()
    except Exception:  # noqa: BLE001
        return None
    out = tmp_path_factory.mktemp("hash") / "h.json"
    res = encbench("run", "--engine", "postgres", "--sessions", "1,2", "--rows", "20000", "--runs", "2",
                   "--profile", "-o", str(out), timeout=600)
    assert res.returncode == 0, str(res)
    return out


@needs_chromium
def test_report_renders_in_chromium_with_every_section(encbench, tmp_path, hash_results):
    files = [str(GOLDEN)] + ([str(hash_results)] if hash_results else [])
    out = tmp_path / "report.html"
    res = encbench("report", *files, "-o", str(out))
    assert res.returncode == 0 and out.exists(), str(res)
    text = out.read_text()
    for external in ('src="http', "src='http", 'href="http', "<link", "<script", "@import", "url(http"):
        assert external not in text, external  # self-contained: nothing is fetched (xmlns URIs are names only)
    dom = _chromium("--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "<h1>encbench report</h1>" in html
    assert html.count('class="result"') == len(files)
    assert 'class="results"' in html and "Δ CPU [95% CI]" in html  # the at-rest table
    # the headline summary first in each file's section, before its header and table (issue 14 item 1)
    assert html.count('class="lines summary"') == len(files) and "cold reads: " in html
    assert html.index('class="lines summary"') < html.index('class="meta"><li>encbench') < html.index('class="results"')
    assert html.count('class="plot overhead"') >= 1 and "<svg" in html
    assert 'class="lines derived"' in html and 'class="lines notes"' in html
    assert 'class="command"' in html and "encbench run" in html and 'class="environment"' in html
    if hash_results:
        assert 'class="plot scaling"' in html and "efficiency" in html
        assert "hash sweep, " in html  # the sweep's summary line
        if Profiler.available() is None:
            assert 'class="flame"' in html
    shot = tmp_path / "shot.png"
    done = _chromium(f"--screenshot={shot}", "--window-size=1280,2000", out.as_uri())
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_bad_input(encbench, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{truncated")
    out = tmp_path / "r.html"
    assert_one_line_error(encbench("report", str(GOLDEN), str(bad), "-o", str(out)), 6)
    assert not out.exists()  # nothing written when one input is bad
    assert_one_line_error(encbench("report", str(tmp_path / "missing.json"), "-o", str(out)), 6)
    json.loads(GOLDEN.read_text())  # the golden file itself is intact
