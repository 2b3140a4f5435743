"""Entry point of rule timeline_collect: msprof on every node around the perf driver; export where missing
(dispatchprof.stages.timeline_collect)."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import run_stage
from dispatchprof.stages.timeline_collect import timeline_collect

TEMPLATES = Path(snakemake.scriptdir).resolve().parent / "templates"
run_stage(snakemake, "timeline", lambda run: timeline_collect(run, TEMPLATES), part="collect")
