"""The next step for a piece of evidence: the command that collects it, or the file that holds it.

Every command runs what it says when copied into the workflow's directory: it carries the run's own --configfile and
--config words (shell.invocation), and where the evidence is missing it forces the job that collects it, so that
Snakemake never answers "Nothing to be done" for a stage whose status.json exists but holds no evidence (a PMU that
failed, a DebugClock that debugclock.when: fallback left out because the PMU was ok). Where the evidence exists, the
step is the file to open: a command would rebuild nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from dispatchprof.shell.invocation import snakemake_command

# stage -> (the file its evidence is in, the analyze key that imports it); its collect rule is <stage>_collect
EVIDENCE = {
    "pmu": ("pmu/roles.json", "analyze.pmu_dir"),
    "debugclock": ("debugclock/stats.json", "analyze.debugclock_dir"),
    "pcsampling": ("pcsampling/stalls.json", "analyze.pcsampling_dir"),
}
# DebugClock runs only when the PMU is not ok (debugclock.when: fallback): a run asked for it runs it anyway. A nested
# key on the command line is a YAML mapping (Snakemake merges it into the config files' debugclock section).
DEBUGCLOCK_ALWAYS = "debugclock={when: always}"


@dataclass(frozen=True)
class Run:
    """What a next step needs to know of the run: its experiment, the invocation words that made its config, its mode,
    which stages hold evidence and which ranks have a drill-down already."""

    experiment: str
    invocation: Sequence[str] = ()
    mode: str = "collect"
    ok: frozenset[str] = field(default_factory=frozenset)
    drilled: frozenset[int] = field(default_factory=frozenset)


def with_config(invocation: Sequence[str], words: Sequence[str]) -> list[str]:
    """The invocation with more --config words: after its own (--config takes every word after it), else a new one."""
    if not words:
        return list(invocation)
    return [*invocation, *words] if "--config" in invocation else [*invocation, "--config", *words]


def collect_command(stage: str, run: Run) -> str:
    """The command that collects a stage's evidence again: its collect job (``<stage>_collect``)
    forced, since its status exists; DebugClock asked for whatever the PMU did."""
    rule = f"{stage}_collect"
    extra = [DEBUGCLOCK_ALWAYS] if stage == "debugclock" else []
    target = f"results/{run.experiment}/{stage}/status.json"
    return snakemake_command([target, "--forcerun", rule], with_config(run.invocation, extra))


def evidence_step(stage: str, run: Run) -> str:
    """A stage's evidence: its file when the stage is ok; else the command that collects it (the analyze key that
    imports it, for imported data: analyze mode collects nothing)."""
    path, key = EVIDENCE[stage]
    if stage in run.ok:
        return f"results/{run.experiment}/{path}"
    if run.mode != "collect":
        return key
    return collect_command(stage, run)


def drill_step(rank: int, run: Run) -> str:
    """One rank's launch-by-launch drill-down: its table when built, else the command that builds it."""
    if rank in run.drilled:
        return f"results/{run.experiment}/timeline/ranks/rank{rank}/launches.csv"
    return snakemake_command([f"results/{run.experiment}/timeline/ranks/rank{rank}/detail.json"], run.invocation)


def missing_first(stages: Sequence[str], run: Run) -> str | None:
    """The step of the first of ``stages`` without evidence, or None when each holds its evidence."""
    return next((evidence_step(s, run) for s in stages if s not in run.ok), None)


def cause_step(cause: Mapping[str, object], run: Run) -> str:
    """The one step that confirms a cause: a late host's gap in its drill-down; the role on a rank that works long
    (PMU, then DebugClock); a late-ending node's send and receive phases (DebugClock, then the PMU of its senders)."""
    evidence, rank, ranks = cause.get("evidence"), cause.get("rank"), list(cause.get("ranks") or [])  # type: ignore[call-overload]
    if evidence == "late_arrival":
        first = rank if rank is not None else (ranks[0] if ranks else None)
        return drill_step(int(first), run) if first is not None else evidence_step("debugclock", run)
    order = ("debugclock", "pmu") if evidence == "late_ending_node" else ("pmu", "debugclock")
    missing = missing_first(order, run)
    if missing is not None:
        return missing
    if rank is not None:
        return drill_step(int(rank), run)
    return evidence_step(order[0], run)
