"""The sides of ``compare``: an experiment of this config, or a recorded results directory (issue 59).

A side that contains ``/`` is a *recorded side*: the results directory of one run that exists already (another day,
machine or config), e.g. ``results/2026-12-01/baseline`` or ``/data/old/baseline``. Nothing collects it again: its
files are the compare job's inputs as they are (no rule produces them; a file it lacks is a layer "not comparable:
<file> missing"), and its config is what the run recorded (``config.json``, written by the report stage). Every
other side names an experiment. A comparison is written to ``results/compare/<slug a>_vs_<slug b>/``: an
experiment's slug is its name; a recorded side's is its path without a leading ``results/``, each part made safe
(``[A-Za-z0-9_.-]``) and the parts joined by ``+`` (``results/2026-12-01/baseline`` -> ``2026-12-01+baseline``), a
character no experiment name has.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

# The layers compared beside latency (analysis/compare_layers.py): each stage's status and the file its rows are
# read from. Every stage writes both in every state (a placeholder when disabled or skipped), as the report reads
# them; a stage that is not ok is a layer "not comparable", never a failed job. DebugClock with when: never is no
# input at all.
LAYER_FILES = {
    "baseline_stats": "baseline/stats.json",
    "timeline": "timeline/status.json",
    "timeline_stats": "timeline/stats.json",
    "pmu": "pmu/status.json",
    "pmu_cores": "pmu/cores.parquet",
    "pcsampling": "pcsampling/status.json",
    "pcsampling_stalls": "pcsampling/stalls.json",
    "debugclock": "debugclock/status.json",
    "debugclock_segments": "debugclock/segments.parquet",
}
# Every file of a run's directory the comparison reads, by the compare job's input name (<side>_<name>_<run>).
RECORDED_FILES = {
    "latency": "baseline/latency.parquet",
    "baseline": "baseline/status.json",
    "correctness": "correctness/status.json",
    "build": "build/build.json",
    "config": "config.json",
    **LAYER_FILES,
}


def recorded_inputs(directory: str | Path) -> tuple[dict[str, str], dict[str, str]]:
    """A recorded side's files: (name -> path of those it has, name -> file of those it lacks). The first are the
    compare job's inputs; the second reach it as a param, each a layer "not comparable: <file> missing" (never a
    MissingInputException: a copy may have left a file out)."""
    root = Path(directory)
    have = {name: str(root / rel) for name, rel in RECORDED_FILES.items() if (root / rel).is_file()}
    return have, {name: rel for name, rel in RECORDED_FILES.items() if name not in have}


def is_recorded(side: str) -> bool:
    """A side naming a directory (it contains ``/``), not an experiment."""
    return "/" in side


def side_slug(side: str) -> str:
    """The side's name in ``results/compare/<a>_vs_<b>/`` (see the module docstring)."""
    if not is_recorded(side):
        return side
    parts = [p for p in PurePosixPath(side).parts if p not in ("/", ".", "")]
    if parts and parts[0] == "results" and len(parts) > 1:
        parts = parts[1:]
    return "+".join(re.sub(r"[^A-Za-z0-9_.-]", "_", p) for p in parts)


def entries(config: Mapping[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(a, b, expect) of every entry of ``compare``, as written: a pair [a, b] or a mapping {a, b, expect}."""
    out = []
    for item in config.get("compare") or []:
        if isinstance(item, Mapping):
            out.append((str(item["a"]), str(item["b"]), dict(item.get("expect") or {})))
        else:
            a, b = item
            out.append((str(a), str(b), {}))
    return out


def comparison_pairs(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (slug a, slug b) of every entry of ``compare``."""
    return [(side_slug(a), side_slug(b)) for a, b, _ in entries(config)]


def comparison_expectations(config: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """The predictions (row key -> down, up or unchanged) of each compared pair (by slugs); {} for a plain pair."""
    return {(side_slug(a), side_slug(b)): expect for a, b, expect in entries(config) if expect}


def recorded_sides(config: Mapping[str, Any]) -> dict[str, str]:
    """slug -> directory of every recorded side of ``compare``."""
    return {side_slug(s): s.rstrip("/") for a, b, _ in entries(config) for s in (a, b) if is_recorded(s)}


def experiment_names(config: Mapping[str, Any]) -> list[str]:
    return list(config.get("experiments") or {}) or [str(config.get("experiment"))]


def comparison_problems(config: Mapping[str, Any], workdir: Path) -> list[str]:
    """Entries of ``compare`` that cannot be compared, each named: a side that is neither an experiment nor an
    existing run directory, a directory that is this config's own experiment's, the same side twice, two paths
    with one slug."""
    problems: list[str] = []
    names = experiment_names(config)
    slugs: dict[str, str] = {}
    for a, b, _ in entries(config):
        for side in (a, b):
            if is_recorded(side):
                problems += recorded_problems(side, workdir, names, config.get("repeats", 1))
                other = slugs.setdefault(side_slug(side), side)
                if not side_slug(side):
                    problems.append(f"compare: {side!r} names no directory")
                elif side_slug(side) in names:
                    problems.append(
                        f"compare: {side!r} would be written as {side_slug(side)!r}, an experiment's name: name it "
                        "by a longer path (e.g. with its parent directory)"
                    )
                elif Path(other) != Path(side) and (workdir / other).resolve() != (workdir / side).resolve():
                    problems.append(
                        f"compare: {other!r} and {side!r} would both be written as {side_slug(side)!r}: "
                        "name one of them by another path"
                    )
            elif side not in names:
                problems.append(
                    f"compare: {side!r} is not an experiment (experiments: {sorted(names)}) nor a results "
                    "directory (a path, with '/')"
                )
        if side_slug(a) == side_slug(b):
            problems.append(f"compare: {[a, b]} must name two different sides")
    return problems


def recorded_problems(side: str, workdir: Path, names: list[str], repeats: int) -> list[str]:
    path = workdir / side
    if not path.exists():
        return [f"compare: the results directory {side} does not exist (relative paths are read from {workdir})"]
    if not path.is_dir():
        return [f"compare: {side} is not a directory (a recorded side is the results directory of one run)"]
    runs = {n if repeats == 1 else f"{n}_r{k}" for n in names for k in range(1, int(repeats) + 1)}
    own = (workdir / "results").resolve()
    if path.resolve().parent == own and path.resolve().name in runs:
        return [
            f"compare: {side} is the results directory of this config's experiment {path.name!r}: name the "
            f"experiment ({path.name}) to compare its run, or copy the directory elsewhere to compare it as recorded"
        ]
    if not any(path.glob("*/status.json")):
        return [
            f"compare: {side} holds no stage status (<stage>/status.json): not the results directory of one run "
            "(results/<experiment>/)"
        ]
    return []
