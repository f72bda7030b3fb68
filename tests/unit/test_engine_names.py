"""No engine named outside engines/ (issue 13 item 2): string literals read with `ast`, nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "encbench"

ENGINE_WORDS = {"sqlite", "postgres", "postgresql", "mariadb", "mysql"}

# Where an engine name may stand as a string literal outside engines/, and why. Keep it short:
# an engine-specific decision belongs to the engine (an attribute or a method).
ALLOWED: dict[str, tuple[set[str], str]] = {
    # the history store keeps encbench's own records in a SQLite file or a PostgreSQL database: its storage
    # backends (URL schemes, SQL dialects), not an engine under test; an engine added to engines/ changes nothing here
    "history/schema.py": ({"sqlite", "postgresql"}, "the store's SQL dialects"),
    "history/store.py": ({"sqlite", "postgresql", "postgres"}, "the store's URL schemes and backends"),
}


def _engine_literals(path: Path) -> list[tuple[int, str]]:
    """(line, word) for every string literal that is, apart from spaces and case, an engine name.

    A literal that *is* a name is a decision (a dict key, a comparison, a default, choices);
    prose that mentions an engine (help, messages, docstrings) is not checked here. f-strings
    are walked piece by piece.
    """
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            word = node.value.strip().lower()
            if word in ENGINE_WORDS:
                out.append((node.lineno, word))
    return out


def test_no_engine_name_outside_engines():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith("engines/"):
            continue
        allowed = ALLOWED.get(rel, ((), ""))[0]
        found += [f"{rel}:{line}: {word!r}" for line, word in _engine_literals(path) if word not in allowed]
    assert not found, ("engine names outside engines/ (make the decision an engine attribute or method):\n  "
                       + "\n  ".join(found))


def test_every_allowed_entry_is_still_needed():
    for rel, (words, _reason) in ALLOWED.items():
        assert words == {w for _, w in _engine_literals(PKG / rel)}, f"{rel}: narrow its entry in ALLOWED"


def test_the_name_check_sees_keys_comparisons_and_fstring_pieces(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""About PostgreSQL."""\n'
                 'X = {"postgres": 1}\n'
                 'if e == "MariaDB":\n    pass\n'
                 'y = f"{x} mysql"\n'
                 'h = "works with sqlite and others"\n')
    assert _engine_literals(f) == [(2, "postgres"), (3, "mariadb"), (5, "mysql")]


# Where a module is imported by a name built at run time, and why: a registry table's rows, never an engine's module
# (an engine's facts are attributes of its ENGINES entry: engines/base.Engine).
IMPORTS_BY_NAME = {"cli/commands.py": "the commands table: each row names its command's module, imported when typed"}
IMPORTERS = {"import_module", "__import__", "spec_from_file_location", "find_spec"}


def _imports_by_name(path: Path) -> list[int]:
    """The lines of every call that imports a module by a name it is given (importlib.import_module(...),
    __import__(...), importlib.util.spec_from_file_location(...))."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in IMPORTERS:
                out.append(node.lineno)
    return out


def test_no_module_is_imported_by_a_name_built_at_run_time_outside_the_commands_table():
    found = [f"{path.relative_to(PKG).as_posix()}:{line}" for path in sorted(PKG.rglob("*.py"))
             if path.relative_to(PKG).as_posix() not in IMPORTS_BY_NAME for line in _imports_by_name(path)]
    assert not found, ("a module imported by a built name (declare what is needed on the registry entry instead):\n  "
                       + "\n  ".join(found))
    assert all(_imports_by_name(PKG / rel) for rel in IMPORTS_BY_NAME), "narrow IMPORTS_BY_NAME"
