"""Entry point of rule env_capture_node: probe one node."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.atomic import write_json_atomic  # noqa: E402
from dispatchprof.envinfo import capture_node  # noqa: E402
from dispatchprof.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.status import Status, Validation  # noqa: E402
from dispatchprof.toolchain import resolve  # noqa: E402


def body(run: StageRun) -> Status:
    chain = resolve(run.config)
    probe_dir = run.outputs["env"].parent / "probes"
    env = capture_node(run.node, chain, run.config["deepep"]["python"], probe_dir, float(run.config["timeouts"]["env_capture"]))
    write_json_atomic(run.outputs["env"], env)
    unavailable = [name for name, p in env["probes"].items() if not p["available"]]
    validations = [Validation(f"probe {name}", p["available"], "warning", p["error"] or "recorded") for name, p in env["probes"].items()]
    reason = f"node {run.node} recorded; op-profiler entry: {env['op_profiler_entry']}"
    if unavailable:
        reason += f"; unavailable: {', '.join(unavailable)}"
    return run.status("ok", reason, validations=validations, artifacts=[str(run.outputs["env"]), str(probe_dir)])


run_stage(snakemake, "env_capture", body, part=f"node{snakemake.wildcards.node}")
