"""Entry point of rule pipe_timeline: fold the PipeTimeline / InstrTimeline runs (or the import), read every rank's
trace.json, tabulate pipe busy time per core and role (dispatchprof.stages.pipe_timeline)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import run_stage
from dispatchprof.shell.status import read_input_status

PARTS = {label: read_input_status(snakemake.input[label]) for label in snakemake.params["parts"]}

from dispatchprof.stages.pipe_timeline import pipe_timeline

run_stage(snakemake, "pipe_timeline", lambda run: pipe_timeline(run, PARTS))
