"""Entry point of rule not_provided (analyze mode): every stage with nothing to analyse in one job, with the status
files and placeholders its own jobs would write
(dispatchprof.stages.absent). No pandas: this job is pure bookkeeping."""

import os
import sys
from pathlib import Path

os.environ.setdefault(
    "OPENBLAS_NUM_THREADS", "1"
)  # no BLAS here: spare the thread pool OpenBLAS starts at import (timeline_parse.py)
sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.stages.absent import absent_statuses, write_env_record, write_import_manifest  # noqa: E402
from dispatchprof.shell.atomic import pyarrow_without_pandas_probe  # noqa: E402
from dispatchprof.shell.config import run_config  # noqa: E402
from dispatchprof.shell.config_reads import recorded  # noqa: E402
from dispatchprof.shell.stage import finish_outputs, setup_logging, skip_final_collection  # noqa: E402

pyarrow_without_pandas_probe()  # the placeholder tables are empty Parquet files
skip_final_collection()
setup_logging(snakemake.log[0])
experiment = snakemake.wildcards.experiment
config = recorded(run_config(snakemake.config, experiment), snakemake.rule)
# Outputs are named <rule>__<output> after the rules they stand in for (rules/not_provided.smk).
by_rule: dict[str, dict[str, Path]] = {}
for key, path in snakemake.output.items():
    rule, name = key.split("__", 1)
    by_rule.setdefault(rule, {})[name] = Path(path)
for stage in snakemake.params["stages"]:
    for rule, status in absent_statuses(stage, experiment, config).items():
        outputs = by_rule[rule]
        if rule.endswith("_import"):
            write_import_manifest(outputs["manifest"], stage)
            status.artifacts = [str(outputs["manifest"])]
        if rule == "env_capture":
            write_env_record(outputs["env"])
        finish_outputs({name: path for name, path in outputs.items() if name != "status"}, outputs["status"], status)
