"""The report's reads of the stages' files, every one once, before anything is built from them: a file that cannot be
read (a truncated stats.json, a Parquet table without its footer) is its stage's note, the stage shown as `invalid`
with the file named, and every other section renders. Before, one such file made the whole report a placeholder
("internal error ... (a workflow bug)")."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, MutableMapping

from dispatchprof.shell.intermediates import IntermediateUnreadable, read_json, read_parquet
from dispatchprof.shell.status import Status

# stage -> the report's inputs (workflow/rules/report.smk) that its jobs wrote
STAGE_FILES: dict[str, tuple[str, ...]] = {
    "env_capture": ("env",),
    "build": ("build_record",),
    "correctness": ("correctness_ranks",),
    "baseline": ("baseline_stats",),
    "timeline": ("timeline_stats", "timeline_ranks", "timeline_crosscheck"),
    "pmu": ("pmu_stats",),
    "pcsampling": ("pcsampling_stats",),
    "probe": ("probe_stats",),
    "debugclock": ("debugclock_stats",),
    "pipe_timeline": ("pipe_timeline_stats",),
}


@dataclass
class StageFiles:
    """Every stage file the report reads, read: JSON as its document, Parquet as its table. A file that cannot be
    read stands as a placeholder (JSON: ``{"placeholder": true, "reason": ...}``; Parquet: None), and its stage's
    first such file is in ``damaged``."""

    loaded: dict[str, Any] = field(default_factory=dict)
    damaged: dict[str, IntermediateUnreadable] = field(default_factory=dict)

    def json(self, path: str) -> Any:
        """A JSON input, read before (read_stage_files), or read now (an input no stage owns: a comparison)."""
        if str(path) not in self.loaded:
            self.loaded[str(path)] = read_json(path)
        return self.loaded[str(path)]

    def table(self, path: str) -> Any:
        return self.loaded[str(path)]


def paths_of(value: Any) -> list[str]:
    """A rule input as its paths: one path, a list of them, or none."""
    if not value:
        return []
    return [str(value)] if isinstance(value, (str, os.PathLike)) else [str(v) for v in value]


def read_stage_files(inputs: Mapping[str, Any], statuses: MutableMapping[str, Status]) -> StageFiles:
    """Every stage's files read; a stage with one that cannot be read is shown `invalid`, the file named with why
    (``statuses`` changed for the report only: the stage's own status.json is left as it is)."""
    files = StageFiles()
    for stage, keys in STAGE_FILES.items():
        for path in (p for key in keys for p in paths_of(inputs.get(key))):
            parquet = path.endswith(".parquet")
            try:
                files.loaded[path] = read_parquet(path) if parquet else read_json(path)
            except IntermediateUnreadable as exc:
                files.loaded[path] = None if parquet else {"placeholder": True, "reason": str(exc)}
                files.damaged.setdefault(stage, exc)
    for stage, exc in files.damaged.items():
        if stage in statuses:
            statuses[stage] = unreadable_status(statuses[stage], exc)
    return files


def unreadable_status(status: Status, exc: IntermediateUnreadable) -> Status:
    """The stage as the report shows it when one of its files cannot be read: `invalid`, naming the file."""
    return dataclasses.replace(
        status,
        state="invalid",
        reason=f"{exc}; the report shows none of this stage (its status: {status.state}); "
        f"`snakemake --cores 2 -R {status.stage}` writes it again",
    )
