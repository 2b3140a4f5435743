"""Entry point of rule correctness: the V2 precision test on every node and rank."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.analysis.correctness import rank_frame
from dispatchprof.shell.atomic import write_parquet_atomic
from dispatchprof.tools.collective import TestRun, run_test
from dispatchprof.stages.absent import COLLECT_ONLY
from dispatchprof.shell.stage import StageRun, run_stage
from dispatchprof.shell.status import Status, Validation
from dispatchprof.tools.toolchain import resolve


def run_validations(test: TestRun) -> list[Validation]:
    rows, result = test.table, test.result
    assert rows is not None, "validations need the rank table: a run whose logs could not be read has none"
    passed = sum(row.passed for row in rows)
    return [
        Validation(
            "every rank printed its success line", passed == len(rows), "error", f"{passed} of {len(rows)} ranks passed"
        ),
        Validation(
            "every node exited 0",
            result.all_exited_zero,
            "error",
            ", ".join(f"node {n.node}: {n.exit_code}" for n in result.nodes),
        ),
        Validation("node 0 started first", result.order[:1] == [0], "error", f"start order {result.order}"),
    ]


def body(run: StageRun) -> Status:
    if run.config["mode"] == "analyze":
        return run.status(
            "disabled", COLLECT_ONLY["correctness"]
        )  # normally written by rule not_provided (the same status)
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    if busy := run.hold_cluster():  # the cluster is this job's from here to its end
        return busy
    test = run_test(run.config, resolve(run.config), run.outputs["run"], f"{run.experiment}_correctness", run.timeout)
    common = dict(
        command=test.command,
        upstream=gate.upstream,
        artifacts=[str(run.outputs["ranks"]), str(run.outputs["run"])],
        details=test.details,
    )
    if test.table is None:
        return run.status(test.verdict.state, test.verdict.reason, **common)
    write_parquet_atomic(run.outputs["ranks"], rank_frame(test.table), {"dispatchprof.toolchain": run.toolchain})
    codes = [n.exit_code for n in test.result.nodes if n.exit_code is not None]
    return run.status(
        test.verdict.state,
        test.verdict.reason,
        validations=run_validations(test),
        exit_code=max(codes, key=abs, default=None),
        **common,
    )


run_stage(snakemake, "correctness", body)
