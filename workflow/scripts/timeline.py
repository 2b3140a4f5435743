"""Entry point of rule timeline: fold the parts; coverage, per-rank statistics, stragglers, gaps, merged trace
(dispatchprof.stages.timeline)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import pyarrow_without_pandas_probe  # noqa: E402
from dispatchprof.shell.stage import run_stage  # noqa: E402
from dispatchprof.stages.timeline import timeline  # noqa: E402

pyarrow_without_pandas_probe()  # this job hands pyarrow no pandas object: its first probe need not import pandas
run_stage(snakemake, "timeline", timeline)
