"""deepep.ref: a commit, tag or branch of deepep.repo, resolved to the commit it names.

Every git call is an argument list (never a shell string), so a ref from the config is only ever a ref to git.
deepep.repo may be a subdirectory of its git repository (the simulator's stand-in lives in the workflow's own
repository): ``prefix`` is where it sits in the checkout, so a worktree of the repository holds it at
``<worktree>/<prefix>``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Mapping

WORKFLOW_ROOT = Path(__file__).resolve().parents[4]


def deepep_repo(config: Mapping[str, Any], basedir: Path = WORKFLOW_ROOT) -> Path:
    """deepep.repo as configured (the stand-in under workflow/sim when null and the toolchain is sim): the checkout
    deepep.ref names a commit of, never the build stage's worktree."""
    if config["deepep"]["repo"]:
        return Path(config["deepep"]["repo"]).resolve()
    if config["toolchain"] == "sim":
        return (basedir / "workflow" / "sim" / "ascend_deepep").resolve()
    return Path(".").resolve()


class RefError(ValueError):
    """A ref that does not name a commit of the repository (the message names both)."""


def _git(repo: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=timeout)


def resolve_ref(repo: Path, ref: str) -> str:
    """The full sha of the commit ``ref`` names in the git repository holding ``repo``; RefError when none."""
    if not isinstance(ref, str) or not ref.strip() or ref.startswith("-"):
        raise RefError(f"deepep.ref {ref!r} is not a git ref (of deepep.repo {repo})")
    if not Path(repo).is_dir():
        raise RefError(f"deepep.ref {ref!r}: deepep.repo {repo} is not a directory")
    try:
        done = _git(Path(repo), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RefError(f"deepep.ref {ref!r}: git rev-parse in {repo} could not run ({exc})") from exc
    sha = done.stdout.strip()
    if done.returncode != 0 or not sha:
        inside = _git(Path(repo), "rev-parse", "--is-inside-work-tree")
        if inside.returncode != 0:
            raise RefError(f"deepep.ref {ref!r}: deepep.repo {repo} is not in a git repository")
        raise RefError(f"deepep.ref {ref!r} does not name a commit of deepep.repo {repo} (git rev-parse --verify)")
    return sha


def repo_prefix(repo: Path) -> str:
    """Where ``repo`` sits inside its git checkout ('' at the top, else 'a/b/' as git prints it)."""
    done = _git(Path(repo), "rev-parse", "--show-prefix")
    if done.returncode != 0:
        raise RefError(f"{repo} is not in a git repository: {done.stderr.strip()}")
    return done.stdout.strip()


def file_at(repo: Path, sha: str, relpath: str) -> str | None:
    """The text of ``relpath`` (relative to ``repo``) in commit ``sha``; None when the commit has no such file."""
    done = _git(Path(repo), "show", f"{sha}:./{relpath}")
    return done.stdout if done.returncode == 0 else None


def diff_stat(repo: Path, a: str, b: str) -> dict:
    """``git diff --shortstat``/``--numstat`` between two commits of the repository holding ``repo``: files
    changed with lines added and removed (the whole repository: a side's change may lie outside deepep.repo's
    subdirectory). ``error`` says why when git could not tell."""
    numstat = _git(Path(repo), "diff", "--numstat", a, b, "--")
    if numstat.returncode != 0:
        return {"error": numstat.stderr.strip() or f"git diff exited {numstat.returncode}"}
    files = []
    for line in numstat.stdout.splitlines():
        added, removed, path = line.split("\t", 2)
        files.append(
            {
                "path": path,
                "added": int(added) if added.isdigit() else None,
                "removed": int(removed) if removed.isdigit() else None,
            }
        )
    return {
        "files_changed": len(files),
        "insertions": sum(f["added"] or 0 for f in files),
        "deletions": sum(f["removed"] or 0 for f in files),
        "files": files,
    }


def workflow_commit(root: Path = WORKFLOW_ROOT) -> str | None:
    """The commit of the workflow's own checkout, with "-dirty" when its tracked files differ from it; None outside a
    git checkout or without git. Read by the job that writes it at run time, never a param: a param would rerun the
    job on every commit of the workflow."""
    try:
        head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD", timeout=10)
        if head.returncode != 0 or not head.stdout.strip():
            return None
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no", timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
