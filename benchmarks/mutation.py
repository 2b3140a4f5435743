"""Mutation benchmark of the cost account's costing and naming code (not part of CI; no test runs it).

mutmut (3.x) mutates ``analysis/waits/costing.py``, ``naming.py`` and the what-if helpers of ``account.py`` (Maxima,
top_two, carried; not the ``account()`` reader) and runs the fast timeline-analysis tests against each mutant; a mutant
is killed when a test fails. The score is killed / (killed + survived + timed out).

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
WORKSPACE = ROOT / "benchmarks" / ".mutation"
MUTATED = ["src/dispatchprof/analysis/waits/costing.py", "src/dispatchprof/analysis/waits/naming.py", "src/dispatchprof/analysis/waits/account.py"]
# account.py: only the what-if helpers; the reader of the launches (account()) and its record are not costing
NOT_MUTATED_LINES = [r"^def account\(", r"^class Account\b"]
# the fast tests that exercise the cost account (a few seconds each mutant); test_costing_mutants.py is the one written
# for this benchmark
TESTS = ["tests/analysis/test_waits.py", "tests/analysis/test_own_work_costs.py", "tests/analysis/test_costing_mutants.py"]


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def config(tests: list[str]) -> str:
    """The workspace's pyproject.toml: mutmut's settings, and pytest's (the repository's addopts are not wanted)."""
    return "\n".join(
        [
            "[tool.mutmut]",
            'source_paths = ["src/"]',
            f"only_mutate = {toml_list(MUTATED)}",
            f"do_not_mutate_patterns = {toml_list(NOT_MUTATED_LINES)}",
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
            # -n 0: one process (the conftest needs xdist loaded, not running); -x: the first failure kills
            'pytest_add_cli_args = ["-n", "0", "-x", "-q", "-p", "no:cacheprovider"]',
            "use_git_change_detection = false",
            "",
            "[tool.pytest.ini_options]",
            'addopts = ""',
            "",
        ]
    )


def build_workspace(tests: list[str]) -> None:
    """A fresh workspace: the library under src/, the analysis tests and their conftest, the config."""
    if WORKSPACE.exists():
        shutil.rmtree(WORKSPACE)
    (WORKSPACE / "tests").mkdir(parents=True)
    shutil.copytree(ROOT / "workflow" / "scripts" / "dispatchprof", WORKSPACE / "src" / "dispatchprof", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "tests" / "conftest.py", WORKSPACE / "tests" / "conftest.py")
    shutil.copytree(ROOT / "tests" / "analysis", WORKSPACE / "tests" / "analysis", ignore=shutil.ignore_patterns("__pycache__"))
    missing = [t for t in tests if not (WORKSPACE / t).exists()]
    if missing:
        sys.exit(f"test files not found: {missing}")
    (WORKSPACE / "pyproject.toml").write_text(config(tests))


def mutmut(*args: str, capture: bool = False) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    done = subprocess.run([str(exe), *args], cwd=WORKSPACE, check=False, text=True, capture_output=capture)
    if done.returncode != 0:
        sys.exit(f"mutmut {' '.join(args)} failed ({done.returncode}){': ' + done.stderr[-2000:] if capture else ''}")
    return done.stdout if capture else ""


def statuses() -> dict[str, str]:
    """Every mutant's status, from ``mutmut results --all true`` (lines ``    name: status``)."""
    out = mutmut("results", "--all", "true", capture=True)
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s*(\S+__mutmut_\d+): (.+)$", out, re.M)}


def summary(status: dict[str, str]) -> dict[str, object]:
    counts = Counter(status.values())
    judged = counts["killed"] + counts["survived"] + counts["timeout"]
    per_file: dict[str, Counter] = {}
    for name, state in status.items():
        per_file.setdefault(name.split(".x")[0], Counter())[state] += 1
    return {
        "mutants": len(status),
        "counts": dict(counts),
        "score": counts["killed"] / judged if judged else float("nan"),
        "per_module": {k: dict(v) for k, v in sorted(per_file.items())},
        "survivors": sorted(n for n, s in status.items() if s in ("survived", "timeout")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", nargs="+", default=TESTS, help="test files (repository paths under tests/analysis/)")
    parser.add_argument("--output", type=Path, help="write the summary as JSON here")
    args = parser.parse_args()
    build_workspace(args.tests)
    started = time.monotonic()
    mutmut("run", "--max-children", "1")
    result = summary(statuses())
    result["seconds"] = round(time.monotonic() - started)
    result["tests"] = args.tests
    text = json.dumps(result, indent=1)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
