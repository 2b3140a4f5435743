"""Stage debugclock_collect: the DEBUG_CLOCK_ON build in its own worktree, then the perf driver with
DebugClock OFF (the baseline build) and ON (the DEBUG build) alternating, every run on every node.

The fallback when kernel replay of the cross-rank kernel hangs or changes results (debugclock.when: fallback): runs
when PMU is not ok. The ON build's latencies never enter the baseline; its DebugClock files land per node under
raw/run<i>/node<k>/, the layout analyze.debugclock_dir has.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping

from dispatchprof.shell.atomic import copy_under_umask
from dispatchprof.tools.launch import CommandResult
from dispatchprof.tools.collective import run_driver
from dispatchprof.tools.debugbuild import (
    baseline_intact,
    build_debug,
    decide,
    imported_from_tree,
    loaded_libraries,
    make_tree,
)
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation, read_input_status
from dispatchprof.tools.toolchain import Toolchain, resolve, source_repo

# The legacy DEBUG build writes its clocks over tpSendCountsOut (docs/formats.md §3): a precision failure of the ON run
# alone is the instrumentation's, not the kernel's. It still makes the stage invalid: an ON run whose results are
# wrong is not the run the clocks were meant to time, and a lead reading "ok" would trust them.
KNOWN_CAUSE = (
    "the legacy DEBUG build overwrites tpSendCountsOut with its clocks "
    "(docs/formats.md §3): the instrumentation's failure, not the kernel's"
)


def debug_tree(cfg: Mapping[str, Any], chain: Toolchain, record: Mapping[str, Any], dest: Path):
    """The DEBUG build's checkout: with deepep.ref at the side's commit (the build record's sha), not HEAD."""
    if cfg["deepep"].get("ref"):
        return make_tree(source_repo(cfg), dest, ref=record["sha"])
    return make_tree(chain.repo, dest)


def debugclock_collect(run: StageRun, logs: Path) -> Status:
    """The collect part; ``logs`` is the directory of the job's log, where the DEBUG build's log goes."""
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]}, {"pmu": run.inputs["pmu"]})
    if not gate.open:
        return run.skipped(gate)
    cfg, dc = run.config, run.config["debugclock"]
    pmu = read_input_status(run.inputs["pmu"])
    go, why = decide(dc["when"], pmu.state, pmu.reason)
    if not go:
        return run.status("disabled", why, upstream=gate.upstream, details={"pmu": pmu.state})
    deepep = cfg["deepep"]
    if not deepep["build_command"]:
        return run.status(
            "failed",
            "deepep.build_command is null: no DEBUG_CLOCK_ON build can be made (it needs its own build)",
            upstream=gate.upstream,
        )
    chain = resolve(cfg)
    raw, out = run.outputs["raw"].resolve(), run.outputs["run"].resolve()
    empty_dirs(raw, out)
    record = json.loads(Path(run.inputs["build_record"]).read_text())
    try:
        tree = debug_tree(cfg, chain, record, run.outputs["raw"].parent / "tree")
    except (OSError, RuntimeError, KeyError, shutil.Error) as exc:
        return run.status(
            "failed",
            f"could not check out a second copy of {chain.repo} for the DEBUG build: {exc}",
            upstream=gate.upstream,
        )
    debug_chain, built = build_debug(
        chain,
        tree,
        deepep["build_command"],
        deepep["build_env"],
        run.timeout,
        logs / "debug_build.log",
        deepep["build_dir"],
    )
    intact, intact_detail = baseline_intact(chain.repo, deepep["library_globs"], record)
    validations = [
        Validation("baseline build untouched (sha256 of the build record)", intact, "error", intact_detail),
        *[Validation("DEBUG tree", True, "warning", note) for note in tree.notes],
    ]
    details = {
        "pmu": pmu.state,
        "why": why,
        "tree": str(tree.path),
        "tree_how": tree.how,
        "format": dc["format"],
        "runs": dc["runs"],
    }
    common = dict(
        upstream=gate.upstream, validations=validations, details=details, command=list(deepep["build_command"])
    )
    if not intact:
        return run.status("failed", intact_detail, **common)
    unbuilt = build_failure(built, run.timeout, logs / "debug_build.log")
    if unbuilt:
        return run.status(*unbuilt, **common)
    event_map = tree.path / dc["event_map"]
    if event_map.is_file():
        copy_under_umask(event_map, raw / "event_map.json")

    if busy := run.hold_cluster():  # from the first run on: the DEBUG build needs no NPU
        return busy
    failure, precision, commands = off_on_runs(run, chain, debug_chain, raw, out)
    if failure:
        return run.status(*failure, **common)
    details["libraries"] = {variant: loaded_libraries(out / f"{variant}0") for variant in ("off", "on")}
    from_tree, where = imported_from_tree(details["libraries"]["on"], tree.path)
    validations.append(
        Validation("the ON run imported the DEBUG build's checkout (sha256 in its log)", from_tree, "error", where)
    )
    if not from_tree:
        return run.status("invalid", where, **common)
    details["precision_on"] = (
        "passed on every rank" if not precision else f"failed ({'; '.join(precision)}): {KNOWN_CAUSE}"
    )
    details["commands"] = [c[-6:] for c in commands]
    if precision:
        validations.append(Validation("precision of the DEBUG_CLOCK_ON run", False, "error", details["precision_on"]))
        return run.status(
            "invalid",
            f"the DEBUG_CLOCK_ON run failed the precision check ({'; '.join(precision)}): {KNOWN_CAUSE}",
            **common,
        )
    if not wrote_clock_files(raw):
        return run.status(
            "invalid",
            "the DEBUG_CLOCK_ON build ran but wrote no DebugClock file "
            f"under {raw} (dispatch_clock*_rank_*.csv or trace.bin)",
            **common,
        )
    return run.status(
        "ok",
        f"{why}; DEBUG_CLOCK_ON build in a {tree.how} ({tree.path.name}), {dc['runs']} OFF/ON run pair(s) of "
        f"{dc['iterations']} calls; precision of the ON run {details['precision_on'].split(' (')[0].split(':')[0]}",
        artifacts=[str(raw), str(out)],
        **common,
    )


