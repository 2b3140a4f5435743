"""Entry point of rule timeline_parse: the PROF_ directories of a range of nodes -> ranks, coverage, launches
(dispatchprof.stages.timeline_parse)."""

import os
import sys

# numpy's OpenBLAS starts a thread per core at import, and they spin for a while: ~50 ms CPU and ~0.1 s of a core
# per job, for BLAS that parsing never calls. Set before numpy is imported; a value given by the user is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import pyarrow_without_pandas_probe
from dispatchprof.shell.stage import run_stage
from dispatchprof.stages.timeline_parse import timeline_parse

pyarrow_without_pandas_probe()  # text exports (op_summary CSV, msprof JSON) still read with pandas, imported then
run_stage(snakemake, "timeline", timeline_parse, part=f"nodes{snakemake.wildcards.nodes}")
