"""No import cycle in src/encbench (issue 13): the imports are read with `ast`, nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PKG = SRC / "encbench"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__)."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _imports(name: str, path: Path, is_pkg: bool, modules) -> dict[str, int]:
    """The encbench modules `name` imports -> the line of the first such import.

    Every import counts, at module level or inside a function: an import moved into a function
    does not remove a cycle, it only hides it until that function runs (issue 13 names a cycle
    held together by such a late import). `from pkg import x` is an edge to the module pkg.x
    when x is a module, else to pkg. Importing a submodule also runs its parent packages'
    __init__ first, so that is an edge too (issue 29: workloads/__init__ -> workloads/base ->
    engines/__init__ -> an engine -> workloads/oltp was a live cycle this test did not see); only
    the packages that hold `name` itself are left out (a package's modules import their siblings,
    and its __init__ imports them, by construction).
    """
    out: dict[str, int] = {}
    own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}

    def add(target: str, line: int) -> None:
        if target in modules and target != name:
            out.setdefault(target, line)
        parts = target.split(".")
        for i in range(2, len(parts)):  # the parent packages' __init__, run first (encbench's own is the root)
            parent = ".".join(parts[:i])
            if parent in modules and parent not in own:
                out.setdefault(parent, line)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            for target in from_targets(name, is_pkg, node, modules):
                add(target, node.lineno)
    return out


def from_targets(name: str, is_pkg: bool, node: ast.ImportFrom, modules) -> list[str]:
    """The modules a `from X import a, b` in module `name` names: X.a where X.a is a module, else X (relative
    imports resolved against `name`'s package)."""
    if node.level:
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    return [f"{mod}.{alias.name}" if f"{mod}.{alias.name}" in modules else mod for alias in node.names]


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, is_pkg, modules) for name, (path, is_pkg) in modules.items()}
    cycles = _cycles(graph)
    lines = [f"{a} -> {b} (line {graph[a][b]})" for comp in cycles for a in comp for b in graph[a] if b in comp]
    assert not cycles, "import cycles in src/encbench:\n  " + "\n  ".join(lines)


def test_the_cycle_finder_finds_a_late_import_cycle(tmp_path):
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import x\n")
    mods = {"p.a": (tmp_path / "a.py", False), "p.b": (tmp_path / "b.py", False)}
    graph = {n: _imports(n, p, k, mods) for n, (p, k) in mods.items()}
    assert _cycles(graph) == [["p.a", "p.b"]]


def test_the_cycle_finder_counts_a_package_init(tmp_path):
    """p.a imports p.q.b: p/q/__init__ runs first, and it imports p.a back: a cycle through __init__."""
    (tmp_path / "a.py").write_text("from .q.b import x\n")
    (tmp_path / "init.py").write_text("from ..a import y\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    mods = {"p.a": (tmp_path / "a.py", False), "p.q": (tmp_path / "init.py", True), "p.q.b": (tmp_path / "b.py", False)}
    graph = {n: _imports(n, p, k, mods) for n, (p, k) in mods.items()}
    assert _cycles(graph) == [["p.a", "p.q"]]
