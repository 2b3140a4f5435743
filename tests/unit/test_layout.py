"""The library's layout: packages that say what each part does, imported one way, and thin entry scripts.

The direction, bottom to top (a module may import its own package and the packages before it):
node (runs on a node, standard library only) < formats (parsers) < shell (config, status, atomic writes, StageRun)
< analysis (tables to findings) < report (findings to pages) < tools (runs the test and the vendor's tools)
< stages (one module per stage: the orchestration the entry scripts call).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from conftest import ROOT

SCRIPTS = ROOT / "workflow" / "scripts"
LIBRARY = SCRIPTS / "dispatchprof"
LAYERS = ("node", "formats", "shell", "analysis", "report", "tools", "stages")
ENTRY_SCRIPT_MAX_LINES = 80
FUNCTION_MAX_LINES = 100  # a function a reader can hold on one screen or two


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SCRIPTS).with_suffix("").parts).removesuffix(".__init__")


def type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:``: they name a type and never load the module."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            found |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return found


def imports_of(path: Path) -> list[tuple[str, bool]]:
    """Every library module ``path`` imports (absolute or relative, at the top or inside a function), each with
    whether it is loaded at run time (False under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    typing_only = type_checking_only(tree)
    package = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            if base.startswith("dispatchprof"):
                # `from dispatchprof.report import plots` imports the submodule dispatchprof.report.plots
                targets = [
                    f"{base}.{a.name}"
                    if (LIBRARY.parent / f"{base}.{a.name}".replace(".", "/")).with_suffix(".py").is_file()
                    else base
                    for a in node.names
                ]
                found += [(t, id(node) not in typing_only) for t in targets]
        elif isinstance(node, ast.Import):
            found += [(a.name, id(node) not in typing_only) for a in node.names if a.name.startswith("dispatchprof")]
    return found


def library_graph(runtime_only: bool) -> dict[str, set[str]]:
    return {
        module_name(path): {target for target, runtime in imports_of(path) if runtime or not runtime_only}
        for path in LIBRARY.rglob("*.py")
    }


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else None


def test_no_module_of_the_library_imports_itself_back_through_others_type_imports_included():
    graph = library_graph(runtime_only=False)

    def cycle_from(start: str, node: str, seen: set[str]) -> list[str] | None:
        for nxt in graph.get(node, ()):
            if nxt == start:
                return [node, nxt]
            if nxt not in seen:
                seen.add(nxt)
                found = cycle_from(start, nxt, seen)
                if found:
                    return [node, *found]
        return None

    assert {m: cycle_from(m, m, set()) for m in graph if cycle_from(m, m, set())} == {}


def test_every_package_imports_only_itself_and_the_packages_below_it():
    wrong = []
    for module, targets in library_graph(runtime_only=True).items():
        here = layer(module)
        for target in targets:
            there = layer(target)
            if here is None or there is None:
                wrong.append(f"{module} -> {target}: outside the packages {LAYERS}")
            elif LAYERS.index(there) > LAYERS.index(here):
                wrong.append(f"{module} ({here}) -> {target} ({there}): upwards")
    assert wrong == []


def test_the_node_side_files_import_only_the_standard_library_and_each_other():
    """They run as sibling scripts in the cluster's Python (python node_wrapper.py), where nothing is installed."""
    for path in (LIBRARY / "node").glob("*.py"):
        assert {layer(t) for t, _ in imports_of(path)} <= {"node"}, path


def test_the_library_root_holds_only_its_packages():
    assert sorted(p.name for p in LIBRARY.glob("*.py")) == ["__init__.py"]
    assert sorted(p.name for p in LIBRARY.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS)


def test_entry_scripts_stay_thin():
    """An entry script reads the snakemake object, calls one library function per stage, writes the outputs: the
    orchestration lives in dispatchprof/stages/, where it is tested without Snakemake."""
    long = {p.name: n for p in SCRIPTS.glob("*.py") if (n := len(p.read_text().splitlines())) > ENTRY_SCRIPT_MAX_LINES}
    assert long == {}


def test_no_library_function_is_longer_than_a_reader_can_hold():
    """Every function of the library, nested ones included, from its def (decorators aside) to its last line."""
    long = {
        f"{path.relative_to(LIBRARY)}:{node.name}": node.end_lineno - node.lineno + 1
        for path in LIBRARY.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > FUNCTION_MAX_LINES
    }
    assert long == {}


def test_every_sqlite_database_is_opened_by_read_only_db():
    """A user's msprof db is read in place: mode=ro writes a WAL db's -shm (and fails on a read-only share), so the
    one opener is formats/sqlite_read.read_only_db. (The simulator's writer, workflow/sim, writes its own dbs.)"""
    opened = sorted(str(p.relative_to(SCRIPTS)) for p in SCRIPTS.rglob("*.py") if "sqlite3.connect(" in p.read_text())
    assert opened == ["dispatchprof/formats/sqlite_read.py"]


def test_the_design_the_code_cites_is_in_the_repository():
    """A user who clones the project has docs/, not the team's notes beside it: no tracked file outside the fixtures
    (whose SOURCE notes record where each file came from) points at them, and the docs the code cites exist."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split(
        "\n"
    )
    pattern = "shared/" + "(DESIGN|STYLE|formats)"  # split so that this test does not find itself
    pointing = [
        f
        for f in tracked
        if f
        and not f.startswith("tests/fixtures/")
        and (ROOT / f).is_file()
        and re.search(pattern, (ROOT / f).read_text(errors="replace"))
    ]
    assert pointing == []
    for doc in ("architecture.md", "formats.md", "glossary.md"):
        assert (ROOT / "docs" / doc).is_file()
