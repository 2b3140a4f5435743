"""System-timeline analysis: which rank each PROF_ holds (rule in rank_identity), the target kernel's launches, stragglers, gaps.

Cross-node timestamps are not comparable (each host's clock), so ranks are aligned by launch index of
the target kernel, never by absolute time across nodes. Gaps (start minus previous end) and intervals
are computed per rank on its own clock.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from dispatchprof.analysis.rank_identity import RankAssignment, RankSource
from dispatchprof.formats.msprof import ProfInfo, TargetKernels

if TYPE_CHECKING:
    import pyarrow as pa
    import pandas as pd  # merged_trace takes the merge job's frame; nothing here imports pandas at run time


def kernel_regex(pattern: str) -> re.Pattern[str]:
    """msopprof --kernel-name semantics: a symbol matches when it starts with the name; '*' is a wildcard."""
    return re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern))


def prof_sources(node: int, infos: Mapping[Path, ProfInfo]) -> list[RankSource]:
    """One source per device of each PROF_ (a process that drove several devices wrote them all into one)."""
    return [
        RankSource(path, node, device, info.pid, info.device_rank_ids.get(device) if device is not None else info.rank_id)
        for path, info in infos.items()
        for device in (info.devices or [None])
    ]


def coverage_rows(nodes: range, ranks_per_node: int, assignments: Sequence[RankAssignment], infos: Mapping[Path, ProfInfo]) -> list[dict[str, Any]]:
    """One row per expected rank of these nodes: its PROF_, device, pid, how it was mapped, and found / missing /
    incomplete with why. A rank has data when its PROF_ holds a db or an export; an msprof session that never ended
    (the process exited abnormally) is incomplete and not analysed."""
    by_rank = {a.rank: a for a in assignments if a.rank is not None}
    rows = []
    for node in nodes:
        for local in range(ranks_per_node):
            rank = node * ranks_per_node + local
            a = by_rank.get(rank)
            info = infos[a.source.path] if a else None
            if a is None:
                state, why = "missing", "no PROF_ directory for this rank"
            elif not info.has_kernel_tables and not info.devices:
                # shared/formats/msprof.md §6: an empty device side means disk space or permissions; check the plog
                state, why = "missing", "PROF_ has no device data (no device_<id>/, db or export): the device side was not collected"
            elif not info.has_kernel_tables:
                state, why = "missing", "PROF_ has device data but neither a db nor mindstudio_profiler_output/ (run msprof --export=on on it)"
            elif info.session_ended is False:
                state, why = "incomplete", "msprof session never ended (SESSION_TIME_INFO.endTimeNs is null): the process exited abnormally"
            else:
                state, why = "found", f"mapped by {a.how}"
            rows.append(
                {
                    "node": node,
                    "local_rank": local,
                    "global_rank": rank,
                    "device": a.source.device if a else None,
                    "pid": a.source.pid if a else None,
                    "prof_dir": str(a.source.path) if a else None,
                    "mapping": a.how if a else None,
                    "state": state,
                    "detail": why,
                }
            )
    return rows


def launch_columns(kernels: TargetKernels, skip: int) -> dict[str, np.ndarray]:
    """One rank's launch table: launch index in start order, whether it is used (the first ``skip`` are not),
    and for used launches the gap (start minus previous used end) and interval (start minus previous start),
    on this rank's own clock. NaN where there is no previous used launch."""
    n = len(kernels.start_ns)
    launch = np.arange(n, dtype=np.int64)
    used = launch >= skip
    gap = np.full(n, np.nan)
    interval = np.full(n, np.nan)
    idx = np.flatnonzero(used)
    if len(idx) > 1:
        prev, cur = idx[:-1], idx[1:]
        gap[cur] = kernels.start_ns[cur] - (kernels.start_ns[prev] + kernels.dur_ns[prev])
        interval[cur] = kernels.start_ns[cur] - kernels.start_ns[prev]
    barrier_start, barrier_dur = barrier_before(kernels)
    return {
        "launch": launch,
        "start_ns": kernels.start_ns,
        "dur_ns": kernels.dur_ns,
        "gap_ns": gap,
        "interval_ns": interval,
        "stream": kernels.stream,
        "task_id": kernels.task_id,
        "used": used,
        "barrier_start_ns": barrier_start,
        "barrier_dur_ns": barrier_dur,
    }


def barrier_before(kernels: TargetKernels) -> tuple[np.ndarray, np.ndarray]:
    """For each target launch, the barrier kernel launch that ran just before it (after the previous target launch
    ended): its start and duration, -1 where there is none."""
    n = len(kernels.start_ns)
    start, dur = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    barriers = kernels.barrier_start_ns
    if not len(barriers) or not n:
        return start, dur
    index = np.searchsorted(barriers, kernels.start_ns, side="right") - 1
    previous_end = np.concatenate([[np.iinfo(np.int64).min], kernels.start_ns[:-1] + kernels.dur_ns[:-1]])
    found = index >= 0
    found[found] &= barriers[index[found]] >= previous_end[found]
    start[found] = barriers[index[found]]
    dur[found] = kernels.barrier_dur_ns[index[found]]
    return start, dur


