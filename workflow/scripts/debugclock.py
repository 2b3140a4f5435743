"""Entry point of rule debugclock: parse the DebugClock files (collected, or analyze.debugclock_dir), per-role phase
statistics, the busiest slot against its peers, wait versus work, and the ON/OFF overhead (collected only)."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.stages.absent import DEBUGCLOCK_NOT_PROVIDED  # noqa: E402
from dispatchprof.shell.stage import StageRun, needed_parts_or_end, run_stage  # noqa: E402

if snakemake.params["needed"]:
    NEEDED = needed_parts_or_end(snakemake, "debugclock")  # ends the job here when the collect part is not ok
else:
    NEEDED = {}

from dispatchprof.analysis.debugclock import load_overhead, summarize  # noqa: E402
from dispatchprof.shell.atomic import write_json_atomic, write_parquet_atomic  # noqa: E402
from dispatchprof.formats.debugclock import DebugClockFormatError, load_tree  # noqa: E402
from dispatchprof.shell.status import Status, Validation  # noqa: E402


def body(run: StageRun) -> Status:
    cfg = run.config
    upstream = {k: p.state for k, p in NEEDED.items()}
    if cfg["mode"] == "analyze":
        root = cfg["analyze"]["debugclock_dir"]
        if not root:
            return run.status("skipped", DEBUGCLOCK_NOT_PROVIDED, source="import")  # normally written by rule not_provided
        root = Path(root)
    else:
        root = Path("results") / run.experiment / "debugclock" / "raw"
    meta = {"toolchain": run.toolchain, "data_source": run.source}  # "source" is the DebugClock format
    try:
        skip = cfg["debugclock"]["warmup"] if cfg["mode"] == "collect" else 0
        result = summarize(load_tree(root), cfg, skip)
    except DebugClockFormatError as exc:
        return run.status("invalid", str(exc), upstream=upstream)
    if result is None:
        return run.status("invalid", f"no DebugClock file under {root} (dispatch_clock*_rank_*.csv, or rank<R>-pid<P>-launch<L>/trace.bin)", upstream=upstream)
    stats, segments, per_rank = result
    if cfg["mode"] == "collect":
        stats["overhead"] = load_overhead(Path(run.params["run_dir"]), cfg["debugclock"]["runs"])
        stats["collect"] = NEEDED["debugclock_collect"].details
    else:
        stats["overhead"] = None
        stats["collect"] = {}
    stats.update(meta)
    write_parquet_atomic(run.outputs["segments"], segments, {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source})
    write_parquet_atomic(run.outputs["per_rank"], per_rank, {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source})
    write_json_atomic(run.outputs["stats"], stats)
    validations = (
        [Validation("roles", False, "warning", f"kernel.roles disagrees with the event paths on {len(stats['role_mismatches'])} cores")]
        if stats["role_mismatches"]
        else []
    )
    validations += (
        [Validation("legacy analyzer clipping", False, "warning", f"{stats['clipped']}: reported as measured, not zeroed")]
        if any(stats["clipped"].values())
        else []
    )
    validations += (
        [
            Validation(
                "AKL recorder capacity",
                False,
                "warning",
                f"{stats['dropped_markers']} markers dropped by the recorder (capacity reached): the segments around them span the lost markers",
            )
        ]
        if stats.get("dropped_markers")
        else []
    )
    busy = stats["busiest"]
    named = (
        f"busiest: rank {busy['rank']} {busy['role']} slot {busy['slot']} ({busy['phase']}), +{busy['excess_us']:.1f} us over its peers"
        if busy
        else "no slot exceeds its peers"
    )
    reason = f"{stats['source']}: {stats['ranks']} ranks, {stats['cores']} cores; {named}"
    return run.status("ok", reason, upstream=upstream, validations=validations, artifacts=[str(p) for p in run.outputs.values()])


run_stage(snakemake, "debugclock", body)
