"""The layers hold (issue 29, items 5 and 6): read from the source with `ast`, nothing imported.

- at most one pair of top-level packages imports each other (either way, imports inside functions counted), and
  docs/ARCHITECTURE.md names that pair with its reason;
- at most 30 imports inside functions cross a package boundary, and each says why it is late (start-up time);
- vocab/ imports nothing of encbench's but errors and util;
- an engine's folder never imports another engine's folder (what they share lives in engines/local, drivers/...).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_import_cycles import PKG, _modules, from_targets  # tests/unit is on sys.path (no __init__.py: rootdir-relative)

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"
MAX_LATE = 30
THE_PAIR = ("analysis", "lab")


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _edges() -> list[tuple[str, str, int, bool, Path]]:
    """(importer, imported module, line, inside a function, file) for every encbench import."""
    modules = _modules()
    out = []
    for name, (path, is_pkg) in modules.items():
        tree = ast.parse(path.read_text(), str(path))

        def visit(node, late: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ImportFrom):
                    out.extend((name, target, child.lineno, late, path)
                               for target in from_targets(name, is_pkg, child, modules) if target.startswith("encbench"))
                elif isinstance(child, ast.Import):
                    out.extend((name, a.name, child.lineno, late, path) for a in child.names
                               if a.name.startswith("encbench"))
                visit(child, late or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

        visit(tree, False)
    return out


def _crossing(edges):
    return [e for e in edges if _top(e[0]) and _top(e[1]) and _top(e[0]) != _top(e[1])]


def mutual_pairs(edges) -> set[tuple[str, str]]:
    pairs = {(_top(a), _top(b)) for a, b, *_ in _crossing(edges)}
    return {tuple(sorted(p)) for p in pairs if (p[1], p[0]) in pairs}


def test_at_most_one_pair_of_packages_imports_each_other():
    assert mutual_pairs(_edges()) <= {THE_PAIR}


def test_the_pair_is_named_with_its_reason_in_architecture():
    text = ARCHITECTURE.read_text()
    assert re.search(rf"`{THE_PAIR[0]}/` and `{THE_PAIR[1]}/` import each other", text), \
        "docs/ARCHITECTURE.md must name the one pair of packages that import each other, and why"


def test_few_late_imports_cross_a_package_and_each_says_why():
    late = [e for e in _crossing(_edges()) if e[3]]
    shown = "\n  ".join(f"{p.relative_to(PKG)}:{line} -> {t}" for _, t, line, _, p in late)
    assert len(late) <= MAX_LATE, f"{len(late)} imports inside functions cross a package (at most {MAX_LATE}):\n  {shown}"
    silent = []
    for _, target, line, _, path in late:
        rel = str(path.relative_to(PKG))
        lines = path.read_text().splitlines()
        if "start-up" not in lines[line - 1] and "start-up" not in lines[line - 2]:
            silent.append(f"{rel}:{line} -> {target}")
    assert not silent, ("an import kept inside a function says why, with 'start-up' in its comment (else lift it to "
                        "the top of the module):\n  " + "\n  ".join(silent))


def test_vocab_imports_only_errors_and_util():
    wrong = [f"{a} -> {b}" for a, b, *_ in _edges() if _top(a) == "vocab" and _top(b) not in ("vocab", "errors", "util")]
    assert not wrong, "vocab/ is the bottom package:\n  " + "\n  ".join(wrong)


def test_an_engine_folder_imports_no_other_engine_folder():
    folders = sorted(p.parent.name for p in (PKG / "engines").glob("*/engine.py"))
    assert {"sqlite", "postgres", "mariadb"} <= set(folders)
    wrong = []
    for a, b, line, _, path in _edges():
        pa, pb = a.split("."), b.split(".")
        if len(pa) > 3 and len(pb) > 2 and pa[1] == pb[1] == "engines" and pa[2] in folders and pb[2] in folders \
                and pa[2] != pb[2]:
            wrong.append(f"{path.relative_to(PKG)}:{line} -> {b}")
    assert not wrong, "an engine's folder imports another's (move what they share to engines/local or drivers):\n  " \
        + "\n  ".join(wrong)


def test_the_checks_see_a_mutual_pair_and_a_late_import(tmp_path):
    edges = [("encbench.a.x", "encbench.b.y", 1, False, tmp_path), ("encbench.b.z", "encbench.a.w", 2, True, tmp_path)]
    assert mutual_pairs(edges) == {("a", "b")}
    assert [e[2] for e in _crossing(edges) if e[3]] == [2]
