"""Entry point of rule pcsampling: decode visualize_data.bin of every rank; stall tables, hot lines
(dispatchprof.stages.pcsampling)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import needed_parts_or_end, run_stage

NEEDED = needed_parts_or_end(snakemake, "pcsampling")  # ends the job here when a needed part is not ok

from dispatchprof.stages.pcsampling import pcsampling

run_stage(snakemake, "pcsampling", lambda run: pcsampling(run, NEEDED))
