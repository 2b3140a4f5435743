"""Analyze mode: the stages with nothing to analyse, written by one job instead of one or two jobs each.

In analyze mode env capture, build and correctness belong to the collection, which happened elsewhere, and a stage
whose artifacts were not given (analyze.<key> null) has nothing to read. Each would still be a job (an import
part and the stage, each a Python start and ~0.5 s of imports): most of an analyze run's fixed cost. One job writes
them all instead, with the statuses and placeholder files the stages' own jobs would write, so the report and
summary.json read the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dispatchprof.shell.atomic import write_json_atomic
from dispatchprof.shell.config import SOURCE_OF_MODE
from dispatchprof.stages.imports import checked_import
from dispatchprof.shell.status import Status, fold, now_iso

# Stages that exist only when the workflow collects, with what their status says in analyze mode.
COLLECT_ONLY = {
    "env_capture": "env capture is not part of analyze mode: the artifacts were collected elsewhere",
    "build": "no build in analyze mode: the artifacts were collected elsewhere",
    "correctness": "precision is not checked in analyze mode: the artifacts were collected elsewhere",
}
# Stages that read the user's artifacts through an import part (rule <stage>_import), by their analyze key.
IMPORTED = {
    "baseline": "latency_csv",
    "pmu": "pmu_dir",
    "pcsampling": "pcsampling_dir",
    "pipe_timeline": "pipe_timeline_dir",
    "probe": "probe_dir",
}
# Stages that read their analyze directory themselves (no import part).
READ_IN_PLACE = {"debugclock": "debugclock_dir"}
DEBUGCLOCK_NOT_PROVIDED = "not provided: analyze.debugclock_dir is not set"


def absent_stages(run_config: Mapping[str, Any]) -> tuple[str, ...]:
    """The stages of one analyze-mode experiment that have nothing to analyse (none in collect mode). The timeline
    is not among them: without it an analysis has no subject, and its jobs say so."""
    if run_config["mode"] != "analyze":
        return ()
    given = run_config["analyze"]
    return (*COLLECT_ONLY, *(stage for stage, key in {**IMPORTED, **READ_IN_PLACE}.items() if given[key] is None))


def _status(stage: str, experiment: str, state: str, reason: str, **fields: Any) -> Status:
    """A status of analyze mode, where nothing was run here (toolchain none, source import)."""
    return Status(
        stage=stage,
        experiment=experiment,
        state=state,
        reason=reason,
        toolchain="none",
        source=SOURCE_OF_MODE["analyze"],
        started=now_iso(),
        finished=now_iso(),
        **fields,
    )


def absent_statuses(stage: str, experiment: str, run_config: Mapping[str, Any]) -> dict[str, Status]:
    """The statuses an absent stage's jobs would write, by rule name: the stage's own, and its import part's."""
    if stage in COLLECT_ONLY:
        return {stage: _status(stage, experiment, "disabled", COLLECT_ONLY[stage])}
    if stage in READ_IN_PLACE:
        return {stage: _status(stage, experiment, "skipped", DEBUGCLOCK_NOT_PROVIDED)}
    cluster = run_config["cluster"]
    state, reason, details = checked_import(
        IMPORTED[stage], None, cluster["nodes"], cluster["nodes"] * cluster["ranks_per_node"]
    )
    label = f"{stage}_import"
    part = _status(stage, experiment, state, reason, part="import", details=details)
    folded = fold(stage, experiment, "none", {label: part})
    if stage == "pipe_timeline":  # its status lists its runs (an import here), as rule pipe_timeline writes it
        folded.details = {"runs": {"import": {"state": part.state, "reason": part.reason}}}
        folded.validations = []
    return {label: part, stage: folded}


def write_import_manifest(path: Path, stage: str) -> None:
    """The manifest an import part writes for artifacts that were not given."""
    write_json_atomic(
        path, {"toolchain": "none", "source": "import", "kind": IMPORTED[stage], "root": None, "files": []}
    )


def write_env_record(path: Path) -> None:
    """env.json of analyze mode: nothing captured (the report's environment table is empty)."""
    write_json_atomic(path, {"toolchain": "none", "nodes": [], "note": "not captured in analyze mode"})
