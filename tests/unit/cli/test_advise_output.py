"""advise -o DIR (issue 28): a path that is not a directory is exit 5 in one line (was FileExistsError, exit 1), and
an advise interrupted before any sweep wrote a file says nothing was kept and removes the directory it made. In
process; the sweeps themselves are replaced (no engine runs)."""

from __future__ import annotations

import signal

import pytest

from encbench.cli import app
from encbench.lab import advise as sweeps_lab


@pytest.fixture(autouse=True)
def _default_signal_handlers():
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)  # cli.main installs its own
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _advise(out, tmp_path) -> list[str]:
    return ["advise", "--quick", "--data-dir", str(tmp_path / "data"), "-o", str(out)]


@pytest.mark.parametrize("name", ["a-file", "/dev/null", "/proc/encbench-x", "/proc/encbench-x/y"])
def test_advise_o_naming_what_is_not_a_directory_is_exit_5(tmp_path, capsys, name, monkeypatch):
    (tmp_path / "a-file").write_text("mine\n")
    monkeypatch.setattr(sweeps_lab, "run", lambda *a, **k: pytest.fail("a sweep ran"))
    out = tmp_path / name if name == "a-file" else name
    assert app.main(_advise(out, tmp_path)) == 5
    err = capsys.readouterr().err.strip()
    assert err.startswith("encbench: error: ") and "\n" not in err and str(out) in err, err
    assert (tmp_path / "a-file").read_text() == "mine\n"


def _interrupt_after(write_first: bool):
    def run(settings, sweeps, progress=None):
        if write_first:
            sweeps_lab.path_of(settings, sweeps[0]).write_text("{}")
        raise KeyboardInterrupt
    return run


def test_advise_interrupted_before_its_first_sweep_says_nothing_was_kept(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweeps_lab, "run", _interrupt_after(False))
    out = tmp_path / "new" / "sweeps"
    assert app.main(_advise(out, tmp_path)) == 130
    err = capsys.readouterr().err
    assert "nothing was kept" in err and "kept in" not in err, err
    assert not out.exists() and (tmp_path / "new").is_dir()  # the directory it made, empty, is removed
    mine = tmp_path / "mine"
    mine.mkdir()
    assert app.main(_advise(mine, tmp_path)) == 130
    assert "nothing was kept" in capsys.readouterr().err and mine.is_dir()  # a directory it did not make is kept


def test_advise_interrupted_after_a_sweep_file_names_where_it_is(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # a wide pipe: the line whole
    monkeypatch.setattr(sweeps_lab, "run", _interrupt_after(True))
    out = tmp_path / "sweeps"
    assert app.main(_advise(out, tmp_path)) == 130
    assert f"the sweeps so far are kept in {out} (1 result file(s))" in capsys.readouterr().err
    assert len(list(out.iterdir())) == 1
