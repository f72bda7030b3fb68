"""util/tdist gives scipy.stats.t's quantile and tail without importing scipy.stats at start-up."""

import pytest
from scipy import stats as sps

from encbench.util.tdist import t_ppf, t_sf


@pytest.mark.parametrize("df", [1, 2, 3.5, 9, 29.2, 200])
@pytest.mark.parametrize("q", [0.025, 0.5, 0.9, 0.95, 0.975, 0.999])
def test_same_as_scipy_stats(df, q):
    assert t_ppf(q, df) == pytest.approx(float(sps.t.ppf(q, df)), rel=1e-9, abs=1e-12)
    x = float(sps.t.ppf(q, df))
    assert t_sf(x, df) == pytest.approx(float(sps.t.sf(x, df)), rel=1e-9, abs=1e-15)


def test_commands_start_without_scipy_stats():
    import subprocess
    import sys

    code = "import sys, encbench.cli.app; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
