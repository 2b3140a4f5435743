"""The end of a run: one line per experiment and stage (state, reason or root cause), and the fail_on decision.

Snakemake's own log ends with hundreds of lines in which a stage's failure is one INFO line among many; this
table is what a person reads last. It reads only status files, never measurements.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from dispatchprof.shell.status import StatusError, read_status


@dataclass(frozen=True)
class StageLine:
    experiment: str
    stage: str
    state: str
    reason: str  # the stage's own reason, or for a skipped stage its root cause


def stage_lines(results: Path, experiments: Iterable[str], stages: Sequence[str]) -> list[StageLine]:
    lines = []
    for experiment in experiments:
        for stage in stages:
            path = results / experiment / stage / "status.json"
            try:
                status = read_status(path)
            except StatusError as exc:
                missing = not path.exists()
                state = "not run" if missing else "unreadable"
                reason = "no status.json: this invocation stopped before the stage (--until, a target, or an error above)" if missing else str(exc)
                lines.append(StageLine(experiment, stage, state, reason))
                continue
            if status.root_cause:
                cause = status.root_cause
                reason = f"root cause: {cause['stage']} {cause['state']}: {cause['reason']}"
            else:
                reason = status.reason
            lines.append(StageLine(experiment, stage, status.state, reason))
    return lines


def format_lines(lines: Sequence[StageLine], width: int | None = None) -> str:
    """A plain table that fits the terminal: long reasons are cut (the full one is in status.json)."""
    width = width or shutil.get_terminal_size((120, 24)).columns
    exp_w = max([len("experiment")] + [len(line.experiment) for line in lines])
    stage_w = max([len("stage")] + [len(line.stage) for line in lines])
    state_w = max([len("state")] + [len(line.state) for line in lines])
    room = max(30, width - exp_w - stage_w - state_w - 6)
    rows = [f"{'experiment':<{exp_w}}  {'stage':<{stage_w}}  {'state':<{state_w}}  reason"]
    for line in lines:
        reason = " ".join(line.reason.split())
        if len(reason) > room:
            reason = reason[: room - 1] + "…"
        rows.append(f"{line.experiment:<{exp_w}}  {line.stage:<{stage_w}}  {line.state:<{state_w}}  {reason}")
    return "\n".join(rows)


def failing(lines: Sequence[StageLine], fail_on: Iterable[str]) -> list[StageLine]:
    """The stages whose state the user asked to fail the process on (config fail_on, for CI)."""
    states = set(fail_on)
    return [line for line in lines if line.state in states]
