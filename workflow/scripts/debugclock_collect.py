"""Entry point of rule debugclock_collect: the DEBUG_CLOCK_ON build in its own worktree, then the perf driver with
DebugClock OFF (the baseline build) and ON (the DEBUG build) alternating, every run on every node
(dispatchprof.stages.debugclock_collect)."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import run_stage
from dispatchprof.stages.debugclock_collect import debugclock_collect

run_stage(snakemake, "debugclock", lambda run: debugclock_collect(run, Path(snakemake.log[0]).parent), part="collect")