def empty_dirs(*dirs: Path) -> None:
    """Each directory made anew and empty: nothing of an earlier collection is mistaken for this one's."""
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)


def build_failure(built: CommandResult, budget_s: float, log: Path) -> tuple[str, str] | None:
    """The state and reason when the DEBUG_CLOCK_ON build gave no library to run; None when it did."""
    if built.timed_out:
        return "timeout", f"the DEBUG_CLOCK_ON build exceeded its {budget_s:g} s budget; see {log}"
    if not built.ok:
        return "failed", f"the DEBUG_CLOCK_ON build failed (exit code {built.exit_code}); see {log}"
    return None


def wrote_clock_files(raw: Path) -> bool:
    """Whether the ON runs left a DebugClock file of either format (legacy CSV or AKL trace) under ``raw``."""
    found = (str(p.relative_to(raw)) for p in raw.rglob("*") if p.is_file())
    return any("dispatch_clock" in f or f.endswith("trace.bin") for f in found)


def debugclock_wrap(
    raw: Path, index: int, dc: Mapping[str, Any], chain_name: str
) -> Callable[[int, list[str]], list[str]]:
    """The ON run's command on each node: its DebugClock files go to raw/run<index>/node<k>/."""

    def wrap(node: int, argv: list[str]) -> list[str]:
        where = raw / f"run{index}" / f"node{node}"
        where.mkdir(parents=True, exist_ok=True)
        env = [f"DISPATCH_CLOCK_DIR={where}", f"AKL_TRACE_DIR={where}", f"AKL_TRACE_KEEP_LAST={dc['akl_keep_last']}"]
        if chain_name == "sim":
            env.append(f"DEEPEP_SIM_DEBUGCLOCK_FORMAT={dc['format']}")
        return ["env", *env, *argv]

    return wrap


def off_on_runs(
    run: StageRun, chain: Toolchain, debug_chain: Toolchain, raw: Path, out: Path
) -> tuple[tuple[str, str] | None, list[str], list[list[str]]]:
    """debugclock.runs pairs of the perf driver, OFF (the baseline build) then ON (the DEBUG build). Returns the
    (state, reason) that ends the part early, or None; the ON runs' precision failures (the instrumentation's,
    KNOWN_CAUSE); every command."""
    cfg, dc = run.config, run.config["debugclock"]
    precision, commands = [], []
    driver = Path(run.inputs["driver"])
    for i in range(dc["runs"]):
        # OFF then ON, alternating: drift between them lands on
        # both builds alike. The baseline's numbers are not reused.
        for variant, use_chain, wrap in (
            ("off", chain, None),
            ("on", debug_chain, debugclock_wrap(raw, i, dc, chain.name)),
        ):
            test = run_driver(
                cfg,
                use_chain,
                driver,
                out / f"{variant}{i}",
                f"{run.experiment}_debugclock_{variant}{i}",
                run.timeout,
                dc["iterations"],
                dc["warmup"],
                wrap=wrap,
            )
            commands.append(test.command)
            if test.result.timed_out:
                return (
                    (
                        "timeout",
                        f"the DebugClock {variant.upper()} run {i} exceeded "
                        f"its {run.timeout:g} s budget: {test.result.problem}",
                    ),
                    precision,
                    commands,
                )
            if test.verdict.state != "ok":
                if variant == "on" and test.verdict.cause == "precision":
                    precision.append(f"run {i}: {test.verdict.reason}")
                    continue
                return (
                    ("failed", f"the DebugClock {variant.upper()} run {i} did not complete: {test.verdict.reason}"),
                    precision,
                    commands,
                )
    return None, precision, commands
