"""Stage debugclock: parse the DebugClock files (collected, or analyze.debugclock_dir), per-role phase
statistics, the busiest slot against its peers, wait versus work, and the ON/OFF overhead (collected only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dispatchprof.analysis.debugclock import load_overhead, summarize
from dispatchprof.analysis.rank_identity import refused_sentence
from dispatchprof.shell.atomic import write_json_atomic, write_parquet_atomic
from dispatchprof.formats.debugclock import DebugClockFormatError, load_tree
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation
from dispatchprof.stages.absent import DEBUGCLOCK_NOT_PROVIDED
from dispatchprof.stages.imports import tree_problems, unreadable_entries


def debugclock(run: StageRun, parts: Mapping[str, Status]) -> Status:
    """The stage; ``parts`` holds the collect part's status when collected here (none in analyze mode)."""
    cfg = run.config
    upstream = {k: p.state for k, p in parts.items()}
    if cfg["mode"] == "analyze":
        root = cfg["analyze"]["debugclock_dir"]
        if not root:
            return run.status(
                "skipped", DEBUGCLOCK_NOT_PROVIDED, source="import"
            )  # normally written by rule not_provided
        root = Path(root)
        problems = tree_problems(root) if root.exists() or root.is_symlink() else []
        if problems:  # this stage reads its import itself (no debugclock_import rule): it refuses the tree so
            return run.status(
                "invalid", unreadable_entries("debugclock_dir", root, problems), source="import", upstream=upstream
            )
    else:
        root = Path("results") / run.experiment / "debugclock" / "raw"
    meta = {"toolchain": run.toolchain, "data_source": run.source}  # "source" is the DebugClock format
    try:
        skip = cfg["debugclock"]["warmup"] if cfg["mode"] == "collect" else 0
        loaded = load_tree(root)
        result = summarize(loaded, cfg, skip)
    except DebugClockFormatError as exc:
        return run.status("invalid", str(exc), upstream=upstream)
    left_out = refused_sentence(loaded.refused)
    refused = (
        [Validation("every rank's DebugClock files can be read", False, "warning", left_out.removeprefix(". "))]
        if loaded.refused
        else []
    )
    if result is None:
        return run.status(
            "invalid",
            f"no {'readable ' if loaded.refused else ''}DebugClock file under {root} "
            "(dispatch_clock*_rank_*.csv, or rank<R>-pid<P>-launch<L>/trace.bin)" + left_out,
            upstream=upstream,
            validations=refused,
        )
    stats, segments, per_rank = result
    if cfg["mode"] == "collect":
        stats["overhead"] = load_overhead(Path(run.params["run_dir"]), cfg["debugclock"]["runs"])
        stats["collect"] = parts["debugclock_collect"].details
    else:
        stats["overhead"] = None
        stats["collect"] = {}
    stats.update(meta, refused=loaded.refused)
    write_parquet_atomic(
        run.outputs["segments"], segments, {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    )
    write_parquet_atomic(
        run.outputs["per_rank"], per_rank, {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    )
    write_json_atomic(run.outputs["stats"], stats)
    validations = debugclock_validations(stats) + refused
    busy = stats["busiest"]
    named = (
        f"busiest: rank {busy['rank']} {busy['role']} slot {busy['slot']} "
        f"({busy['phase']}), +{busy['excess_us']:.1f} us over its peers"
        if busy
        else "no slot exceeds its peers"
    )
    node = stats["busiest_node"]
    if node:
        named += (
            f"; every rank of node {node['node']}: {node['role']} "
            f"{node['phase']} +{node['excess_us']:.1f} us over the other nodes'"
        )
    reason = f"{stats['source']}: {stats['ranks']} ranks, {stats['cores']} cores; {named}" + left_out
    return run.status(
        "ok", reason, upstream=upstream, validations=validations, artifacts=[str(p) for p in run.outputs.values()]
    )


def debugclock_validations(stats: Mapping[str, Any]) -> list[Validation]:
    """Warnings: roles that disagree with the event paths, the
    legacy analyzer's clipping, markers the recorder dropped."""
    validations = (
        [
            Validation(
                "roles",
                False,
                "warning",
                f"kernel.roles disagrees with the event paths on {len(stats['role_mismatches'])} cores",
            )
        ]
        if stats["role_mismatches"]
        else []
    )
    validations += (
        [
            Validation(
                "legacy analyzer clipping", False, "warning", f"{stats['clipped']}: reported as measured, not zeroed"
            )
        ]
        if any(stats["clipped"].values())
        else []
    )
    validations += (
        [
            Validation(
                "AKL recorder capacity",
                False,
                "warning",
                f"{stats['dropped_markers']} markers dropped by the recorder "
                "(capacity reached): the segments around them span the lost markers",
            )
        ]
        if stats.get("dropped_markers")
        else []
    )
    return validations
