"""Issue 30 item 6: every line of `run`/`show`, `advise`, `tls-scan` and `leak-check` fits COLUMNS (100 in a pipe when
COLUMNS does not say), prose included: wrapped at spaces (util/columns.wrap), a wrapped item going on under its text,
never inside a number, a path or a command to copy (one longer than the width stands whole on a line of its own).
Wrapping changes only whitespace: the words are the ones a line printed whole."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.cells import cell_len
from rich.console import Console

from encbench.analysis import advise, summary as an
from encbench.cli import advise as advise_cli, leakcheck, tlsscan
from encbench.engines import engine_named
from encbench.report import render
from encbench.tls import scan as tls
from encbench.util import columns
from encbench.vocab.leakcheck import Finding, LeakReport

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
FILES = ("results-v1.json", "sqlite-default.json", "postgres-tls.json", "sqlite-oltp.json", "mariadb-atrest.json",
         "sqlite-metered.json", "advise-kdf-iter.json")
BOX = "┏┃┡│└┗┣┠┌├╭"  # the first character of a rich table's lines
WIDE = 10_000  # a width no line reaches: each line printed whole, as a pipe printed it before


def _words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


def _too_wide(lines: list[str], width: int, whole: tuple[str, ...] = ()) -> list[str]:
    """The lines wider than `width` that are not one unbreakable word or one of `whole` (a command to copy)."""
    return [x for x in lines if cell_len(x) > width and " " in x.strip() and x.strip() not in whole]


@pytest.fixture(scope="module")
def shown() -> dict:
    """Each golden file with its analysis (made once)."""
    out = {}
    for name in FILES:
        doc = json.loads((GOLDEN / name).read_text())
        out[name] = (doc, an.analyze(doc))
    return out


def _show(doc: dict, analysis, width: int, detail: bool) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    render.render_text(doc, analysis, console, detail=detail)
    return console.file.getvalue().splitlines()


@pytest.mark.parametrize("detail", [False, True], ids=["table", "detail"])
@pytest.mark.parametrize("width", [100, 80])
@pytest.mark.parametrize("name", FILES)
def test_show_every_line_fits_and_only_whitespace_changes(shown, name, width, detail):
    doc, analysis = shown[name]
    lines = _show(doc, analysis, width, detail)
    command = (doc["config"].get("command") or "",)
    assert not _too_wide(lines, width, command), _too_wide(lines, width, command)
    prose = [x for x in lines if x[:1] not in BOX]
    whole = [x for x in _show(doc, analysis, WIDE, detail) if x[:1] not in BOX]
    assert _words(prose) == _words(whole)
    # a wrapped item goes on under its text ("    "), not at the margin or under its dash
    wrapped = [x for x in whole if x.startswith("  - ") and cell_len(x) > width]
    for item in wrapped:
        at = prose.index(columns.wrap(item, width)[0])
        assert prose[at + 1].startswith("    ") and not prose[at + 1].startswith("    - "), prose[at:at + 2]


def test_show_wraps_the_header_the_sections_and_keeps_the_summary_whole(shown):
    """The lines a pipe printed 120-400 characters long are wrapped at 100; the summary's lines, within 100, stay one
    line each."""
    doc, analysis = shown["sqlite-default.json"]
    lines = _show(doc, analysis, 100, False)
    whole = _show(doc, analysis, WIDE, False)
    assert max(map(cell_len, whole)) > 120  # the header, the per-page costs, the notes: wider than 100 before
    summary = whole[1:whole.index(next(x for x in whole if x.startswith("encbench ")))]
    assert summary and all(x in lines for x in summary)
    header = next(i for i, x in enumerate(lines) if x.startswith("verdicts: "))
    assert lines[header + 1].startswith("  ") and not lines[header + 1].startswith("  - ")  # its next line, hung


def test_markdown_is_not_wrapped(shown):
    """--format markdown: a ticket reflows it; its table rows and items stay one line each."""
    doc, analysis = shown["sqlite-default.json"]
    md = render.render_markdown(doc, analysis).splitlines()
    assert any(cell_len(x) > 100 for x in md if x.startswith("- "))
    assert all(x.endswith("|") for x in md if x.startswith("|"))


def test_wrap_breaks_at_spaces_and_keeps_figures_paths_and_commands_whole():
    path = "/var/lib/encbench/results/" + "x" * 60 + ".json"
    lines = columns.wrap(f"  - written to {path}, a cost of +12.5% [+3.1, +20.4] per 4096-byte page " + "word " * 20,
                         40)
    assert lines[0].startswith("  - ") and all(x.startswith("    ") for x in lines[1:])
    assert f"    {path}," in lines and sum("[+3.1, +20.4]" in x for x in lines) == 1
    assert "+12.5% [+3.1, +20.4]" in " ".join(lines)  # the figure with its CI
    assert all(len(x) <= 40 for x in lines if path not in x)
    command = "encbench run --engine mariadb --quick --budget 3m -o results/mariadb.json"
    assert columns.wrap(f"Reproduce: {command}", 50, keep=[command]) == ["Reproduce:", f"    {command}"]
    hung = columns.wrap("  run 3 (scan-like cache=cold): " + "other processes used 1.6 cores, " * 4, 50)
    assert hung[0].startswith("  run 3") and all(x.startswith("      ") for x in hung[1:])  # four more: not a sub-line
    ranked = columns.wrap("    12. PRAGMA kdf_iter = 64000 after PRAGMA key " + "saves 3% CPU " * 6, 50)
    assert all(x.startswith(" " * 8) and x[8] != " " for x in ranked[1:])  # under the text after "12. "
    assert columns.wrap("short line", 50) == ["short line"]
    for width in range(50, 70):  # a figure with its unit and CI, wherever the line breaks
        assert any("873.3 ms [647.0 ms, 1.10 s]" in x for x in columns.wrap(
            "    at the defaults, as each sweep file measured them: 873.3 ms [647.0 ms, 1.10 s] (f.json)", width))
    for width in range(60, 76):  # a short aside whole, wherever the line breaks
        assert any("(> 0.5)" in x for x in columns.wrap("  run 1 (scan-like encryption=off): other processes used "
                                                          "1.87 cores (> 0.5)", width))
    assert columns.wrap("  - a\nsecond line", 50) == ["  - a", "second line"]


def test_advise_lines_fit_and_keep_each_statement_whole(monkeypatch, capsys):
    src = str(GOLDEN / "advise-kdf-iter.json")
    doc = json.loads(Path(src).read_text())
    knobs = tuple(engine_named(doc["engine"]["name"]).knobs)
    entries = advise.advise([(src, doc)], knobs, {"docs": {src: doc}, "analyses": {src: an.analyze(doc)}})
    for width in (100, 80):
        monkeypatch.setenv("COLUMNS", str(width))
        advise_cli.print_advice(entries, [src], ["a sweep that needs a private server: not run on this machine"])
        lines = capsys.readouterr().out.splitlines()
        assert not _too_wide(lines, width), _too_wide(lines, width)
        whole = advise.report_lines(entries, [src])
        assert _words(lines)[:len(_words(whole))] == _words(whole)
        statements = [s for x in whole for s in advise_cli.STATEMENT.findall(x)]
        assert statements and all(any(s in x for x in lines) for s in statements)


def _scan() -> dict:
    """A scan as tls/scan.scan returns it, graded by its own rules, with the long names servers give."""
    suites = {"TLSv1.2": ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305", "ECDHE-RSA-AES256-SHA384",
                          "AES256-GCM-SHA384", "AES256-SHA", "DHE-RSA-AES256-SHA"],
              "TLSv1.3": ["TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"]}
    return {"target": "postgresql://db-replica-eu-west-1.internal.example.com:5432", "engine": "postgres",
            "protocols": ["TLSv1.2", "TLSv1.3"],
            "suites": {p: [dict(suite=s, **tls.grade(s, p)) for s in names] for p, names in suites.items()},
            "order": {"TLSv1.2": "server", "TLSv1.3": "client"},
            "groups_by_protocol": {"TLSv1.2": ["X25519", "prime256v1", "secp384r1", "secp521r1", "ffdhe2048"],
                                   "TLSv1.3": ["X25519MLKEM768", "X25519", "prime256v1", "secp384r1", "ffdhe2048"]},
            "direct_tls": False, "default": {"protocol": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384", "bits": 256},
            "certificate": {"key_type": "RSA", "key_bits": 2048, "signature": "sha256", "not_after": "2026-11-30T00:00:00",
                            "days_left": 2, "self_signed": True,
                            "subject": "CN=db-replica-eu-west-1.internal.example.com,OU=Database Operations,"
                                       "O=Example Corporation,L=Frankfurt am Main,ST=Hessen,C=DE"}}


@pytest.mark.parametrize("width", [100, 80])
def test_tls_scan_lines_fit(monkeypatch, capsys, width):
    monkeypatch.setenv("COLUMNS", str(width))
    result = _scan()
    changes = ["certificate changed: serial 4f2a -> 9c1b, expiry 2026-11-30 -> 2027-11-30 (RSA 2048, signed sha256)",
               "suite added: TLSv1.2:DHE-RSA-AES256-SHA (grade C: no forward secrecy is not the reason, SHA-1 MAC is)",
               "note: the server now prefers its own order of suites for TLS 1.2; a client offering CBC first gets GCM"]
    tlsscan._print_scan(SimpleNamespace(save_baseline="baselines/postgres_db-replica.json", baseline="b.json"),
                        result, changes, {"kind": "encbench-tls-scan"}, None)
    lines = capsys.readouterr().out.splitlines()
    assert not _too_wide(lines, width), _too_wide(lines, width)
    assert " ".join(result["certificate"]["subject"].split()) in " ".join(" ".join(lines).split())  # every word, in order
    assert [x for x in lines if "DRIFT" in x][0].startswith("  DRIFT  ")


@pytest.mark.parametrize("width", [100, 80])
def test_leak_check_lines_fit(monkeypatch, capsys, width):
    monkeypatch.setenv("COLUMNS", str(width))
    path = "/var/lib/mysql/encbench_leak_check_with_a_long_schema_name/t_canary_table_of_rows.ibd"
    report = LeakReport("mariadb", "file_key_management, innodb_encrypt_tables=ON, innodb_encrypt_log=OFF, "
                        "encrypt_tmp_files=OFF, encrypt_binlog=OFF, aria_encrypt_tables=OFF (the private server)", 32,
                        scanned_files=214, scanned_bytes=1_234_567_890,
                        findings=[Finding(path, "InnoDB tablespace", 3, "SET GLOBAL innodb_encrypt_tables=ON and wait "
                                          "for the encryption threads to rewrite every page (innodb_encryption_threads)")],
                        steps=["INSERT the canary into a table with ENCRYPTED=YES, COMMIT, FLUSH TABLES, SET GLOBAL "
                               "innodb_fast_shutdown=0 and a slow shutdown so every page reaches its file"],
                        notes=["the redo log is not encrypted (innodb_encrypt_log=OFF): a canary written before a "
                               "checkpoint may sit in ib_logfile0 until it is overwritten; it is scanned like the rest"],
                        unchecked=["/var/lib/mysql/#innodb_temp/temp_1.ibt: not checked (permission denied)"],
                        skipped={"/tmp": 12_345})
    leakcheck._print_report(report)
    lines = capsys.readouterr().out.splitlines()
    assert not _too_wide(lines, width), _too_wide(lines, width)
    assert any(path in x for x in lines)  # the path whole
    assert lines[0].startswith("Summary: ")
