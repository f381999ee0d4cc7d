"""The package layout keeps one direction: no import circles, no oversized modules.

The import graph is built from the source (AST), not by importing, so imports
inside functions count too: a lazy import still couples two modules, and a
circle of lazy imports is still a circle a reader has to untangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "gcm_checks"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Modules over MAX_LINES today. This list may only SHRINK: split a module along
# its layers instead of adding it here (issue 16). Counts are physical lines.
MAX_LINES = 500
OVERSIZED_ALLOWED = frozenset({
})

# Import circles still present, each as the set of its modules. This list may
# only SHRINK. (run/launcher <-> run/finish, named in issue 16 and now wrapper/, is gone on
# main; the gcm-run rework of issue 15 keeps the wrapper, its progress watcher
# and its finish step in one direction.)
CYCLES_ALLOWED: frozenset = frozenset()


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _resolve(current: str, is_package: bool, level: int, target: str | None) -> str:
    """Absolute module name of `from <level dots><target> import ...`."""
    if level == 0:
        return target or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    if target:
        base = base + target.split(".")
    return ".".join(base)


def _owning_module(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Our modules that `name` imports anywhere in its body (functions too).

    `from pkg import sub` where sub is a submodule is an edge to pkg.sub (the
    package's __init__ runs too, but an __init__ that only re-exports would
    otherwise make every sibling look circular). Imports under
    `if TYPE_CHECKING:` are skipped: they never run.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for sub in node.body:
                for inner in ast.walk(sub):
                    skip.add(id(inner))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                owner = _owning_module(alias.name, modules)
                if owner:
                    found.add(owner)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    found.add(sub)
                    continue
                owner = _owning_module(base, modules)
                if owner is None:
                    continue
                if (owner == base and modules[owner].name == "__init__.py"
                        and alias.name != "*"
                        and alias.name not in _bound_names(modules[owner])):
                    # `from pkg import optional_module` for a module that is
                    # not installed (guarded by ImportError): it reads
                    # nothing of pkg's __init__, so it is no edge.
                    continue
                found.add(owner)
    found.discard(name)
    return found


def _bound_names(path: Path) -> set[str]:
    """Names a module binds (what `from it import x` can read); names bound
    inside its functions count too, which errs towards seeing an edge."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = all_modules(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components with a real circle only."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def cycle_path(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete circle through the component, for the failure message."""
    members = set(component)
    start = component[0]
    # Breadth-first from start back to start, inside the component.
    previous: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [start]
                    walk = node
                    while walk != start:
                        path.append(walk)
                        walk = previous[walk]
                    path.append(start)
                    return [path[0]] + list(reversed(path[1:-1])) + [start]
                if child not in seen:
                    seen.add(child)
                    previous[child] = node
                    nxt.append(child)
        frontier = nxt
    return component  # unreachable for a real component


def test_graph_sees_lazy_and_relative_imports(tmp_path):
    """The checker itself can fail: a circle made of a function-level relative
    import and a top-level absolute one is found, with its path."""
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("import gcm_checks.c\n")
    (pkg / "c.py").write_text("from gcm_checks import a\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
        "try:\n    from gcm_checks.sub import not_installed\nexcept ImportError:\n    pass\n"
    )
    (pkg / "sub" / "__init__.py").write_text("VALUE = 1\n")
    (pkg / "e.py").write_text("def f():\n    from gcm_checks.sub import VALUE\n")
    graph = import_graph(pkg)
    assert graph["gcm_checks.a"] == {"gcm_checks.sub.b"}
    assert graph["gcm_checks.d"] == set()
    assert graph["gcm_checks.e"] == {"gcm_checks.sub"}
    components = strongly_connected(graph)
    assert components == [["gcm_checks.a", "gcm_checks.c", "gcm_checks.sub.b"]]
    assert cycle_path(graph, components[0]) == [
        "gcm_checks.a", "gcm_checks.sub.b", "gcm_checks.c", "gcm_checks.a"
    ]


def test_no_import_circles():
    graph = import_graph()
    problems = []
    for component in strongly_connected(graph):
        if frozenset(component) in CYCLES_ALLOWED:
            continue
        problems.append(" -> ".join(cycle_path(graph, component))
                        + f"   (component: {', '.join(component)})")
    assert not problems, "import circles:\n" + "\n".join(problems)


def test_allowed_circles_still_exist():
    """An allowed circle that is gone must leave the list (it only shrinks)."""
    present = {frozenset(c) for c in strongly_connected(import_graph())}
    stale = [sorted(c) for c in CYCLES_ALLOWED if c not in present]
    assert not stale, f"remove from CYCLES_ALLOWED, no longer circular: {stale}"


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("name,path", sorted(all_modules().items()))
def test_module_size(name, path):
    lines = _line_count(path)
    if name in OVERSIZED_ALLOWED:
        return
    assert lines <= MAX_LINES, (
        f"{name} has {lines} lines (> {MAX_LINES}): split it along its layers")


def test_oversized_allow_list_only_shrinks():
    """A module that got under the limit must leave the allow-list."""
    modules = all_modules()
    stale = sorted(n for n in OVERSIZED_ALLOWED
                   if n not in modules or _line_count(modules[n]) <= MAX_LINES)
    assert not stale, f"remove from OVERSIZED_ALLOWED, now small or gone: {stale}"
