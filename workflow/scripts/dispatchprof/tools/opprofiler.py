"""The operator profiler's command line (msopprof / `msprof op`) and what its output and log must show.

msopprof exits 0 after any profiling attempt, so its exit code is not evidence: the output files and its
log lines are (docs/formats.md §2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from dispatchprof.shell.config import MSOPPROF_OUTPUT_MAX

ENTRIES = {"msopprof": ["msopprof"], "msprof op": ["msprof", "op"]}
FAILURE_LINES = (
    "[ERROR]",
    "No profiling data dumped",
    "Profiling results are empty",
    "Analyzing kernel data failed",
    "May cause generating performance files to fail",
)
REPLAY_TIMEOUT_REASON = "kernel replay may not be compatible with cross-rank communication"
# The timeline runs of stage pipe_timeline: one op-profiler run per kind, each with its own raw directory.
TIMELINE_KINDS = {"pipe": "PipeTimeline", "instr": "InstrTimeline"}


def timeline_run(kind: str, settings: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(--aic-metrics, extra options) of one pipe_timeline run: its timeline alone, never with PipeUtilization or
    the other timeline (msopprof refuses the pair), and --instr-timeline-pipe for InstrTimeline when configured."""
    metric = TIMELINE_KINDS[kind]
    pipes = settings.get("instr_timeline_pipe")
    return [metric], ([f"--instr-timeline-pipe={pipes}"] if kind == "instr" and pipes else [])


def op_profiler_run(config: Mapping[str, Any], stage: str, kind: str | None) -> tuple[list[str], list[str]]:
    """(--aic-metrics, extra options) of one op-profiler run of ``stage`` (pmu, pcsampling, pipe_timeline with its
    timeline ``kind``): what the collect stage passes and what the dry run's plan shows."""
    if kind is not None:
        return timeline_run(kind, config["pipe_timeline"])
    return list(config["pmu"]["metrics"] if stage == "pmu" else config["pcsampling"]["metrics"]), []


def op_profiler_command(
    entry: str,
    kernel: str,
    metrics: Sequence[str],
    output: Path,
    settings: Mapping[str, Any],
    extra: Sequence[str] = (),
) -> list[str]:
    """The profiler part of the command (the application goes last), with ``extra`` options (--instr-timeline-pipe)
    before --output. Never --kill=on."""
    if entry not in ENTRIES:
        raise ValueError(f"no usable op-profiler entry ({entry!r})")
    if len(str(output)) > MSOPPROF_OUTPUT_MAX:
        raise ValueError(
            f"--output {output} is {len(str(output))} characters; msopprof refuses more than {MSOPPROF_OUTPUT_MAX}"
        )
    argv = [
        *ENTRIES[entry],
        f"--kernel-name={kernel}",
        f"--launch-count={settings['launch_count']}",
        f"--warm-up={settings['warm_up']}",
        f"--aic-metrics={','.join(metrics)}",
    ]
    if settings.get("launch_skip_before_match") is not None:
        argv.append(f"--launch-skip-before-match={settings['launch_skip_before_match']}")
    return [*argv, *extra, f"--output={output}"]


def log_findings(log_text: str) -> tuple[list[str], list[str]]:
    """(failure lines, success markers) of one msopprof log."""
    failures = [line.strip() for line in log_text.splitlines() if any(marker in line for marker in FAILURE_LINES)]
    successes = [
        line.strip()
        for line in log_text.splitlines()
        if "Profiling results saved in" in line or "All task success" in line
    ]
    return failures, successes
