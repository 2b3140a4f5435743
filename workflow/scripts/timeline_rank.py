"""Entry point of rule timeline_rank: drill into one rank (dispatchprof.stages.timeline_rank)."""

import os
import sys

# no BLAS here: spare the thread pool OpenBLAS starts at import (timeline_parse.py)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import run_stage
from dispatchprof.stages.timeline_rank import timeline_rank

run_stage(snakemake, "timeline", timeline_rank, part=f"rank{snakemake.wildcards.rank}")
