"""Stage timeline, the merge: fold the node groups' parts and coverage, then per-rank statistics, the waits
(coupling, node clocks, causes), the longest-duration view, gaps, call chain, and the merged trace.

No pandas, no pyarrow.compute: the merge reads the parse jobs' Parquet as numpy columns (tests/unit/test_job_imports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from dispatchprof.analysis import waits
from dispatchprof.analysis.latency import percentile
from dispatchprof.analysis.rank_identity import Coverage, coverage_of, refused_sentence
from dispatchprof.analysis.trace_causes import TraceCause
from dispatchprof.analysis.trace_counters import counter_events
from dispatchprof.analysis.trace_replay import LaunchReplay, ReplayedCause, replayed_tracks
from dispatchprof.analysis.timeline import (
    ChromeTrace,
    longest_duration,
    merged_call_chain,
    merged_trace,
    timeline_minus_kernel,
    used_launches,
)
from dispatchprof.report.cause_text import in_words
from dispatchprof.shell.atomic import write_json_atomic, write_table_parquet_atomic, write_text_atomic
from dispatchprof.shell.config import world_ranks
from dispatchprof.shell.gitref import workflow_commit
from dispatchprof.shell.intermediates import read_json, read_parquet
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation, fold, read_input_status

LAUNCH_COLUMNS = [
    "rank",
    "launch",
    "start_ns",
    "dur_ns",
    "gap_ns",
    "used",
    "barrier_start_ns",
    "barrier_dur_ns",
    "api_start_ns",
    "api_dur_ns",
]


@dataclass
class CoverageFold:
    """The node groups' coverage rows as one table, and what they say: which ranks were found, why others were not."""

    table: pa.Table
    covered: Coverage
    summary: dict[str, Any]
    absent_rows: list[dict[str, Any]]


def fold_coverage(node_tables: Iterable[pa.Table], world: int, min_fraction: float) -> CoverageFold:
    parts_with_rows = [
        t for t in node_tables if "global_rank" in t.column_names
    ]  # a skipped part's placeholder has none
    table = pa.concat_tables(parts_with_rows, promote_options="default") if parts_with_rows else pa.table({})
    rows = table.to_pylist()
    covered = coverage_of(world, [r["global_rank"] for r in rows if r["state"] == "found"], min_fraction)
    absent_rows = [r for r in rows if r["state"] != "found"]
    summary = {
        **covered.as_dict(),
        "sentence": covered.sentence(),
        "why_missing": {str(int(r["global_rank"])): str(r["detail"]) for r in absent_rows},
        # ranks whose files were there but unreadable or refused (each reason names the file): a user can act on them
        "refused": {str(int(r["global_rank"])): str(r["detail"]) for r in absent_rows if r["state"] == "refused"},
    }
    return CoverageFold(table, covered, summary, absent_rows)


def too_few(covered: Coverage, summary: Mapping[str, Any], kernel: str) -> str:
    """Why the timeline analyses nothing: too few ranks with data, or none (then the first rank's reason, or every
    refused rank's when all were refused), with the refused files named."""
    if covered.found:
        return (
            f"timeline data for {covered.sentence()}: below "
            f"stats.min_rank_coverage ({covered.min_fraction:.0%} of the ranks)" + refused_sentence(summary["refused"])
        )
    if summary["refused"] and len(summary["refused"]) == covered.expected:
        return "no rank has usable timeline data: every rank's files were refused" + refused_sentence(
            summary["refused"]
        )
    return (
        f"no rank has launches of kernel.name {kernel!r}: "
        + "; ".join(list(summary["why_missing"].values())[:1])
        + refused_sentence(summary["refused"])
    )


