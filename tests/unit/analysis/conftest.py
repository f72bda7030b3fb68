"""Fixtures of the analysis tests: the golden result file and its analysis."""

from __future__ import annotations

from pathlib import Path

import pytest

from encbench.analysis import summary as an
from encbench.lab import results

GOLDEN = next(p for p in Path(__file__).resolve().parents if p.name == "tests") / "golden" / "results-v1.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    return results.load(GOLDEN)


@pytest.fixture(scope="module")
def analysis(doc) -> an.Analysis:
    return an.analyze(doc)
