"""Entry point of rule baseline_driver: generate perf_driver.py from the repository's V2 test (ast patch)."""

import shutil
import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import jinja2

from dispatchprof.shell.atomic import write_text_atomic
from dispatchprof.tools.driver import PatchError, patch_test
from dispatchprof.shell.stage import StageRun, run_stage
from dispatchprof.shell.status import Status, Validation
from dispatchprof.shell.gitref import RefError, file_at, resolve_ref
from dispatchprof.tools.toolchain import resolve, source_repo

TEMPLATES = Path(snakemake.scriptdir).resolve().parent / "templates"


def body(run: StageRun) -> Status:
    cfg = run.config
    chain = resolve(cfg)
    test = chain.repo / cfg["deepep"]["test"]
    if cfg["deepep"].get("ref"):
        # before the build stage checks the ref out: the test as the ref's commit has it (git show)
        try:
            sha = resolve_ref(source_repo(cfg), cfg["deepep"]["ref"])
        except RefError as exc:
            return run.status("failed", str(exc))
        text = file_at(source_repo(cfg), sha, cfg["deepep"]["test"])
        if text is None:
            return run.status("failed", f"the test {cfg['deepep']['test']} is not in deepep.ref's commit {sha}")
    elif not test.is_file():
        return run.status("failed", f"the test {test} does not exist (deepep.repo + deepep.test)")
    else:
        text = test.read_text()
    loop = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True).from_string(
        (TEMPLATES / "perf_loop.py.j2").read_text()
    )
    try:
        patched = patch_test(
            text,
            str(test),
            cfg["baseline"]["dispatch_call"],
            lambda v: loop.render(**v),
            cfg["cluster"]["ranks_per_node"],
        )
    except PatchError as exc:
        return run.status("failed", str(exc))
    write_text_atomic(run.outputs["driver"], patched.source)
    write_text_atomic(run.outputs["diff"], patched.diff)
    shutil.copyfile(TEMPLATES / "dispatchprof_perf_runtime.py", run.outputs["runtime"])
    rank_id = Validation(
        "RANK_ID set at the start of the per-rank function",
        patched.spawn_function is not None,
        "warning",
        "; ".join(patched.notes) or f"in {patched.spawn_function}()",
    )
    reason = f"replaced {cfg['baseline']['dispatch_call']}(...) at {test.name}:{patched.dispatch_line} by the perf loop"
    reason += (
        f"; RANK_ID set in {patched.spawn_function}()"
        if patched.spawn_function
        else "; RANK_ID not set (per-rank function not found): ranks rely on the identity sidecar"
    )
    return run.status(
        "ok",
        reason,
        validations=[rank_id],
        artifacts=[str(p) for p in run.outputs.values()],
        details={"spawn_function": patched.spawn_function},
    )


run_stage(snakemake, "baseline", body, part="driver")