def longest_of(grid: waits.LaunchGrid, waited: Mapping[str, Any], causes: list[dict[str, Any]]) -> dict[str, Any]:
    """The rank with the longest durations, labelled so that it
    is never read as "slowest" when the ranks are coupled."""
    if len(grid.ranks) > 1:
        longest = longest_duration(grid.ranks.tolist(), grid.duration)
    else:  # one rank has no peer to be longer than: "slowest on rank 0 (100%)" would be an empty claim
        longest = {
            "rank": None,
            "ranks": [],
            "fraction": None,
            "kind": "not compared: a single rank has no peers",
            "launches_compared": 0,
            "per_rank_fraction": {},
        }
    blamed = {r for c in causes for r in c["ranks"]}
    if waited["coupling"]["state"] != "coupled":
        longest["label"] = "longest"
    elif longest["rank"] in blamed or set(longest["ranks"]) & blamed:
        longest["label"] = "longest, a named cause"  # a cause is never called a waiting rank
    else:
        longest["label"] = "waits longest"
    return longest


def rank_mapping(details: Mapping[int, Mapping[str, Any]], covered: Coverage, infer_rank: str) -> dict[str, Any]:
    inferred = sorted(
        r for r, d in details.items() if d.get("present") and str(d.get("mapping") or "").startswith("inferred")
    )
    return {
        "how": sorted({str(d["mapping"]) for d in details.values() if d.get("mapping")}),
        "inferred_ranks": inferred,
        "rule": infer_rank,
        "note": (
            f"{len(inferred)} of {len(covered.found)} ranks were numbered from device ids (cluster.infer_rank: "
            f"{infer_rank}); neither the tool (rank_id -1) nor our identity sidecar recorded them"
            if inferred
            else None
        ),
    }


def timeline_summary(stats: Mapping[str, Any]) -> dict[str, Any]:
    """The summary the report and summary.json read, drawn from the stats record it sits in."""
    strag, longest, coupling = stats["straggler"], stats["longest_duration"], stats["coupling"]
    return {
        "kernel_name": stats["kernel_name"],
        "chips": stats["chips"],
        "per_rank": {r: {k: v[k] for k in ("launches", "median_us", "p95_us")} for r, v in stats["per_rank"].items()},
        "causes": [{k: c.get(k) for k in waits.CAUSE_KEYS} for c in stats["causes"][:5]],
        "straggler": {k: strag.get(k) for k in (*waits.STRAGGLER_KEYS, "explanation")},
        "excess": strag["excess"],
        "waiting": strag["waiting"],
        "notes": strag["notes"],
        "longest_duration": {
            "rank": longest["rank"],
            "ranks": longest["ranks"],
            "fraction": longest["fraction"],
            "label": longest["label"],
        },
        "coupling": {k: coupling.get(k) for k in ("state", "end_spread_us_median", "start_spread_us_median")},
        "node_clock": stats["node_clock"],
        "coverage": stats["coverage"],
        "rank_mapping": stats["rank_mapping"],
        "gap_us": {k: stats["gap_us"][k] for k in ("median", "p95")} if stats["gap_us"] else None,
    }


