"""Entry point of rule correctness: the V2 precision test on every node and rank."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.analysis.correctness import rank_table, verdict  # noqa: E402
from dispatchprof.atomic import write_parquet_atomic  # noqa: E402
from dispatchprof.collective import launcher, node_specs, test_command  # noqa: E402
from dispatchprof.formats.ranklog import LogFormatError, find_pass_lines  # noqa: E402
from dispatchprof.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.status import Status, Validation  # noqa: E402
from dispatchprof.toolchain import resolve  # noqa: E402


def body(run: StageRun) -> Status:
    if run.config["mode"] == "analyze":
        return run.status("disabled", "precision is not checked in analyze mode: the artifacts were collected elsewhere")
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    cfg = run.config
    chain = resolve(cfg)
    log_dir = run.outputs["run"].resolve()  # node logs and the test's own logs; recreated on every run
    test_logs = log_dir / "deepep"
    run_tag = f"{run.experiment}_correctness"
    specs = node_specs(cfg, chain, lambda node: test_command(cfg, chain, test_logs, run_tag), log_dir)
    result = launcher(cfg).run(specs, float(run.params["timeout"]))

    logs = [s.log_path for s in specs] + list(test_logs.glob(cfg["deepep"]["log_glob"]))
    common = dict(command=specs[0].argv, upstream=gate.upstream, artifacts=[str(run.outputs["ranks"]), str(log_dir)])
    try:
        passed = find_pass_lines([p for p in logs if p.is_file()], cfg["deepep"]["pass_pattern"])
    except LogFormatError as exc:
        return run.status("invalid", str(exc), **common)
    table = rank_table(cfg["cluster"]["nodes"], cfg["cluster"]["ranks_per_node"], passed, result)
    write_parquet_atomic(run.outputs["ranks"], table, {"dispatchprof.toolchain": run.toolchain})
    outcome = verdict(table, result)
    validations = [
        Validation("every rank printed its success line", bool(table["passed"].all()), "error", f"{int(table['passed'].sum())} of {len(table)} ranks passed"),
        Validation("every node exited 0", result.all_exited_zero, "error", ", ".join(f"node {n.node}: {n.exit_code}" for n in result.nodes)),
        Validation("node 0 started first", result.order[:1] == [0], "error", f"start order {result.order}"),
    ]
    exit_code = max((n.exit_code for n in result.nodes if n.exit_code is not None), key=abs, default=None)
    return run.status(outcome.state, outcome.reason, validations=validations, exit_code=exit_code, **common)


run_stage(snakemake, "correctness", body)
