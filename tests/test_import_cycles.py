"""No import circle among the engine's modules, nor among the visualizer's (issue 23).

Every ``import`` and ``from ... import`` counts, at module level or inside a function (a lazy
import is still a dependency: it only hides the circle until run time). ``from . import x``
depends on the module ``x`` when there is one, else on the package. A package depends on what
its ``__init__`` imports. On a circle the test names its modules and the import lines that
close it, so that the shared piece can be moved below both sides.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def modules(package: str) -> dict:
    """{dotted name: path} of every module of ``package``."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _resolve(mods, current, level, module):
    if level == 0:
        return module or ""
    base = current.split(".")
    if mods[current].name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def import_graph(package: str) -> dict:
    """{module: {imported module: line}} within ``package``."""
    mods = modules(package)
    graph = {m: {} for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mods, name, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].setdefault(t, node.lineno)
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


@pytest.mark.parametrize("package", ["engine", "visualizer"])
def test_no_import_circle(package):
    graph = import_graph(package)
    found = cycles(graph)
    lines = []
    for comp in found:
        members = set(comp)
        lines.append(" <-> ".join(comp))
        for m in comp:
            for t, lineno in sorted(graph[m].items()):
                if t in members:
                    lines.append(f"    {m} (line {lineno}) imports {t}")
    assert not found, "import circles:\n" + "\n".join(lines)


def test_the_checker_finds_a_circle():
    """The walk itself: a circle through a lazy import and a package is found."""
    graph = {"a": {"b": 1}, "b": {"c": 3}, "c": {"a": 9}, "d": {"a": 2}, "e": {}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b": 1}, "b": {}}) == []
    engine = import_graph("engine")
    # a function-level import is an edge (engine.framework.runtime imports resourcefit lazily)
    assert "engine.resourcefit" in engine["engine.framework.runtime"]
    # ``from . import x`` is an edge to the module x
    assert "engine.yamlload" in engine["engine.scenario"]