def timeline_stats(
    run: StageRun,
    parts: Mapping[str, Status],
    fold_: CoverageFold,
    used: Mapping[str, np.ndarray],
    details: Mapping[int, Mapping[str, Any]],
    baseline: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """stats.json of the merge (with its ``summary``), and the waits analysis it was built from."""
    cfg = run.config
    launch_grid = waits.grid(
        used["rank"],
        used["launch"],
        {
            c: used[c].astype(float)
            for c in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns", "previous_end_ns")
            if c in used
        },
        cfg["cluster"]["ranks_per_node"],
    )
    settings = cfg["timeline"]["waits"]  # the causes in words (explanation) where the stats are written
    waited = in_words(
        waits.analyse(launch_grid, settings, fold_.summary["missing"], cfg["stats"]["bootstrap"]), settings
    )
    strag = waited["straggler"]
    causes = strag.pop("causes")
    longest = longest_of(launch_grid, waited, causes)
    gaps = used["gap_ns"].astype(float)
    gaps = gaps[~np.isnan(gaps)] / 1000
    symbols = sorted({d["symbol"] for d in details.values() if d.get("symbol")})
    base_ranks = (
        baseline.get("scopes", {}).get("kernel", {}).get("per_rank", {}) if not baseline.get("placeholder") else {}
    )
    difference = timeline_minus_kernel(details, base_ranks)
    mapping = rank_mapping(details, fold_.covered, cfg["cluster"]["infer_rank"])
    stats: dict[str, Any] = {
        "toolchain": run.toolchain,
        "source": run.source,
        "kernel_name": ",".join(symbols),
        "pattern": cfg["kernel"]["name"],
        "coverage": fold_.summary,
        "coverage_rows": fold_.absent_rows,
        "rank_mapping": mapping,
        "per_rank": {
            str(r): {
                "launches": d["launches"],
                "median_us": d["median_us"],
                "p95_us": d["p95_us"],
                "skipped": d["skipped"],
                "node": d.get("node"),
                "device": d.get("device"),
                "pid": d.get("pid"),
            }
            for r, d in sorted(details.items())
        },
        "causes": causes,
        "straggler": strag,
        "longest_duration": longest,
        "coupling": waited["coupling"],
        "node_clock": waited["node_clock"],
        "entry_wait_us": waited["entry_wait_us"],
        "entry_wait_heatmap": waited["entry_wait_heatmap"],
        "rank_offsets": strag.pop("rank_offsets"),
        "launch_picture": waited["launch_picture"],
        "gap_us": {"median": percentile(gaps, 50), "p95": percentile(gaps, 95), "n": int(len(gaps))}
        if len(gaps)
        else None,
        "call_chain": merged_call_chain(details.values(), cfg["timeline"]["known_kernels"]),
        "call_chain_scope": (
            "other kernels starting between consecutive target launches, over the first "
            f"{cfg['timeline']['call_chain_launches']} launch intervals of each rank (timeline.call_chain_launches)"
            if cfg["timeline"]["call_chain_launches"]
            else "other kernels starting between consecutive target launches, over every launch interval of each rank"
        ),
        "timeline_minus_kernel_scope_us": {
            "per_rank": difference,
            "median": float(np.median(list(difference.values()))) if difference else None,
            "definition": (
                "timeline kernel duration (msprof, median per rank) minus the baseline's kernel-scope latency (median "
                "per rank): the in-kernel entry barrier wait plus profiler "
                "overhead, which this data cannot separate. Listed apart from both."
            ),
        },
        "alignment": "ranks aligned by launch index of the target kernel",
        # provenance of the msprof databases (META_DATA SCHEMA_VERSION): readers are checked against 1.2.0
        "schema_versions": sorted({v for p in parts.values() for v in (p.details or {}).get("schema_versions", [])}),
        "chips": sorted(
            {c for p in parts.values() for c in (p.details or {}).get("chips", [])}
        ),  # as the PROF_ data names it
    }
    stats["summary"] = timeline_summary(stats)
    return stats, waited


def clock_corrected_trace(
    run: StageRun,
    used: Mapping[str, np.ndarray],
    details: Mapping[int, Mapping[str, Any]],
    waited: Mapping[str, Any],
    causes: Sequence[Mapping[str, Any]] = (),
    links_bound_us: float | None = None,
) -> Any:
    """The merged trace, on node clocks corrected by the waits' offsets and drifts when every node has one and the
    ranks are coupled (a pure barrier's ends), otherwise on the raw clocks."""
    cfg = run.config
    offsets = {int(n): c["offset_us"] for n, c in waited["node_clock"].items() if c["offset_us"] is not None}
    corrected = waited["coupling"]["state"] == "coupled" and len(offsets) == cfg["cluster"]["nodes"]
    drifts = {
        int(n): c["drift_ppm"] for n, c in waited["node_clock"].items() if c.get("drift_ppm")
    }  # an unresolved drift is None: left out
    reference = next(
        (c["reference_us"] for c in waited["node_clock"].values() if c.get("reference_us") is not None), 0.0
    )
    picture = waited.get("launch_picture") or {}
    return merged_trace(
        used,
        details,
        cfg["timeline"]["align_launch"],
        cfg["timeline"]["trace_launches"],
        offsets if corrected else None,
        toolchain=run.toolchain,
        node_drift_ppm=drifts if corrected else None,
        drift_reference_us=reference,
        barrier_kernel=cfg["timeline"].get("barrier_kernel") or None,
        causes=trace_causes(list(causes), waited.get("struck_by") or []),
        marked={k: (picture.get(k) or {}).get("launch") for k in ("typical", "costliest")},
        max_bytes=float(cfg["timeline"]["trace_max_mb"]) * 1e6,
        links_bound_us=links_bound_us,
        metadata={
            "node_clock": {
                str(n): {
                    k: c.get(k)
                    for k in ("offset_us", "drift_ppm", "drift_state", "release_skew_us", "spread_us")
                    if k in c
                }
                for n, c in waited["node_clock"].items()
            },
            "clock_corrected": corrected,
            "workflow_commit": workflow_commit(),  # the checkout that wrote the trace (None: not a git checkout)
        },
    )


def cause_label(cause: Mapping[str, Any]) -> str:
    """A named cause in a few words: its evidence and whose it is ("late arrival, rank 5")."""
    what = str(cause["evidence"]).replace("_", " ")
    if cause.get("node") is not None:
        return f"{what}, node {cause['node']}"
    ranks = list(cause.get("ranks") or [])
    if not ranks:
        return f"{what}, the whole group"
    return f"{what}, rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def struck_or_saved(per: Any) -> np.ndarray:
    """The rows of a cause's replay (waits.PerLaunch) where its delay acted or removing it saves time in either scope:
    where the trace draws it."""
    return np.asarray(per.struck, bool) | (np.asarray(per.period) > 0) | (np.asarray(per.timed) > 0)


def trace_causes(named: Sequence[Mapping[str, Any]], struck_by: list[Any]) -> list[TraceCause]:
    """The named causes with the launches each struck (waits.PerLaunch, in the same order), for the causes track: a
    launch where its delay acted or where its replay saves time in either scope."""
    out = []
    for cause, per in zip(named, struck_by):
        if per is None or per.launches is None:
            continue
        hit = struck_or_saved(per)
        out.append(
            TraceCause(
                label=cause_label(cause),
                evidence=str(cause["evidence"]),
                ranks=[int(r) for r in cause.get("ranks") or []],
                cost_us_per_launch=float(cause["cost_us_per_launch"]),
                launches=[int(x) for x in np.asarray(per.launches)[hit].tolist()],
                period_us=[round(float(x), 3) for x in np.asarray(per.period)[hit].tolist()],
                timed_us=[round(float(x), 3) for x in np.asarray(per.timed)[hit].tolist()],
            )
        )
    return out


def replayed_cause(cause: Mapping[str, Any], per: Any) -> ReplayedCause:
    """The named cause and its replay (waits.PerLaunch, with ranks) where it struck or saved time."""
    hit = struck_or_saved(per)
    ranks = [int(r) for r in np.asarray(per.ranks).tolist()]
    launches = {
        int(per.launches[i]): LaunchReplay(
            float(per.arrival_saving[i]),
            float(per.end_saving[i]),
            float(per.group_delay[i]),
            dict(zip(ranks, np.asarray(per.arrival_shift[i], float).tolist())),
            dict(zip(ranks, np.asarray(per.end_shift[i], float).tolist())),
        )
        for i in np.flatnonzero(hit).tolist()
    }
    order = np.argsort(np.asarray(per.launches), kind="stable")
    return ReplayedCause(
        cause_label(cause),
        float(cause["cost_us_per_launch"]),
        cause["cost_ci_us"],
        launches,
        [int(k) for k in np.asarray(per.launches)[order].tolist()],
        np.cumsum((np.asarray(per.arrival_saving) + np.asarray(per.group_delay))[order]).tolist(),
    )


def without_top_cause(trace: ChromeTrace, named: Sequence[Mapping[str, Any]], waited: Mapping[str, Any]) -> ChromeTrace:
    """The merged trace's launches replayed without the top named cause (analysis.trace_replay), on the same clock;
    without a named cause the replay removes nothing, and its metadata says so."""
    per = next(iter(waited.get("struck_by") or []), None)
    meta = {k: v for k, v in trace.metadata.items() if k != "causes_track"}
    why = None
    if waited["coupling"]["state"] == "not_coupled":
        why = "the ranks do not wait for each other: removing a cause moves only its own ranks' slices"
    elif not named or per is None or per.launches is None or per.ranks is None:
        why = "no named cause with a replay (nothing to remove)"
    if why:  # no events: the merged trace is the launches as they were
        said = {"without": None, "why": why + "; the merged trace holds the launches"}
        return ChromeTrace([], {"toolchain": meta["toolchain"], "replay": said})
    tracks, said = replayed_tracks(trace.tracks, replayed_cause(named[0], per))
    return ChromeTrace(tracks, {**meta, **said}, counter_events(tracks, meta["counters"]["links_bound_us"]))


def timeline(run: StageRun) -> Status:
    cfg = run.config
    parts = {label: read_input_status(run.inputs[label]) for label in run.params["needed"]}
    parts.update({f"nodes{g}": read_input_status(p) for g, p in zip(run.params["groups"], run.inputs["parts"])})
    fold_ = fold_coverage(
        (read_parquet(p) for p in run.inputs["coverage"]), world_ranks(cfg), cfg["stats"]["min_rank_coverage"]
    )
    write_table_parquet_atomic(run.outputs["coverage"], fold_.table, {"dispatchprof.toolchain": run.toolchain})
    covered, coverage_summary = fold_.covered, fold_.summary
    coverage_only = {
        "toolchain": run.toolchain,
        "coverage": coverage_summary,
        "coverage_rows": fold_.absent_rows,
    }  # stats when nothing is analysed
    if not all(p.ok for p in parts.values()):
        write_json_atomic(run.outputs["stats"], coverage_only)
        status = fold("timeline", run.experiment, run.toolchain, parts)
        status.details = {"coverage": coverage_summary}
        return status
    if not covered.enough:
        write_json_atomic(run.outputs["stats"], coverage_only)
        return run.status(
            "invalid",
            too_few(covered, coverage_summary, cfg["kernel"]["name"]),
            upstream={k: p.state for k, p in parts.items()},
            details={"coverage": coverage_summary},
        )
    details = {r["rank"]: r for part in run.inputs["ranks"] for r in read_json(part)["ranks"]}
    # The used launches as numpy columns, chosen one node group at a time (each group's table is freed before the
    # next is read). Arrow allocates from the system allocator here, so that what it frees goes back to numpy.
    pa.set_memory_pool(pa.system_memory_pool())
    used = used_launches(read_parquet(p, LAUNCH_COLUMNS) for p in run.inputs["launches"])
    baseline = read_json(run.inputs["baseline_stats"])
    stats, waited = timeline_stats(run, parts, fold_, used, details, baseline)
    bound = (baseline.get("bandwidth") or {}).get("bound_us")  # the links' bound, where the baseline has one
    trace = clock_corrected_trace(run, used, details, waited, stats["causes"], bound)
    stats["alignment"] += "; merged trace: " + trace.metadata["aligned_on"]
    write_json_atomic(run.outputs["stats"], stats)
    write_text_atomic(run.outputs["trace"], trace.json_text() + "\n")  # tens of thousands of events: no pretty-printing
    write_text_atomic(run.outputs["replay"], without_top_cause(trace, stats["causes"], waited).json_text() + "\n")
    strag = stats["straggler"]
    if len(covered.found) == 1:
        only = stats["per_rank"][str(covered.found[0])]
        reason = (
            f"{stats['kernel_name']} on a single rank ({covered.sentence()}): {only['launches']} "
            f"launches, median {only['median_us']:.1f} us; no peers to compare"
        )
    else:
        reason = (
            f"{stats['kernel_name']} on {covered.sentence()}, "
            f"{waited['coupling']['state'].replace('_', ' ')}; {strag['evidence']}: {strag['explanation']}"
        )
    reason += refused_sentence(coverage_summary["refused"])
    validations = [
        Validation(
            "every rank has timeline data",
            covered.complete,
            "warning",
            f"analysed {covered.sentence()}; "
            + "; ".join(f"rank {r}: {d}" for r, d in list(coverage_summary["why_missing"].items())[:4]),
        )
    ]
    return run.status(
        "ok",
        reason,
        upstream={k: p.state for k, p in parts.items()},
        artifacts=[str(p) for p in run.outputs.values()],
        details={"coverage": coverage_summary},
        validations=validations,
    )
