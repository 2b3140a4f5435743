"""Mutation benchmark of the cost account's costing and naming code (not part of CI; no test runs it).

mutmut (3.x) mutates ``analysis/waits/costing.py``, ``naming.py``, ``paces_end.py`` and the what-if helpers of
``account.py`` (Maxima, top_two, carried; not the ``account()`` reader) and runs the fast timeline-analysis tests
against each mutant; a mutant is killed when a test fails. The score is killed / every mutant checked (survived,
timed out, no tests and the like count against it; only mutants not checked yet are left out).

mutmut names a mutant after its file's path below the working directory (only a leading ``src/`` is dropped), and
switches a mutant on only where that name equals the function's ``__module__``: the library is imported as
``dispatchprof`` from ``workflow/scripts``, which mutmut cannot map. So this script builds a workspace,
``benchmarks/.mutation/`` (git-ignored; kept for ``mutmut show NAME`` and ``mutmut browse`` there): ``src/dispatchprof``
a copy of the library, ``tests/`` a copy of ``tests/conftest.py`` and ``tests/analysis/``, and the mutmut config
(MUTMUT below), then runs ``mutmut run --max-children 1`` in it. The copied conftest puts ``mutants/workflow/scripts``
on sys.path, which does not exist there, so the tests import mutmut's mutated ``mutants/src/dispatchprof``.

    python benchmarks/mutation.py                     # about 20-30 minutes on one core
    python benchmarks/mutation.py --tests tests/analysis/test_waits.py   # another test selection
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = ROOT / "benchmarks" / ".mutation"  # --workspace: another one (two runs must not share one)
MUTATED = [
    "src/dispatchprof/analysis/waits/costing.py",
    "src/dispatchprof/analysis/waits/naming.py",
    "src/dispatchprof/analysis/waits/account.py",
    "src/dispatchprof/analysis/waits/paces_end.py",
]
# account.py: only the what-if helpers (top_two, Maxima, carried); the reader of the launches (the Account record and
# account()) is not costing. mutmut's do_not_mutate_patterns spares single lines, so the workspace's copy has that span
# between mutmut's pragmas (the repository's file is not changed)
NOT_MUTATED_SPAN = ("src/dispatchprof/analysis/waits/account.py", "@dataclass\nclass Account:", "def top_two(")
# the fast tests that exercise the cost account (a few seconds each mutant); test_costing_mutants.py is the one written
# for this benchmark
TESTS = [
    "tests/analysis/test_waits.py",
    "tests/analysis/test_own_work_costs.py",
    "tests/analysis/test_costing_mutants.py",
    "tests/analysis/test_paces_end.py",
]


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def config(tests: list[str], mutated: list[str]) -> str:
    """The workspace's pyproject.toml: mutmut's settings, and pytest's (the repository's addopts are not wanted)."""
    return "\n".join(
        [
            "[tool.mutmut]",
            'source_paths = ["src/"]',
            f"only_mutate = {toml_list(mutated)}",
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
            # -n 0: one process (the conftest needs xdist loaded, not running); -x: the first failure kills
            'pytest_add_cli_args = ["-n", "0", "-x", "-q", "-p", "no:cacheprovider"]',
            "use_git_change_detection = false",
            # the tests read the benchmarks' settings (benchmarks/_defaults.py) from the schema's defaults
            'also_copy = ["benchmarks/", "workflow/schemas/"]',
            "",
            "[tool.pytest.ini_options]",
            'addopts = ""',
            "",
        ]
    )


def build_workspace(workspace: Path, tests: list[str], mutated: list[str] = MUTATED) -> None:
    """A fresh workspace: the library under src/, the analysis tests and their conftest, the config."""
    if workspace.exists():
        shutil.rmtree(workspace)
    (workspace / "tests").mkdir(parents=True)
    shutil.copytree(
        ROOT / "workflow" / "scripts" / "dispatchprof",
        workspace / "src" / "dispatchprof",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy2(ROOT / "tests" / "conftest.py", workspace / "tests" / "conftest.py")
    shutil.copytree(
        ROOT / "tests" / "analysis", workspace / "tests" / "analysis", ignore=shutil.ignore_patterns("__pycache__")
    )
    (workspace / "benchmarks").mkdir()
    shutil.copy2(ROOT / "benchmarks" / "_defaults.py", workspace / "benchmarks" / "_defaults.py")
    shutil.copytree(ROOT / "workflow" / "schemas", workspace / "workflow" / "schemas")
    path, first, after = NOT_MUTATED_SPAN
    text = (workspace / path).read_text()
    if path not in mutated:
        first = after = ""
    if first:
        assert text.count(first) == 1 and text.count(after) == 1, f"{path}: the span not to mutate has moved"
        text = text.replace(first, "# pragma: no mutate start\n" + first).replace(
            after, "# pragma: no mutate end\n" + after
        )
        (workspace / path).write_text(text)
    missing = [t for t in tests if not (workspace / t).exists()]
    if missing:
        sys.exit(f"test files not found: {missing}")
    (workspace / "pyproject.toml").write_text(config(tests, mutated))


def mutmut(workspace: Path, *args: str, capture: bool = False) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    done = subprocess.run([str(exe), *args], cwd=workspace, check=False, text=True, capture_output=capture)
    if done.returncode != 0:
        sys.exit(f"mutmut {' '.join(args)} failed ({done.returncode}){': ' + done.stderr[-2000:] if capture else ''}")
    return done.stdout if capture else ""


def statuses(workspace: Path) -> dict[str, str]:
    """Every mutant's status, from ``mutmut results --all true`` (lines ``    name: status``), less any of the span not
    to mutate (a workspace built before the pragmas had them)."""
    out = mutmut(workspace, "results", "--all", "true", capture=True)
    found = {m.group(1): m.group(2) for m in re.finditer(r"^\s*(\S+__mutmut_\d+): (.+)$", out, re.M)}
    return {
        name: state for name, state in found.items() if ".account.x_account__" not in name and "ǁAccountǁ" not in name
    }


def summary(status: dict[str, str]) -> dict[str, object]:
    counts = Counter(status.values())
    judged = len(status) - counts["not checked"]
    per_file: dict[str, Counter] = {}
    for name, state in status.items():
        per_file.setdefault(name.split(".x")[0], Counter())[state] += 1
    return {
        "mutants": len(status),
        "counts": dict(counts),
        "score": counts["killed"] / judged if judged else float("nan"),
        "per_module": {k: dict(v) for k, v in sorted(per_file.items())},
        "survivors": sorted(n for n, s in status.items() if s not in ("killed", "not checked")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", nargs="+", default=TESTS, help="test files (repository paths under tests/analysis/)")
    parser.add_argument(
        "--mutate", nargs="+", default=MUTATED, help="library files to mutate (src/dispatchprof/... as in MUTATED)"
    )
    parser.add_argument("--output", type=Path, help="write the summary as JSON here")
    parser.add_argument(
        "--workspace", type=Path, default=WORKSPACE, help=f"where to build it (default {WORKSPACE.relative_to(ROOT)})"
    )
    parser.add_argument("--summary-only", action="store_true", help="summarise the workspace's last run; run nothing")
    args = parser.parse_args()
    workspace = args.workspace.resolve()
    if args.summary_only:
        print(json.dumps(summary(statuses(workspace)), indent=1))
        return
    build_workspace(workspace, args.tests, args.mutate)
    started = time.monotonic()
    mutmut(workspace, "run", "--max-children", "1")
    result = summary(statuses(workspace))
    result["seconds"] = round(time.monotonic() - started)
    result["tests"] = args.tests
    text = json.dumps(result, indent=1)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
