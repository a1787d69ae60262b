"""The package's import graph has no cycle (issue 26).

Every ``refimpl`` module is imported, and the imports each one's source
names (at module level and inside functions alike: an import deferred into
a function to dodge a circle is still a circle) form a graph that must be
acyclic, so that the modules stack in layers: e.g. the loader
(:mod:`refimpl.data`) and the data-set manager (:mod:`refimpl.datasets`)
both find a fold's files through :mod:`refimpl._layout` and hash and write
files through :mod:`refimpl._io`, and no longer import each other.
"""

import ast
import importlib
from pathlib import Path

import pytest

import refimpl

ROOT = Path(refimpl.__file__).parent


def _modules():
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = _modules()


def _imports(name):
    """The refimpl modules that module ``name`` imports, anywhere in its source."""
    path, is_package = MODULES[name]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: None if is_package else -1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if sub in MODULES else target)
    return {m for m in out if m in MODULES and m != name}


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
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
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)


def test_the_import_graph_has_no_cycle():
    graph = {name: _imports(name) for name in MODULES}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_data_and_datasets_do_not_import_each_other_both_ways():
    assert not ("refimpl.data" in _imports("refimpl.datasets")
                and "refimpl.datasets" in _imports("refimpl.data"))
    assert "refimpl.data" not in _imports("refimpl.datasets")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_star_import_finds_every_public_name(name):
    """``from <package> import *`` works: every name of ``__all__`` exists."""
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ lists names it does not define: {missing}"
    namespace = {}
    exec(f"from {name} import *", namespace)


@pytest.mark.parametrize("name, shim", [
    ("refimpl.solvers", "ScaledSmooth"),
    ("refimpl.solvers.apg", "ScaledSmooth"),
    ("refimpl.experiments", "LambdaMART"),
    ("refimpl.experiments", "LinearRegressionRanker"),
])
def test_no_re_export_shims(name, shim):
    """Each class has one home (losses/, estimators/); no second import path."""
    assert not hasattr(importlib.import_module(name), shim)
