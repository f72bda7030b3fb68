"""`pytest -m "not integration"` runs no real engine (issue 29): every test under tests/integration/ carries the
marker, whatever its file says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _collected(*args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 5), proc.stdout[-2000:] + proc.stderr[-2000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_not_integration_collects_no_integration_test():
    assert not [t for t in _collected("-m", "not integration", "tests/integration") if t]


def test_every_integration_file_is_marked():
    ids = _collected("-m", "integration", "tests/integration")
    files = {t.split("::")[0] for t in ids}
    on_disk = {str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "integration").glob("test_*.py")}
    assert on_disk <= files, f"integration files with no marked test: {sorted(on_disk - files)}"
