"""Every command the report prints runs what it says (issue 48): a dry run of it, in the demo's workflow with the
demo's results, plans the job it promises, never "Nothing to be done"."""

import re
import shlex

from dispatchprof.report.steps import EVIDENCE, Run, collect_command, drill_step
from dispatchprof.report.verdict import open_step
from dispatchprof.shell.invocation import read_invocation

# what each printed command promises: a forced collect job, or a rank's drill-down
FORCED = {f"{stage}_collect": stage for stage in (*EVIDENCE, "baseline", "timeline")}


def printed_commands(md: str) -> list[str]:
    """The snakemake commands in report.md, the Answer's and the next steps' (each in backticks)."""
    return sorted({c for c in re.findall(r"`(snakemake [^`]+)`", md)})


def promised_job(words: list[str]) -> str:
    """The rule whose job the command is for: the rule it forces, else the drill-down's (timeline_rank)."""
    if "--forcerun" in words:
        return words[words.index("--forcerun") + 1]
    assert any(re.fullmatch(r"results/[^/]+/timeline/ranks/rank\d+/detail\.json", w) for w in words), words
    return "timeline_rank"


def every_form(experiment: str, invocation: list[str], drilled: set[int]) -> list[str]:
    """One command of each form the report prints, under the run's invocation: each stage's collect job forced, a rank's
    drill-down (a rank not drilled yet), the baseline's and the timeline's."""
    run = Run(experiment, tuple(invocation), "collect", frozenset(), frozenset(drilled))
    rank = next(r for r in range(16) if r not in drilled)
    return [
        *(collect_command(stage, run) for stage in EVIDENCE),
        drill_step(rank, run),
        *(open_step(stage, run) for stage in ("baseline", "timeline")),
    ]


def test_every_printed_command_plans_the_job_it_promises(demo_run):
    workflow_copy, result = demo_run
    assert result.returncode == 0, result.stderr[-3000:]
    md = (workflow_copy.root / "results/baseline/report/report.md").read_text()
    answer = md.split("## Answer", 1)[1].split("\n## ", 1)[0]
    # the demo's PMU is ok, so DebugClock (debugclock.when: fallback) did not run: the Answer gives its command
    assert any("debugclock_collect" in c for c in printed_commands(answer)), answer
    invocation = read_invocation(workflow_copy.root / "results/baseline")
    assert invocation[:1] == ["--configfile"], invocation
    drilled = {
        int(p.parent.name[4:])
        for p in (workflow_copy.root / "results/baseline/timeline/ranks").glob("rank*/detail.json")
    }
    commands = sorted(set(printed_commands(md)) | set(every_form("baseline", invocation, drilled)))
    for command in commands:
        words = shlex.split(command)
        assert words[:3] == ["snakemake", "--cores", "2"] and "--configfile" in words, (
            command
        )  # the run's own config words
        job = promised_job(words)
        dry = workflow_copy.snakemake(*words[3:], "-n", "--quiet", "rules")
        assert dry.returncode == 0, (command, dry.stderr[-2000:])
        planned = dry.stdout + dry.stderr
        assert "Nothing to be done" not in planned, command
        assert re.search(rf"^{job}\s+\d+$", planned, re.M), (command, planned[-2000:])
        if job == "debugclock_collect":  # asked for whatever the PMU did, and nothing before it is collected again
            assert not re.search(r"^(pmu_collect|timeline_collect|baseline_collect)\s", planned, re.M), planned
