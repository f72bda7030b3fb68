"""bench/estimate_heldout.py --quick --engines sqlite end to end (issue 31): a calibration on encbench's own mixes,
the held-out TPC-B-like mix on SQLCipher, the findings JSON that `estimate` reads.

Run by hand only (ENCBENCH_BY_HAND=1): its tiny calibration alone is 8 variants x 3 runs, about 2 minutes on this
2-core machine under load, over the 60 s a suite test may take."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from encbench.analysis import heldout

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not os.environ.get("ENCBENCH_BY_HAND"),
                                 reason="by hand (ENCBENCH_BY_HAND=1): about 2 minutes, over a suite test's 60 s")]
ROOT = Path(__file__).resolve().parents[2]


def test_quick_sqlite_heldout_writes_findings_estimate_words(tmp_path):
    out = tmp_path / "heldout.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "estimate_heldout.py"), "--quick", "--engines",
                           "sqlite", "-o", str(out), "--work-dir", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "sqlite    sqlcipher         tpcb-like" in done.stdout and "overall:" in done.stdout
    doc = json.loads(out.read_text())
    assert doc["quick"] and doc["checks"][0]["engine"] == "sqlite" and doc["load"]["runs"] > 0
    mix = doc["checks"][0]["mixes"][0]
    assert mix["measured_us"] is not None and mix["predicted_us"] is not None  # both sides of the check measured
    assert "a --quick smoke run, not a figure" in heldout.words("sqlite", "sqlcipher", doc)
