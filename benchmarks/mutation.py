"""Mutation benchmark of the analysis code (by default the cost account's; not part of CI; no test runs it).

mutmut (3.x) mutates, by default, ``analysis/waits/costing.py``, ``naming.py``, ``paces_end.py`` and the what-if
helpers of ``account.py`` (Maxima, top_two, carried; not the ``account()`` reader), or the modules chosen below, and
runs the fast timeline-analysis tests against each mutant; a mutant is killed when a test fails. The score is killed /
every mutant checked (survived, timed out, no tests and the like count against it; only mutants not checked yet are
left out).

mutmut names a mutant after its file's path below the working directory (only a leading ``src/`` is dropped), and
switches a mutant on only where that name equals the function's ``__module__``: the library is imported as
``dispatchprof`` from ``workflow/scripts``, which mutmut cannot map. So this script builds a workspace,
``benchmarks/.mutation/`` (git-ignored; kept for ``mutmut show NAME`` and ``mutmut browse`` there): ``src/dispatchprof``
a copy of the library, ``tests/`` a copy of ``tests/conftest.py`` and ``tests/analysis/``, and the mutmut config
(MUTMUT below), then runs ``mutmut run --max-children 1`` in it. The copied conftest puts ``mutants/workflow/scripts``
on sys.path, which does not exist there, so the tests import mutmut's mutated ``mutants/src/dispatchprof``.

Which modules: by default the cost account's (MUTATED); ``--modules`` any library modules (a repository path
``workflow/scripts/dispatchprof/...``, or below the library: ``analysis/waits/in_kernel.py``); ``--changed REV`` the
analysis modules a change touched (``git diff --name-only REV -- workflow/scripts/dispatchprof/analysis/``, deleted
ones left out); ``--all-waits`` every module of ``analysis/waits/``. The tests are TESTS plus, per module, the test
files named after it (``tests/analysis/test_<module>*.py``) and MODULE_TESTS; ``--tests`` replaces them.

Survivors judged equivalent are listed, with a reason each, in ``benchmarks/mutation_equivalents.yaml`` (module ->
entries of function, ``was`` and ``now``: the lines ``mutmut show`` removes and adds, whitespace ignored; mutmut's
numbers change from run to run, these do not). The summary gives the score with them counted as survivors and
without them, the entries that matched no survivor (stale), and the share of the library's lines in the mutated
modules (their lines / the lines of every module of workflow/scripts/dispatchprof).

    python benchmarks/mutation.py                     # about 20-30 minutes on one core
    python benchmarks/mutation.py --tests tests/analysis/test_waits.py   # another test selection
    python benchmarks/mutation.py --modules analysis/waits/in_kernel.py  # about 5 minutes
    python benchmarks/mutation.py --changed main      # what a branch changed in the analysis
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "workflow" / "scripts" / "dispatchprof"
WORKSPACE = ROOT / "benchmarks" / ".mutation"  # --workspace: another one (two runs must not share one)
EQUIVALENTS = ROOT / "benchmarks" / "mutation_equivalents.yaml"
MUTATED = [  # the default: the cost account's (below the library, as --modules takes them)
    "analysis/waits/costing.py",
    "analysis/waits/naming.py",
    "analysis/waits/account.py",
    "analysis/waits/paces_end.py",
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
# tests of a module not named after it (added to TESTS and the test_<module>*.py files when the module is mutated)
MODULE_TESTS = {"analysis/waits/in_kernel.py": ["tests/analysis/test_spike_owner.py"]}
# a mutant's name: dispatchprof.<module>.x_<function>__mutmut_<n>, or .xǁ<class>ǁ<method>__mutmut_<n>
MUTANT = re.compile(r"^dispatchprof\.(?P<module>.+?)\.x(?:_(?P<function>.+)|ǁ(?P<cls>.+)ǁ(?P<method>.+))__mutmut_\d+$")


def library_path(path: str) -> str:
    """A library module below the library (``analysis/waits/in_kernel.py``), from any spelling: the repository's
    ``workflow/scripts/dispatchprof/...``, the workspace's ``src/dispatchprof/...``, ``dispatchprof/...`` or that."""
    p = Path(path).as_posix().removeprefix("./")
    for prefix in ("workflow/scripts/dispatchprof/", "src/dispatchprof/", "dispatchprof/"):
        p = p.removeprefix(prefix)
    if not p.endswith(".py") or not (LIBRARY / p).is_file():
        sys.exit(f"not a module of workflow/scripts/dispatchprof: {path}")
    return p


