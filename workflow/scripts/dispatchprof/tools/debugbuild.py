"""The DEBUG_CLOCK_ON build of the debugclock stage: a second copy of the library, never over the baseline build.

The repository is checked out again under results/ (``git worktree add --detach`` at HEAD when it is a git
repository, else a copy without its build outputs), built there with DEBUG_CLOCK_ON=ON, and the baseline's
libraries are checked against the build record's sha256 afterwards: a build that installs in place would otherwise
let the instrumented library into every later stage. When they differ, the record's copies are restored and
checked again. Whether the stage makes that build at all is ``decide`` (debugclock.when).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from dispatchprof.shell.atomic import copy_under_umask, umask
from dispatchprof.tools.building import fingerprint, run_build
from dispatchprof.shell.gitref import RefError, repo_prefix, resolve_ref
from dispatchprof.tools.toolchain import Toolchain, build_worktree, source_repo

COPY_IGNORE = shutil.ignore_patterns("build", "__pycache__", "*.pyc", ".pytest_cache")


def decide(when: str, pmu_state: str | None, pmu_reason: str | None) -> tuple[bool, str]:
    """Whether the collect stage makes the DEBUG build and runs, and why (debugclock.when)."""
    if when == "never":
        return False, "debugclock.when is never"
    if when == "always":
        return True, "debugclock.when is always"
    if pmu_state == "ok":
        return False, "fallback not needed: PMU is ok (debugclock.when: fallback runs only when PMU is not ok)"
    return True, f"fallback: PMU is {pmu_state or 'missing'}" + (f" ({pmu_reason})" if pmu_reason else "")


@dataclass
class DebugTree:
    path: Path
    how: str  # "git worktree" | "copy"
    notes: list[str] = field(default_factory=list)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=300)


def make_tree(repo: Path, dest: Path, ref: str | None = None) -> DebugTree:
    """A fresh checkout of ``repo`` at ``dest`` (an earlier one is removed first): a detached git worktree at
    ``ref`` (a resolved sha: deepep.ref's commit, for the build stage and the DEBUG build of a side that names one)
    or, without a ref, at HEAD when ``repo`` is a git repository, else a copy. With a ref, ``repo`` may be a
    subdirectory of its git repository (the stand-in): the worktree holds the whole repository and the returned
    path is ``repo``'s place in it."""
    dest = dest.resolve()
    is_git = ref is not None or (repo / ".git").exists()
    if dest.exists():
        if is_git:
            _git(repo, "worktree", "remove", "--force", str(dest))
        shutil.rmtree(dest, ignore_errors=True)
    if is_git:
        _git(repo, "worktree", "prune")
        dest.parent.mkdir(parents=True, exist_ok=True)
        done = _git(repo, "worktree", "add", "--detach", str(dest), ref or "HEAD")
        if done.returncode != 0:
            raise RuntimeError(f"git worktree add {dest} {ref or 'HEAD'} failed: {done.stderr.strip()}")
        if ref is not None:
            return DebugTree(dest / repo_prefix(repo), "git worktree", [f"the worktree is deepep.ref's commit {ref}"])
        dirty = _git(repo, "status", "--porcelain", "--untracked-files=no").stdout.strip()
        notes = (
            [f"the worktree is HEAD; {repo} has uncommitted changes the DEBUG build does not contain"] if dirty else []
        )
        return DebugTree(dest, "git worktree", notes)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(repo, dest, ignore=COPY_IGNORE, symlinks=True, copy_function=copy_under_umask)
    for folder in [dest, *(p for p in dest.rglob("*") if p.is_dir() and not p.is_symlink())]:
        folder.chmod(folder.stat().st_mode & 0o7777 & ~umask())  # copytree gives folders the source's mode
    return DebugTree(dest, "copy", [f"{repo} is not a git repository: copied without its build outputs"])


def checkout_ref(config: Mapping[str, Any], chain: Toolchain) -> dict[str, Any]:
    """deepep.ref checked out (detached worktree, the DEBUG build's mechanism) at results/<experiment>/build/tree:
    the record's ref, its resolved sha and where the build ran. Needs a build command: a checkout has no library."""
    deepep = config["deepep"]
    source = source_repo(config)
    sha = resolve_ref(source, deepep["ref"])
    if not deepep["build_command"]:
        raise RefError(f"deepep.build_command is null: the checkout of {sha} in its own worktree has no library")
    tree = make_tree(source, build_worktree(config), ref=sha)
    if tree.path != chain.repo:
        raise RuntimeError(f"the worktree holds deepep.repo at {tree.path}, not at {chain.repo}")
    return {"ref": deepep["ref"], "sha": sha, "source_repo": str(source), "tree": str(tree.path)}


def build_debug(
    chain: Toolchain,
    tree: DebugTree,
    command: Sequence[str],
    build_env: Mapping[str, str],
    timeout_s: float,
    log_path: Path,
    build_dir: str = "build",
):
    """Build the tree with DEBUG_CLOCK_ON=ON (the baseline's build_env otherwise); the toolchain with repo = tree,
    whose runs import the tree's package under every toolchain (import_root), never whatever is installed."""
    debug_chain = dataclasses.replace(chain, repo=tree.path, import_root=tree.path)
    result = run_build(debug_chain, command, {**build_env, "DEBUG_CLOCK_ON": "ON"}, timeout_s, log_path, build_dir)
    return debug_chain, result


def baseline_intact(repo: Path, globs: Sequence[str], record: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether the baseline's libraries still have the build record's sha256; restored from the record's copies
    when not (then checked again)."""
    expected = {lib["path"]: lib for lib in record.get("libraries", [])}
    if not expected:
        return True, "the build record lists no libraries to check"

    def differing() -> list[str]:
        now = {lib["path"]: lib["sha256"] for lib in fingerprint(repo, globs)}
        return sorted(p for p, lib in expected.items() if now.get(p) != lib["sha256"])

    changed = differing()
    if not changed:
        return True, f"{len(expected)} baseline libraries unchanged (sha256 as in the build record)"
    for path in changed:
        copy = expected[path].get("copy")
        if copy and Path(copy).is_file():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(copy, repo / path)
    still = differing()
    if still:
        return (
            False,
            f"the DEBUG build changed the baseline libraries {still} and "
            "they could not be restored from the build record's copies",
        )
    return (
        True,
        f"the DEBUG build changed {changed} in place; restored from the build record's copies and checked (sha256)",
    )


def loaded_libraries(run_dir: Path) -> dict[str, Any]:
    """What the ranks of one perf-driver run loaded (library/<rank>.json of the runtime): each loaded file's sha256
    with the ranks that loaded it, the package files, and the ranks that could not tell."""
    files: dict[str, dict[str, Any]] = {}
    modules: set[str] = set()
    unknown = []
    for record in sorted((run_dir / "library").glob("*.json")):
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError) as exc:
            unknown.append(f"{record.name}: unreadable ({exc})")
            continue
        if data.get("error") or not data.get("file"):
            unknown.append(f"{record.stem}: {data.get('error', 'no package file')}")
            continue
        modules.add(data["file"])
        for entry in data.get("files", []):
            seen = files.setdefault(entry["path"], {"sha256": set(), "ranks": []})
            seen["sha256"].add(entry["sha256"])
            seen["ranks"].append(record.stem)
    return {
        "modules": sorted(modules),
        "files": {p: {"sha256": sorted(f["sha256"]), "ranks": len(f["ranks"])} for p, f in sorted(files.items())},
        "unknown": unknown,
    }


def imported_from_tree(
    loaded: Mapping[str, Any], tree: Path, run: str = "the ON run", build: str = "the DEBUG build"
) -> tuple[bool, str]:
    """Whether every rank of the ON run imported the package from the DEBUG build's checkout (the sentence says
    which files, with their sha256, either way)."""
    root = str(tree.resolve())
    outside = [m for m in loaded["modules"] if not (m == root or m.startswith(root + "/"))]
    shown = "; ".join(f"{p} sha256 {', '.join(f['sha256'])}" for p, f in loaded["files"].items()) or "no file named"
    if not loaded["modules"]:
        return False, f"no rank named the package it imported ({'; '.join(loaded['unknown']) or 'no library/*.json'})"
    if outside:
        return (
            False,
            f"{run} imported {', '.join(outside)}, not {build}'s "
            f"checkout {root}: {'its clocks would time' if build == 'the DEBUG build' else 'it would measure'} "
            f"another build ({shown})",
        )
    return True, f"every rank imported the package from {root} ({shown})" + (
        f"; {len(loaded['unknown'])} ranks did not say" if loaded["unknown"] else ""
    )


def imported_own_build(loaded: Mapping[str, Any], record: Mapping[str, Any], tree: Path) -> tuple[bool, str]:
    """Whether every rank of a run of a side with deepep.ref imported that side's build: the package from the build
    stage's checkout and every loaded file the build record fingerprinted with the record's sha256 (at least one:
    a run that names no built library proves nothing). The sentence names the files and their sha256 either way."""
    ok, where = imported_from_tree(loaded, tree, "the run", f"deepep.ref {record.get('ref')!r}")
    if not ok:
        return False, where
    root = tree.resolve()
    built = {lib["path"]: lib["sha256"] for lib in record.get("libraries", [])}
    matched, wrong = [], []
    for path, seen in loaded["files"].items():
        try:
            rel = str(Path(path).resolve().relative_to(root))
        except ValueError:
            continue
        if rel not in built:
            continue
        (matched if seen["sha256"] == [built[rel]] else wrong).append(
            f"{rel} sha256 {', '.join(seen['sha256'])} (build.json: {built[rel]})"
        )
    ref = f"deepep.ref {record.get('ref')!r} ({str(record.get('sha', '?'))[:12]})"
    if wrong:
        return False, f"the run loaded a library other than {ref}'s build: {'; '.join(wrong)}"
    if not matched:
        return False, (
            f"no loaded file is a library of {ref}'s build record ({sorted(built) or 'it lists none'}): "
            f"the run cannot prove it imported its own build ({where})"
        )
    return True, f"every rank imported {ref}'s build: {'; '.join(matched)}"
