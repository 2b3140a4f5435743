"""Entry point of rule report: render report.html and summary.json from whatever the stages left
(dispatchprof.stages.report)."""

import os
import sys

os.environ.setdefault(
    "OPENBLAS_NUM_THREADS", "1"
)  # no BLAS here: spare the thread pool OpenBLAS starts at import (timeline_parse.py)
sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import run_stage
from dispatchprof.stages.report import report

run_stage(snakemake, "report", report)