def changed_modules(rev: str) -> list[str]:
    """The analysis modules that differ from ``rev`` (the work tree against it; deleted ones left out)."""
    done = subprocess.run(
        ["git", "diff", "--name-only", rev, "--", "workflow/scripts/dispatchprof/analysis/"],
        cwd=ROOT,
        check=False,
        text=True,
        capture_output=True,
    )
    if done.returncode != 0:
        sys.exit(f"git diff {rev} failed: {done.stderr.strip()}")
    names = [n for n in done.stdout.split() if n.endswith(".py") and (ROOT / n).is_file()]
    return [library_path(n) for n in names]


def waits_modules() -> list[str]:
    return sorted(library_path(str(p.relative_to(LIBRARY))) for p in (LIBRARY / "analysis" / "waits").glob("*.py"))


def default_tests(modules: list[str]) -> list[str]:
    """TESTS, each module's test files (tests/analysis/test_<module>*.py) and its MODULE_TESTS, in that order."""
    tests = list(TESTS)
    for m in modules:
        named = sorted(str(t.relative_to(ROOT)) for t in (ROOT / "tests" / "analysis").glob(f"test_{Path(m).stem}*.py"))
        tests += [t for t in named + MODULE_TESTS.get(m, []) if t not in tests]
    return tests


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


def build_workspace(workspace: Path, tests: list[str], modules: list[str]) -> None:
    """A fresh workspace: the library under src/, the analysis tests and their conftest, the config."""
    mutated = ["src/dispatchprof/" + m for m in modules]
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


def mutant_of(name: str) -> tuple[str, str]:
    """A mutant's module (below the library: ``analysis/waits/in_kernel.py``) and function (``Class.method``)."""
    m = MUTANT.match(name)
    if not m:
        return "?", "?"
    module = m["module"].replace(".", "/")
    path = f"{module}.py" if (LIBRARY / f"{module}.py").is_file() else f"{module}/__init__.py"
    return path, m["function"] or f"{m['cls']}.{m['method']}"


def normalised(lines: list[str]) -> str:
    """Lines joined by newlines, each with its whitespace collapsed (indentation does not identify a mutant)."""
    return "\n".join(" ".join(line.split()) for line in lines if line.strip())


def changed_lines(workspace: Path, name: str) -> tuple[str, str]:
    """The lines ``mutmut show`` removes and adds for a mutant (normalised): what identifies it across runs."""
    diff = [
        line for line in mutmut(workspace, "show", name, capture=True).splitlines() if line[:3] not in ("---", "+++")
    ]
    return normalised([x[1:] for x in diff if x[:1] == "-"]), normalised([x[1:] for x in diff if x[:1] == "+"])


def load_equivalents(path: Path) -> dict[str, list[dict[str, str]]]:
    """module -> [{function, was, now, reason}]: the survivors judged equivalent (benchmarks/mutation_equivalents.yaml)."""
    data = yaml.safe_load(path.read_text()) if path.exists() else None
    return data or {}


def matched(workspace: Path, survivors: list[str], listed: dict[str, list[dict[str, str]]]) -> dict[str, tuple]:
    """The survivors the file lists: name -> (module, index of its entry, reason)."""
    found: dict[str, tuple] = {}
    for name in survivors:
        module, function = mutant_of(name)
        entries = listed.get(module) or []
        if not any(e["function"] == function for e in entries):
            continue
        was, now = changed_lines(workspace, name)
        for i, e in enumerate(entries):
            if e["function"] == function and (
                normalised(str(e["was"]).splitlines()),
                normalised(str(e["now"]).splitlines()),
            ) == (was, now):
                found[name] = (module, i, e["reason"])
                break
    return found


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def library_share(modules: list[str]) -> dict[str, float]:
    """The mutated modules' lines against every module's of the library (workflow/scripts/dispatchprof)."""
    total = sum(lines(p) for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts)
    mutated = sum(lines(LIBRARY / m) for m in modules)
    return {"mutated_lines": mutated, "library_lines": total, "share": round(mutated / total, 4)}


