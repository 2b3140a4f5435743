"""Entry point of rule build: run deepep.build_command if set; fingerprint the libraries either way."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_json_atomic  # noqa: E402
from dispatchprof.tools.building import fingerprint, run_build  # noqa: E402
from dispatchprof.stages.absent import COLLECT_ONLY  # noqa: E402
from dispatchprof.shell.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.shell.status import Status  # noqa: E402
from dispatchprof.tools.debugbuild import checkout_ref  # noqa: E402
from dispatchprof.shell.gitref import RefError  # noqa: E402
from dispatchprof.tools.toolchain import resolve  # noqa: E402


def body(run: StageRun) -> Status:
    deepep = run.config["deepep"]
    if run.config["mode"] == "analyze":
        return run.status("disabled", COLLECT_ONLY["build"])  # normally written by rule not_provided (the same status)
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    chain = resolve(run.config)
    record = {
        "toolchain": run.toolchain,
        "repo": str(chain.repo),
        "command": deepep["build_command"],
        "environment": deepep["build_env"],
        "build_dir": deepep["build_dir"],
    }
    if deepep.get("ref"):
        try:
            record.update(checkout_ref(run.config, chain))
        except (RefError, RuntimeError, OSError) as exc:
            return run.status("failed", f"build of deepep.ref {deepep['ref']!r}: {exc}", upstream=gate.upstream)
    copies = run.outputs["record"].parent / "libs"
    if not deepep["build_command"]:
        record["libraries"] = fingerprint(chain.repo, deepep["library_globs"], copies)
        write_json_atomic(run.outputs["record"], record)
        return run.status(
            "ok",
            f"no build ran (deepep.build_command is null); recorded {len(record['libraries'])} installed libraries",
            upstream=gate.upstream,
        )
    log_path = Path(snakemake.log[0]).with_name("build_command.log")
    result = run_build(chain, deepep["build_command"], deepep["build_env"], run.timeout, log_path, deepep["build_dir"])
    record.update(exit_code=result.exit_code, timed_out=result.timed_out, log=str(log_path))
    flags = chain.repo / "build" / "device_compile_flags.txt"
    if flags.is_file():
        record["device_compile_flags"] = flags.read_text().split()
    record["libraries"] = fingerprint(chain.repo, deepep["library_globs"], copies) if result.ok else []
    write_json_atomic(run.outputs["record"], record)
    common = dict(
        command=deepep["build_command"],
        exit_code=result.exit_code,
        upstream=gate.upstream,
        artifacts=[str(run.outputs["record"]), str(log_path)],
    )
    if result.timed_out:
        return run.status("timeout", f"build exceeded its {run.timeout:g} s budget; see {log_path}", **common)
    if not result.ok:
        return run.status(
            "failed",
            f"build command failed ({result.error or f'exit code {result.exit_code}'}); see {log_path}",
            **common,
        )
    if not record["libraries"]:
        return run.status(
            "invalid", f"build exited 0 but no library matched deepep.library_globs {deepep['library_globs']}", **common
        )
    at = f" deepep.ref {record['ref']!r} ({record['sha'][:12]}) in {record['tree']};" if "sha" in record else ""
    return run.status("ok", f"built;{at} {len(record['libraries'])} libraries fingerprinted (sha256)", **common)


run_stage(snakemake, "build", body)