def launch_summary(columns: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Per-rank statistics of the used launches (linear-interpolation P95, as everywhere in this project)."""
    used = columns["used"]
    dur_us = columns["dur_ns"][used] / 1000
    gaps = columns["gap_ns"][used]
    gaps = gaps[~np.isnan(gaps)] / 1000
    return {
        "launches_total": int(len(used)),
        "skipped": int((~used).sum()),
        "launches": int(len(dur_us)),
        "median_us": float(np.median(dur_us)) if len(dur_us) else None,
        "p95_us": float(np.percentile(dur_us, 95)) if len(dur_us) else None,
        "gap_median_us": float(np.median(gaps)) if len(gaps) else None,
    }


def calls_between(kernels: TargetKernels) -> list[dict[str, Any]]:
    """Other kernels between consecutive target launches in the call-chain window: count per iteration and
    median duration per name. A kernel counts when it starts after one launch ends and before the next starts."""
    intervals = kernels.context_intervals
    if intervals < 1 or len(kernels.other_start_ns) == 0:
        return []
    starts = kernels.start_ns[: intervals + 1]
    ends = starts + kernels.dur_ns[: intervals + 1]
    o = kernels.other_start_ns
    before = np.searchsorted(starts, o, side="right") - 1  # the launch each kernel follows
    inside = (before >= 0) & (before < intervals)
    inside[inside] &= o[inside] >= ends[before[inside]]
    names, which = np.unique(kernels.other_name[inside].astype(str), return_inverse=True)
    durations = kernels.other_dur_ns[inside]
    result = [
        {"name": str(name), "per_iteration": int((which == i).sum()) / intervals, "median_us": float(np.median(durations[which == i])) / 1000}
        for i, name in enumerate(names)
    ]
    return sorted(result, key=lambda r: -r["median_us"])


def longest_duration(ranks: Sequence[int], durations_us: np.ndarray) -> dict[str, Any]:
    """Ranks aligned by launch index: ``durations_us[launch, j]`` is rank ``ranks[j]``'s duration of its used launch
    ``launch`` (NaN where it has none; such launches are left out). Per launch the longest rank; consistently
    (>= half of the launches) vs occasionally longest. In a coupled collective the longest rank is one that waits
    longest, not the one the group waits for (analysis.waits names that).

    Ties are shared as the baseline shares them (analysis.latency.rank_statistics): a launch where k ranks tie for
    longest credits 1/k to each. When several ranks share the top fraction, ``ranks`` names them all and ``rank`` is
    None (as analysis.waits does for a group): no rank is picked by its number."""
    values = np.asarray(durations_us, dtype=float).reshape(-1, len(ranks))
    complete = values[~np.isnan(values).any(axis=1)]
    if not len(complete):
        return {"rank": None, "ranks": [], "fraction": None, "launches_compared": 0, "per_rank_fraction": {}, "per_launch_max_us": []}
    top = complete == complete.max(axis=1, keepdims=True)  # every rank equal to the launch's max
    credit = (top / top.sum(axis=1, keepdims=True)).sum(axis=0) / len(complete)
    ids = np.asarray(ranks)
    order = np.lexsort((ids, -credit))  # most often longest first, then by rank (for a stable listing only)
    fractions = {int(ids[i]): float(credit[i]) for i in order if credit[i] > 0}
    best = max(fractions.values())
    # 1/k credits summed in different orders can differ in the last bits: compare with a tolerance
    tied = [r for r, f in fractions.items() if np.isclose(f, best, rtol=0, atol=1e-12)]
    often = "consistently longest" if best >= 0.5 else "occasionally longest: no rank is longest in half the launches"
    kind = often if len(tied) == 1 else f"{often}; tied: ranks {', '.join(map(str, sorted(tied)))} share the top fraction"
    return {
        "rank": tied[0] if len(tied) == 1 else None,
        "ranks": sorted(tied),
        "fraction": best,
        "kind": kind,
        "launches_compared": int(len(complete)),
        "per_rank_fraction": {str(r): f for r, f in fractions.items()},
        "per_launch_max_us": complete.max(axis=1).tolist(),
    }


UNIDENTIFIED = (
    "unidentified: its name is not in timeline.known_kernels (the repository's layout/notify/epilogue kernel names are not public); its share is not guessed"
)


def merged_call_chain(ranks: Iterable[Mapping[str, Any]], known: Mapping[str, str]) -> list[dict[str, Any]]:
    """The other kernels between target launches over all ranks: per name the median over ranks of the per-iteration
    count and of the median duration, with its known role or 'unidentified'."""
    chain: dict[str, dict[str, Any]] = {}
    for rank in ranks:
        for call in rank.get("calls_between") or []:
            entry = chain.setdefault(call["name"], {"per_iteration": [], "median_us": []})
            entry["per_iteration"].append(call["per_iteration"])
            entry["median_us"].append(call["median_us"])
    return [
        {
            "name": name,
            "per_iteration": float(np.median(c["per_iteration"])),
            "median_us": float(np.median(c["median_us"])),
            "role": known.get(name) or UNIDENTIFIED,
        }
        for name, c in chain.items()
    ]


def timeline_minus_kernel(ranks: Mapping[int, Mapping[str, Any]], baseline_per_rank: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Per rank: the timeline's median duration minus the baseline's kernel-scope median (where both exist)."""
    return {
        str(r): d["median_us"] - baseline_per_rank[str(r)]["median_us"] for r, d in ranks.items() if d["median_us"] is not None and str(r) in baseline_per_rank
    }


def merged_trace(
    used: pd.DataFrame, ranks: Mapping[int, Mapping[str, Any]], align_launch: int, max_launches: int, node_offset_us: Mapping[int, float] | None = None
) -> dict[str, Any]:
    """Chrome trace (Perfetto, chrome://tracing) of the used launches (columns rank, launch, start_ns, dur_ns,
    gap_ns). Without ``node_offset_us`` each rank is shifted so that its used launch ``align_launch`` ends at t=0:
    ranks on different hosts become comparable by launch, not by clock. With the estimated node clock offsets
    (analysis.waits), every rank's clock is corrected instead and one zero is shared (the earliest end of launch
    ``align_launch``): ranks that wait for a late peer then show the wait as a later start or a longer launch.
    Only the first ``max_launches`` used launches of each rank are drawn (0 = all); the statistics use all."""
    events: list[dict[str, Any]] = []
    ordered = used.sort_values(["rank", "launch"], kind="stable")
    shift = {int(r): int(round(1000 * (node_offset_us or {}).get(int(ranks.get(int(r), {}).get("node") or 0), 0.0))) for r in ordered["rank"].unique()}
    common_zero = None
    if node_offset_us is not None:
        ends = [
            int(t["start_ns"].iloc[min(align_launch, len(t) - 1)]) + int(t["dur_ns"].iloc[min(align_launch, len(t) - 1)]) - shift[int(r)]
            for r, t in ordered.groupby("rank", sort=True)
        ]
        common_zero = min(ends) if ends else 0
    for rank, table in ordered.groupby("rank", sort=True):
        rank = int(rank)
        info = ranks.get(rank, {})
        start, dur, launch, gap = (table[c].to_numpy() for c in ("start_ns", "dur_ns", "launch", "gap_ns"))
        anchor = min(align_launch, len(start) - 1)
        zero = common_zero + shift[rank] if common_zero is not None else int(start[anchor]) + int(dur[anchor])
        shown = len(start) if max_launches <= 0 else min(max_launches, len(start))
        events.append(
            {"name": "process_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": f"rank {rank} (node {info.get('node')}, device {info.get('device')})"}}
        )
        events.append({"name": "process_sort_index", "ph": "M", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
        name = info.get("symbol") or "target kernel"
        events.extend(
            {
                "name": name,
                "ph": "X",
                "pid": rank,
                "tid": 0,
                "ts": (int(s) - zero) / 1000,
                "dur": int(d) / 1000,
                "args": {"launch": int(i), "gap_us": None if np.isnan(g) else float(g) / 1000},
            }
            for s, d, i, g in zip(start[:shown], dur[:shown], launch[:shown], gap[:shown])
        )
    scope = "every used launch" if max_launches <= 0 else f"the first {max_launches} used launches of each rank (timeline.trace_launches)"
    return {
        "displayTimeUnit": "ns",
        "traceEvents": events,
        "metadata": {
            "aligned_on": (
                f"node clocks corrected by the estimated offsets (timeline.node_clock); the earliest end of used launch {align_launch} = 0 us"
                if node_offset_us is not None
                else f"end of used launch {align_launch} of every rank = 0 us"
            ),
            "launches_drawn": scope,
        },
    }


def since_first_start(launches: pa.Table) -> pa.Table:
    """Start times as ns after the earliest start of any rank (target or barrier kernel), still integers. Everything
    downstream takes differences of a few µs, in floats; a float64 holds an epoch-sized ns time (~1.8e18) only to
    256 ns, so the times must be made small while they are integers (the barrier columns, with nulls, become floats
    when pandas reads them). Every rank is shifted by the same constant: waits, offsets and the trace are unchanged
    but for that rounding. No launches: nothing to shift."""
    import pyarrow.compute as pc  # here, not at the top: the parse jobs import this module without it

    if not launches.num_rows:
        return launches
    firsts = [pc.min(launches[c]).as_py() for c in ("start_ns", "barrier_start_ns")]
    origin = min(v for v in firsts if v is not None)
    for c in ("start_ns", "barrier_start_ns"):
        launches = launches.set_column(launches.schema.get_field_index(c), c, pc.subtract_checked(launches[c], origin))
    return launches
