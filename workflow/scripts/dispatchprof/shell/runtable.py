"""The end of a run: one line per experiment and stage (state, reason or root cause), and the fail_on decision.

Snakemake's own log ends with hundreds of lines in which a stage's failure is one INFO line among many; this
table is what a person reads last. It reads only status files, never measurements.
"""

from __future__ import annotations

import json
import shutil
import textwrap
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
                reason = (
                    "no status.json: this invocation stopped before the stage (--until, a target, or an error above)"
                    if missing
                    else str(exc)
                )
                lines.append(StageLine(experiment, stage, state, reason))
                continue
            if status.root_cause:
                cause = status.root_cause
                reason = f"root cause: {cause['stage']} {cause['state']}: {cause['reason']}"
            else:
                reason = status.reason
            lines.append(StageLine(experiment, stage, status.state, reason))
    return lines


def history_lines(results: Path, experiments: Iterable[str]) -> list[StageLine]:
    """One line per experiment whose history gate ran: its verdict (regressed, improved, unchanged, inconclusive;
    a verdict, not a stage state) and why. No line when history is off or the file is absent or unreadable (the
    report's Answer says why)."""
    lines = []
    for experiment in experiments:
        try:
            data = json.loads((results / experiment / "history" / "history.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("state") == "ok" and isinstance(data.get("verdict"), str):
            moved = [
                m["metric"]
                for m in data.get("metrics", [])
                if m.get("verdict") == data["verdict"] in ("regressed", "improved")
            ]
            why = f"{data.get('reason', '')}" + (f": {', '.join(moved[:4])}" if moved else "")
            lines.append(StageLine(experiment, "history", data["verdict"], why))
    return lines


def sweep_lines(results: Path, sweeps: Iterable[str]) -> list[StageLine]:
    """One line per sweep whose ranking was written: its verdict (best, tied, not ranked; not a stage state) and the
    verdict line, e.g. which point is best and by how much."""
    lines = []
    for name in sweeps:
        try:
            data = json.loads((results / "sweep" / name / "sweep.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("verdict"), str):
            lines.append(StageLine(f"sweep {name}", "sweep", data["verdict"], str(data.get("reason", ""))))
    return lines


MIN_REASON_COLUMN = 30  # narrower than this, a wrapped reason is a column of single words: it goes under its row


def format_lines(lines: Sequence[StageLine], width: int | None = None) -> str:
    """A plain table that fits the terminal. A reason is never cut (the finding is the point of the table): it wraps
    within its column, continued under it; when the terminal leaves the column too narrow, the reason goes on
    indented lines below its row. Words are not broken, so a path or a command in a reason stays copyable."""
    width = width or shutil.get_terminal_size((120, 24)).columns
    exp_w = max([len("experiment")] + [len(line.experiment) for line in lines])
    stage_w = max([len("stage")] + [len(line.stage) for line in lines])
    state_w = max([len("state")] + [len(line.state) for line in lines])
    lead = exp_w + stage_w + state_w + 6
    room = width - lead
    rows = [f"{'experiment':<{exp_w}}  {'stage':<{stage_w}}  {'state':<{state_w}}  reason"]
    for line in lines:
        head = f"{line.experiment:<{exp_w}}  {line.stage:<{stage_w}}  {line.state:<{state_w}}  "
        reason = " ".join(line.reason.split())
        if room >= MIN_REASON_COLUMN:
            wrapped = textwrap.wrap(reason, room, break_long_words=False, break_on_hyphens=False) or [""]
            rows.append(head + wrapped[0])
            rows += [" " * lead + part for part in wrapped[1:]]
        else:
            rows.append(head.rstrip())
            rows += [
                "    " + part
                for part in textwrap.wrap(reason, max(20, width - 4), break_long_words=False, break_on_hyphens=False)
            ]
    return "\n".join(rows)


def failing(lines: Sequence[StageLine], fail_on: Iterable[str]) -> list[StageLine]:
    """The stages whose state the user asked to fail the process on (config fail_on, for CI)."""
    states = set(fail_on)
    if "regression" in states:  # a verdict of the history gate, not a stage state
        states.add("regressed")
    return [line for line in lines if line.state in states]


def report_line(path: str, started: float, nothing_to_do: bool = False) -> str:
    """The last line a person reads: the report's path, or why the one on disk is not from this run (--until, -n).
    ``started``: when this Snakemake process began (a report older than that was not rebuilt); ``nothing_to_do``: a
    run that found every result up to date."""
    html = Path(path)
    if not html.is_file():
        return (
            f"Report: not built in this run ({path} does not exist: a job "
            "failed, or --until or a target stopped before the report)"
        )
    if nothing_to_do:
        return f"Report: {path} (up to date: nothing needed to run)"
    if html.stat().st_mtime < started:
        from datetime import datetime

        stamp = datetime.fromtimestamp(html.stat().st_mtime).isoformat(timespec="seconds")
        return (
            f"Report: {path} is from an earlier run ({stamp}); this run did not rebuild "
            "it (a job failed, or --until or a target stopped before the report)"
        )
    # the same report for a terminal, a diff or a chat: say where it is
    markdown = html.with_suffix(".md")
    return f"Report: {path}" + (f" (Markdown: {markdown})" if markdown.is_file() else "")


def release_requeue_timers() -> None:
    """Snakemake's job rate limiter (max-jobs-per-timespan, default 100/1s) re-checks the queue on a threading.Timer
    after every scheduling pass. When the run is over, the last one still waits out its second, and Python waits for
    it before the process exits: ~1-1.5 s added to every run (the timespan's 'ms' unit cannot shorten it: '100ms'
    parses as 100 minutes). Snakemake starts no other Timer."""
    import threading

    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
