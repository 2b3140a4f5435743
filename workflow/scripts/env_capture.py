"""Entry point of rule env_capture: fold the nodes' captures, warn about cross-node mismatches."""

import json
import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_json_atomic  # noqa: E402
from dispatchprof.tools.envinfo import common_op_entry, compare_nodes  # noqa: E402
from dispatchprof.stages.absent import COLLECT_ONLY, write_env_record  # noqa: E402
from dispatchprof.shell.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.shell.status import Status, Validation, fold, read_input_status  # noqa: E402


def body(run: StageRun) -> Status:
    if run.config["mode"] == "analyze":
        # Normally written by rule not_provided, which Snakemake prefers in analyze mode (the same record).
        write_env_record(run.outputs["env"])
        return run.status("disabled", COLLECT_ONLY["env_capture"])
    parts = {f"node{n}": read_input_status(p) for n, p in enumerate(run.inputs["nodes"])}
    envs = []
    for name, part in parts.items():
        env_file = Path(run.inputs["nodes"][int(name[4:])]).with_name("env.json")
        if part.ok:
            envs.append(json.loads(env_file.read_text()))
    warnings = compare_nodes(envs) if envs else []
    entry = common_op_entry(envs) if envs else "none"
    write_json_atomic(
        run.outputs["env"],
        {"toolchain": run.toolchain, "op_profiler_entry": entry, "mismatches": warnings, "nodes": envs},
    )
    status = fold("env_capture", run.experiment, run.toolchain, parts, artifacts=[str(run.outputs["env"])])
    status.validations += [Validation("nodes agree", False, "warning", w) for w in warnings]
    for env in envs:  # set_env.sh's stderr: the wrapped commands drop it, so it is shown here once per node
        record = env.get("set_env") or {}
        if record.get("used") and (record.get("stderr") or record.get("error")):
            said = record.get("error") or f"{record['sourced']} printed on stderr: " + " | ".join(record["stderr"][-5:])
            validations_ok = not record.get("error")
            status.validations.append(
                Validation(
                    f"node{env['node']}: CANN set_env.sh",
                    validations_ok,
                    "warning",
                    f"{said} ({record['output_file']})",
                )
            )
    status.details = {
        "op_profiler_entry": entry,
        "nodes_recorded": len(envs),
        "set_env": {f"node{e['node']}": (e.get("set_env") or {}).get("sourced") for e in envs},
        "msprof_form": {f"node{e['node']}": (e.get("msprof_form") or {}).get("form") for e in envs},
    }
    if status.ok:
        status.reason = f"all {len(parts)} nodes recorded and passed preflight; op-profiler entry: {entry}" + (
            f"; {len(warnings)} cross-node mismatch(es)" if warnings else ""
        )
    return status


run_stage(snakemake, "env_capture", body)
