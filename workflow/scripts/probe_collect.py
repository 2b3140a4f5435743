"""Entry point of rule probe_collect: the user's probe program under `msopprof simulator` (single card, no NPU)."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_text_atomic  # noqa: E402
from dispatchprof.formats.simulator import simulator_runs  # noqa: E402
from dispatchprof.tools.launch import run_command  # noqa: E402
from dispatchprof.tools.simulator import PARSE_MARGIN_S, judge, simulator_command  # noqa: E402
from dispatchprof.shell.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.shell.status import Status, Validation  # noqa: E402
from dispatchprof.tools.toolchain import resolve  # noqa: E402

DISABLED = (
    "probe.enabled is false: the local probe under msopprof simulator is optional "
    "and off by default (set probe.enabled, probe.command, probe.soc_version)"
)


def body(run: StageRun) -> Status:
    probe = run.config["probe"]
    raw = run.outputs["raw"].resolve()
    if not probe["enabled"]:
        return run.status("disabled", DISABLED)
    chain = resolve(run.config)
    raw.mkdir(parents=True, exist_ok=True)
    try:
        argv = simulator_command(
            probe["entry"], probe["soc_version"], raw, run.timeout, probe["command"], probe["kernel_name"]
        )
    except ValueError as exc:
        return run.status("failed", str(exc))
    result = run_command(chain.wrap(argv), run.timeout + PARSE_MARGIN_S, env=chain.env(), cwd=Path.cwd())
    log_path = run.outputs["raw"] / "msopprof_simulator.log"
    write_text_atomic(log_path, result.output)
    if result.error:
        return run.status("failed", f"could not start {argv[0]}: {result.error}", command=argv)
    kernels = simulator_runs(raw)
    outcome = judge(result.output, result.exit_code, result.timed_out, len(kernels), run.timeout, probe["entry"])
    validations = [
        Validation(
            "simulator output",
            bool(kernels),
            "error",
            f"{len(kernels)} OPPROF_*/simulator/ director{'y' if len(kernels) == 1 else 'ies'}",
        ),
        Validation(
            "scope", True, "warning", "simulator, single card, local probe: never evidence about the multi-rank kernel"
        ),
    ]
    return run.status(
        outcome.state,
        outcome.reason,
        command=argv,
        exit_code=result.exit_code,
        validations=validations,
        artifacts=[str(run.outputs["raw"])],
        details={"soc_version": probe["soc_version"], "entry": probe["entry"], "log": str(log_path)},
    )


run_stage(snakemake, "probe", body, part="collect")
