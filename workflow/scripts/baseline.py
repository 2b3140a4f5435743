"""Entry point of rule baseline: parse dispatch_latency.csv (and the API latency), statistics, plots
(dispatchprof.stages.baseline)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import needed_parts_or_end, run_stage

NEEDED = needed_parts_or_end(snakemake, "baseline")  # ends the job here when a needed part is not ok

from dispatchprof.stages.baseline import baseline

run_stage(snakemake, "baseline", lambda run: baseline(run, NEEDED))
