"""Generate the perf driver from the repository's V2 test, by syntax tree rather than line numbers.

The single statement that calls ``baseline.dispatch_call`` (default ``buffer.dispatch``) is replaced by a
loop (template ``perf_loop.py.j2``) that runs inside ``<buffer>.profile_dispatch_latency(...)``; the rest of
the test (initialisation, inputs, the precision check of the last result, teardown) stays as written.
At the start of the per-rank function (the one passed to ``spawn``), ``RANK_ID`` is set to the global rank
so profilers record it. Only the located lines change: the diff against the test stays small and readable.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

RUNTIME_MODULE = "dispatchprof_perf_runtime"


class PatchError(ValueError):
    """The test cannot be patched as asked (the message names the file and what was searched)."""


@dataclass
class PatchResult:
    source: str
    diff: str
    dispatch_line: int
    spawn_function: str | None
    notes: list[str] = field(default_factory=list)


def _dispatch_statements(tree: ast.AST, callee: str) -> list[ast.stmt]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.Expr) and isinstance(node.value, ast.Call):
            if ast.unparse(node.value.func) == callee:
                found.append(node)
    return found


def _spawned_function(tree: ast.Module) -> ast.FunctionDef | None:
    """The function the test passes to mp.spawn / torch.multiprocessing.spawn (first positional or fn=)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name != "spawn":
                continue
            target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "fn"), None)
            if isinstance(target, ast.Name):
                names.add(target.id)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    return functions[0] if len(functions) == 1 else None


def _header_line(tree: ast.Module) -> int:
    """0-based line index after the module docstring and __future__ imports: where our imports may go."""
    line = 0
    for node in tree.body:
        is_doc = (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        )
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_doc or is_future:
            line = node.end_lineno or node.lineno
        else:
            break
    return line


def _indent(text: str, prefix: str) -> list[str]:
    return [(prefix + line) if line.strip() else "" for line in text.splitlines()]


def patch_test(
    source: str, path: str, callee: str, render_loop: Callable[[dict[str, str]], str], ranks_per_node: int
) -> PatchResult:
    """Return the driver source; raise PatchError when the dispatch statement is not exactly one."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise PatchError(f"{path}: line {exc.lineno}: not valid Python ({exc.msg})") from exc
    statements = _dispatch_statements(tree, callee)
    if len(statements) != 1:
        where = ", ".join(f"line {s.lineno}" for s in statements)
        raise PatchError(
            f"{path}: expected exactly one statement calling {callee}(...) "
            f"(baseline.dispatch_call), found {len(statements)}" + (f" at {where}" if where else "")
        )
    stmt = statements[0]
    call = stmt.value
    assert isinstance(call, ast.Call)
    lines = source.splitlines()
    indent = lines[stmt.lineno - 1][: stmt.col_offset]
    if isinstance(stmt, ast.Assign):
        assignment = " = ".join(ast.get_source_segment(source, t) or ast.unparse(t) for t in stmt.targets) + " = "
    elif isinstance(stmt, ast.AnnAssign):
        assignment = (ast.get_source_segment(source, stmt.target) or ast.unparse(stmt.target)) + " = "
    else:
        assignment = ""
    star = [k.value for k in call.keywords if k.arg is None]
    routing_arg = (
        ast.unparse(star[0])
        if len(star) == 1
        else "{" + ", ".join(f"{k.arg!r}: {ast.unparse(k.value)}" for k in call.keywords if k.arg) + "}"
    )
    loop = render_loop(
        {
            # One line: it goes into a comment.
            "original": " ".join((ast.get_source_segment(source, stmt) or ast.unparse(stmt)).split()),
            "buffer": ast.unparse(call.func.value) if isinstance(call.func, ast.Attribute) else "buffer",
            "assignment": assignment,
            "call": ast.get_source_segment(source, call) or ast.unparse(call),
            "routing_arg": routing_arg,
        }
    )
    # Edits as (start, end, new lines) on the original numbering, applied bottom-up.
    edits: list[tuple[int, int, list[str]]] = [(stmt.lineno - 1, stmt.end_lineno or stmt.lineno, _indent(loop, indent))]

    notes: list[str] = []
    function = _spawned_function(tree)
    spawn_name = None
    if function is not None and function.args.args:
        local_rank = function.args.args[0].arg
        first = function.body[0]
        has_doc = (
            isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
        )
        anchor = function.body[1] if has_doc and len(function.body) > 1 else first
        body_indent = lines[anchor.lineno - 1][: anchor.col_offset]
        insert_at = (first.end_lineno or first.lineno) if has_doc else first.lineno - 1
        rank_id = (
            f'{body_indent}_dp_os.environ["RANK_ID"] = str(int(_dp_os.environ.get("RANK", '
            f'"0")) * {ranks_per_node} + int({local_rank}))'
            "  # dispatchprof: profilers record the global rank"
        )
        edits.append((insert_at, insert_at, [rank_id]))
        spawn_name = function.name
    else:
        notes.append(
            f"{path}: no single function passed to spawn(...) was found; "
            "RANK_ID is not set, ranks rely on the identity sidecar"
        )

    test_dir = str(Path(path).resolve().parent)
    header = [
        "import os as _dp_os  # dispatchprof",
        "import sys as _dp_sys  # dispatchprof",
        "_dp_sys.path[:0] = [_dp_os.path.dirname(_dp_os.path.abspath(__file__)), "
        + repr(test_dir)
        + "]  # dispatchprof: runtime, then the test's own directory",
        '_dp_sys.path[:0] = [_dp_os.environ["DISPATCHPROF_IMPORT_ROOT"]] '
        'if _dp_os.environ.get("DISPATCHPROF_IMPORT_ROOT") else []'
        "  # dispatchprof: the DEBUG build's checkout first",
        f"import {RUNTIME_MODULE} as _dp_rt  # noqa: E402  dispatchprof",
        "import torch  # noqa: E402  dispatchprof: torch.npu.synchronize() after each call",
    ]
    at = _header_line(tree)
    edits.append((at, at, header))
    new_lines = list(lines)
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        new_lines[start:end] = replacement
    driver = "\n".join(new_lines) + "\n"
    try:
        ast.parse(driver)
    except SyntaxError as exc:  # a bug here, not in the user's test
        raise AssertionError(f"generated driver does not parse: {exc}") from exc
    diff = "".join(
        difflib.unified_diff(source.splitlines(True), driver.splitlines(True), fromfile=path, tofile="perf_driver.py")
    )
    return PatchResult(driver, diff, stmt.lineno, spawn_name, notes)
