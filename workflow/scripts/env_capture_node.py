"""Entry point of rule env_capture_node: probe one node, then preflight it (every problem listed)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_json_atomic  # noqa: E402
from dispatchprof.tools.envinfo import capture_node  # noqa: E402
from dispatchprof.tools.preflight_plan import node_spec, profiler_findings, run_node_checks, write_token  # noqa: E402
from dispatchprof.shell.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.shell.status import Status, Validation  # noqa: E402
from dispatchprof.tools.toolchain import resolve  # noqa: E402


def body(run: StageRun) -> Status:
    chain = resolve(run.config, built=False)  # before the build: deepep.repo itself (deepep.ref is checked out later)
    node_dir = run.outputs["env"].parent
    probe_dir = node_dir / "probes"
    timeout = float(run.config["timeouts"]["env_capture"])
    env = capture_node(
        run.node, chain, run.config["deepep"]["python"], probe_dir, timeout, run.config["cluster"]["forward_env"]
    )
    # Preflight: what would fail a collective stage on this node after its allocation was paid for.
    token = write_token(node_dir / "shared_fs_token.json") if run.config["launcher"] == "ssh" else None
    spec = node_spec(run.config, chain, run.node, node_dir.parents[2], token, timeout / 4, run.params["check_ports"])
    findings = profiler_findings(run.config, env) + run_node_checks(
        run.config, spec, node_dir / "preflight_spec.json", timeout / 4
    )
    env["preflight"] = findings
    write_json_atomic(run.outputs["env"], env)
    unavailable = [name for name, p in env["probes"].items() if not p["available"]]
    # node-named: the env_capture status holds every node's checks, and nodes often fail the same probe
    validations = [
        Validation(f"node {run.node}: probe {name} answered", p["available"], "warning", p["error"] or "recorded")
        for name, p in env["probes"].items()
    ]
    validations += [
        Validation(f"node {run.node}: preflight: {f['check']}", f["ok"], "error", f["detail"]) for f in findings
    ]
    common = dict(validations=validations, artifacts=[str(run.outputs["env"]), str(probe_dir)])
    problems = [f"{f['check']}: {f['detail']}" for f in findings if not f["ok"]]
    if problems:
        return run.status(
            "failed", f"preflight on node {run.node} found {len(problems)} problem(s): " + "; ".join(problems), **common
        )
    reason = (
        f"node {run.node} recorded, preflight passed ({len(findings)} "
        f"checks); op-profiler entry: {env['op_profiler_entry']}"
    )
    if unavailable:
        reason += f"; unavailable: {', '.join(unavailable)}"
    return run.status("ok", reason, **common)


run_stage(snakemake, "env_capture", body, part=f"node{snakemake.wildcards.node}")
