"""Entry point of rule baseline_collect: run the perf driver on every node; validate precision and outputs."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.tools.collective import run_driver
from dispatchprof.shell.stage import StageRun, run_stage
from dispatchprof.shell.status import Status, Validation
from dispatchprof.tools.toolchain import resolve


def body(run: StageRun) -> Status:
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    if busy := run.hold_cluster():  # the cluster is this job's from here to its end
        return busy
    cfg, out = run.config, run.outputs["run"]
    chain = resolve(cfg)
    test = run_driver(
        cfg,
        chain,
        Path(run.inputs["driver"]),
        out,
        f"{run.experiment}_baseline",
        run.timeout,
        cfg["baseline"]["iterations"],
        cfg["baseline"]["warmup"],
    )
    csv = out / "latency" / "dispatch_latency.csv"
    validations = [Validation("dispatch_latency.csv written (rank 0)", csv.is_file(), "error", str(csv))]
    common = dict(
        command=test.command,
        upstream=gate.upstream,
        artifacts=[str(out)],
        validations=validations,
        details=test.details,
    )
    if test.verdict.state != "ok":
        return run.status(test.verdict.state, f"perf driver: {test.verdict.reason}", **common)
    if not csv.is_file():
        return run.status(
            "invalid",
            f"every rank passed but {csv} was not written: check profile_dispatch_latency in the node logs",
            **common,
        )
    return run.status(
        "ok",
        f"{cfg['baseline']['iterations']} calls per rank on {len(test.table)} "
        "ranks; precision of the last result passed everywhere",
        **common,
    )


run_stage(snakemake, "baseline", body, part="collect")