def scores(counts: Counter, equivalent: int) -> dict[str, object]:
    """killed / every mutant checked; and the same without the survivors judged equivalent."""
    judged = sum(counts.values()) - counts["not checked"]
    ratio = lambda a, b: a / b if b else float("nan")  # noqa: E731
    return {
        "counts": dict(counts),
        "equivalent": equivalent,
        "score": ratio(counts["killed"], judged),
        "score_without_equivalents": ratio(counts["killed"], judged - equivalent),
    }


def summary(status: dict[str, str], found: dict[str, tuple]) -> dict[str, object]:
    per_module: dict[str, Counter] = {}
    for name, state in status.items():
        per_module.setdefault(mutant_of(name)[0], Counter())[state] += 1
    equivalent = Counter(mutant_of(n)[0] for n in found)
    survivors = sorted(n for n, s in status.items() if s not in ("killed", "not checked"))
    return {
        "mutants": len(status),
        **scores(Counter(status.values()), len(found)),
        "per_module": {m: scores(c, equivalent[m]) for m, c in sorted(per_module.items())},
        "survivors": [n for n in survivors if n not in found],
        "equivalents": {n: found[n][2] for n in sorted(found)},
    }


def report(workspace: Path, modules: list[str], equivalents: Path) -> dict[str, object]:
    """The summary of the workspace's run, with the listed equivalents and the file's entries that matched none."""
    status = statuses(workspace)
    listed = load_equivalents(equivalents)
    found = matched(workspace, [n for n, s in status.items() if s not in ("killed", "not checked")], listed)
    used = {(m, i) for m, i, _ in found.values()}
    stale = [{"module": m, **e} for m in modules for i, e in enumerate(listed.get(m) or []) if (m, i) not in used]
    return {**summary(status, found), "equivalents_unmatched": stale, "modules": modules, **library_share(modules)}


def workspace_modules(workspace: Path) -> list[str]:
    """The modules a workspace's config mutates (its only_mutate, below the library)."""
    config = tomllib.loads((workspace / "pyproject.toml").read_text())
    return [m.removeprefix("src/dispatchprof/") for m in config["tool"]["mutmut"]["only_mutate"]]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--modules", "--mutate", nargs="+", help="library modules to mutate (default: MUTATED)")
    which.add_argument("--changed", metavar="REV", help="the analysis modules that differ from REV (git diff)")
    which.add_argument("--all-waits", action="store_true", help="every module of analysis/waits/")
    parser.add_argument("--tests", nargs="+", help="test files (repository paths under tests/analysis/)")
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS, help="the survivors judged equivalent")
    parser.add_argument("--output", type=Path, help="write the summary as JSON here")
    parser.add_argument(
        "--workspace", type=Path, default=WORKSPACE, help=f"where to build it (default {WORKSPACE.relative_to(ROOT)})"
    )
    parser.add_argument("--summary-only", action="store_true", help="summarise the workspace's last run; run nothing")
    return parser.parse_args()


def chosen_modules(args: argparse.Namespace) -> list[str]:
    if args.changed:
        return changed_modules(args.changed)
    if args.all_waits:
        return waits_modules()
    return [library_path(m) for m in args.modules or MUTATED]


def main() -> None:
    args = arguments()
    workspace = args.workspace.resolve()
    if args.summary_only:
        result = report(workspace, workspace_modules(workspace), args.equivalents)
    else:
        modules = chosen_modules(args)
        if not modules:
            sys.exit(f"no analysis module differs from {args.changed}: nothing to mutate")
        tests = args.tests or default_tests(modules)
        build_workspace(workspace, tests, modules)
        started = time.monotonic()
        mutmut(workspace, "run", "--max-children", "1")
        result = {**report(workspace, modules, args.equivalents), "seconds": round(time.monotonic() - started)}
        result["tests"] = tests
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    print(
        f"score {result['score']:.1%} of {result['mutants']} mutants, {result['score_without_equivalents']:.1%} "
        f"without the {result['equivalent']} judged equivalent; {result['share']:.1%} of the library's lines mutated",
        file=sys.stderr,
    )
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
