"""The build stage: run the repository's build command and fingerprint the built libraries."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping, Sequence

from dispatchprof.shell.atomic import copy_under_umask
from dispatchprof.tools.launch import CommandResult, run_command
from dispatchprof.tools.toolchain import Toolchain


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def find_libraries(repo: Path, globs: Sequence[str]) -> list[Path]:
    found: set[Path] = set()
    for pattern in globs:
        found.update(p for p in repo.glob(pattern) if p.is_file())
    return sorted(found)


def fingerprint(repo: Path, globs: Sequence[str], copy_to: Path | None = None) -> list[dict[str, Any]]:
    """sha256 and size of every library the globs find; copies kept under ``copy_to`` (the repo is never touched)."""
    records = []
    for path in find_libraries(repo, globs):
        rel = path.relative_to(repo)
        record = {"path": str(rel), "size": path.stat().st_size, "sha256": sha256_file(path)}
        if copy_to is not None:
            target = copy_to / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_under_umask(path, target)
            record["copy"] = str(target)
        records.append(record)
    return records


def build_environment(chain: Toolchain, build_env: Mapping[str, str], build_dir: str = "build") -> dict[str, str]:
    """What the build command gets on top of the toolchain's environment: BUILD_DIR inside the repository being
    built (ascend-kernel-lab docs/latency-comparison.md: the build command must read DEBUG_CLOCK_ON and BUILD_DIR), so
    a BUILD_DIR inherited from the shell never sends a second build into the first one's directory; then build_env
    (which may set BUILD_DIR itself)."""
    return {"BUILD_DIR": str(chain.repo / build_dir), **build_env}


def run_build(
    chain: Toolchain,
    command: Sequence[str],
    build_env: Mapping[str, str],
    timeout_s: float,
    log_path: Path,
    build_dir: str = "build",
) -> CommandResult:
    """Run the build command in the repository, its output appended to ``log_path``."""
    env = build_environment(chain, build_env, build_dir)
    result = run_command(chain.wrap(command), timeout_s, env=chain.env(extra=env), cwd=chain.repo)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a") as handle:
        handle.write(f"$ BUILD_DIR={env['BUILD_DIR']} {' '.join(command)}\n{result.output}\n")
    return result
