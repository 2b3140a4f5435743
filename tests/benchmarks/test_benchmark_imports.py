"""The benchmarks' imports of each other form a tree: no module imports one that imports it back, at any depth and
wherever the import stands (an import inside a function is a cycle all the same, one that waits for its first call)."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def benchmark_imports(path: Path, modules: set[str]) -> set[str]:
    """The benchmark modules ``path`` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found & modules


def import_graph(folder: Path) -> dict[str, set[str]]:
    modules = {path.stem for path in folder.glob("*.py")}
    return {path.stem: benchmark_imports(path, modules) for path in sorted(folder.glob("*.py"))}


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph (its modules, the first again at the end), or None."""
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        for imported in sorted(graph[module]):
            found = walk(imported, path + [module])
            if found:
                return found
        done.add(module)
        return None

    return next(filter(None, (walk(module, []) for module in graph)), None)


def test_the_cycle_finder_finds_a_cycle_and_passes_a_tree():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) in (["a", "b", "c", "a"], ["b", "c", "a", "b"])
    assert cycle_in({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_benchmarks_imports_form_no_cycle():
    graph = import_graph(BENCH)
    assert {"localisation", "pmu_gate", "debugclock_gate", "_event_model"} <= set(graph)
    assert {"pmu_gate", "debugclock_gate"} <= graph["localisation"]  # the edges this test is about are seen
    cycle = cycle_in(graph)
    assert cycle is None, f"benchmarks/ import cycle: {' -> '.join(cycle)}"
