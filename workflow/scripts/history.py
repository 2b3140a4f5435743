"""Entry point of rule history: land this run's record and gate it (dispatchprof.stages.history)."""

import datetime
import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import pandas as pd  # noqa: E402

from dispatchprof.analysis.history import GateSettings  # noqa: E402
from dispatchprof.shell.atomic import write_json_atomic  # noqa: E402
from dispatchprof.shell.config import run_config  # noqa: E402
from dispatchprof.shell.config_reads import recorded  # noqa: E402
from dispatchprof.shell.stage import setup_logging, skip_final_collection  # noqa: E402
from dispatchprof.shell.status import read_input_status  # noqa: E402
from dispatchprof.stages.history import RunFiles, land_and_gate, record, toolchain_of  # noqa: E402

skip_final_collection()
setup_logging(snakemake.log[0])
experiment = snakemake.wildcards.experiment
config = recorded(run_config(snakemake.config, experiment), snakemake.rule)
settings = config["history"]
files = snakemake.input
base = {"schema": "dispatchprof.history_verdict/1", "experiment": experiment, "toolchain": toolchain_of(config)}


baseline = read_input_status(files.baseline_status)
if settings["path"] is None:
    result = {**base, "state": "disabled", "reason": "history.path is null: no record, no gate"}
elif not baseline.ok:
    result = {**base, "state": "skipped", "reason": f"no latency baseline ({baseline.state}: {baseline.reason})"}
else:
    started = json.loads(Path(files.collected).read_text()).get("started")
    timeline_ok, pmu_ok = read_input_status(files.timeline_status).ok, read_input_status(files.pmu_status).ok
    run_files = RunFiles(
        latency=pd.read_parquet(files.latency),
        baseline=json.loads(Path(files.baseline_stats).read_text()),
        timeline=json.loads(Path(files.timeline_stats).read_text()) if timeline_ok else None,
        pmu=json.loads(Path(files.pmu_roles).read_text()) if pmu_ok else None,
        cores=pd.read_parquet(files.pmu_cores) if pmu_ok else None,
        env=json.loads(Path(files.env).read_text()),
        build=json.loads(Path(files.build_record).read_text()),
    )
    series = settings["series"] or config["_experiment"]
    when = started or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    rows = record(run_files, series, when, config, experiment)
    gate_settings = GateSettings(
        alpha=settings["alpha"],
        min_runs=settings["min_runs"],
        min_change=settings["min_change"],
        reference_since=settings["reference_since"],
        exclude=tuple(settings["exclude"]),
        window=settings["window"],
    )
    verdict = land_and_gate(Path(settings["path"]), rows, gate_settings)
    result = {**base, "state": "ok", **verdict}
    result["reason"] = f"{verdict['verdict']} against {verdict['compared_runs']} comparable earlier runs"
    logging.getLogger("dispatchprof").info("history: %s (%s)", result["reason"], verdict["record"])
write_json_atomic(snakemake.output.verdict, result)
