"""Entry point of rules pmu_collect, pcsampling_collect and pipe_timeline_collect (one run per timeline kind): the
perf driver under msopprof on every node (dispatchprof.stages.op_profiler_collect)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import run_stage
from dispatchprof.stages.op_profiler_collect import op_profiler_collect

kind = snakemake.params.get("kind")  # pipe_timeline: pipe | instr
run_stage(snakemake, snakemake.params["stage"], lambda run: op_profiler_collect(run, kind), part="collect")
