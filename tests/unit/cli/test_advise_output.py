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


# -- advise --knob: only the sweeps of the knobs named ----------------------------------------------------------------

def _sweeps_run(monkeypatch) -> list:
    """sweeps_lab.run replaced: the sweeps it was given are recorded, an interruption ends the command (no engine runs,
    nothing to rank)."""
    seen = []

    def run(settings, sweeps, progress=None):
        seen.extend(sweeps)
        raise KeyboardInterrupt
    monkeypatch.setattr(sweeps_lab, "run", run)
    return seen


@pytest.mark.parametrize("given", [["--knob", "key,hmac"], ["--knob", "hmac", "--knob", "key"]])
def test_advise_knob_runs_only_the_sweeps_of_the_knobs_named(tmp_path, monkeypatch, given):
    seen = _sweeps_run(monkeypatch)
    assert app.main([*_advise(tmp_path / "s", tmp_path), *given]) == 130
    assert [s.knob for s in seen] == ["hmac", "key"]  # in the engine's order, whatever the order named


def test_advise_without_knob_runs_every_sweep(tmp_path, monkeypatch):
    seen = _sweeps_run(monkeypatch)
    assert app.main(_advise(tmp_path / "s", tmp_path)) == 130
    assert {s.knob for s in seen} >= {"hmac", "key", "kdf_iter", "page_size"}


@pytest.mark.parametrize("given, code, words", [
    (["--knob", "nope"], 3, ["--knob nope", "no such knob", "its knobs: hmac, kdf_iter"]),
    (["--knob", "memory"], 4, ["--knob memory", "no sweep of it can run here"]),  # the full advise's only
])
def test_advise_knob_bad_input_is_one_line_before_any_sweep(tmp_path, capsys, monkeypatch, given, code, words):
    seen = _sweeps_run(monkeypatch)
    assert app.main([*_advise(tmp_path / "s", tmp_path), *given]) == code
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("encbench: error: ") and all(w in err for w in words), err
    assert seen == [] and not (tmp_path / "s").exists()


@pytest.mark.parametrize("given", [["--from", "a.json", "--knob", "hmac"], ["--quick", "--knob", "hmac,,key"]])
def test_advise_knob_usage_errors_are_exit_2(tmp_path, capsys, monkeypatch, given):
    seen = _sweeps_run(monkeypatch)
    assert app.main(["advise", *given]) == 2
    err = capsys.readouterr().err.strip()
    assert "--knob" in err and len(err.splitlines()) == 1 and seen == [], err
