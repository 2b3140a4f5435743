"""DebugClock analysis: per role, which phase works and which waits (docs/formats.md §3).

Both formats become one tidy segment table: rank, node, launch, block, role, slot (legacy slot index, or the
slot the AKL phase corresponds to), phase, start_us (offset from the core's first tick, so a chart keeps start
offsets), us. Statistics:
- per rank, role and slot/phase: median and spread over cores and launches (runs);
- pooled per role over ranks;
- busiest: the (rank, role, slot) whose per-rank median most exceeds the median of the same role and slot on the
  other ranks. A rank that waits less than its peers is never "busiest": this names a slow sender, not the
  ranks waiting for it. Slots that hold cross-rank waits are flagged, because they are mixed (work + wait);
- busiest_node: the node whose ranks' median of a work slot most exceeds the same role and slot on the other nodes'
  ranks, beyond their spread: a slowdown shared by every rank of a node (its links out, its senders), which a
  per-rank comparison misreads (half the ranks are its peers: one of them is named as if alone, or none);
- local_window_copy: each rank's LocalWindowCopy slot (wait plus copy) against the other ranks, with their spread,
  for a rank the timeline names slow by itself (a wait slot is never busiest);
- wait_work and its rank x role heat maps.
Cycles convert to µs by kernel.clock_hz. Cycles are not comparable across devices (no global clock), and slot
numbers are not comparable across roles (the branches differ); the report says both beside the numbers.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dispatchprof.formats.debugclock import Capture

LEGACY_CLIP_HIGH = 500_000  # the old analyzer zeroed values above this (and below 0); we report them
# AKL marker paths whose segment (ending there) takes another phase name than the marker's leaf: the Init -> Process
# step, the core's own PipeBarrier before LocalWindowCopy, LocalWindowCopy itself, and the URMA send loop's
# iterations (one marker per loop; they are all part of the send, legacy slot 4).
AKL_ALIASES = {
    "dispatch/Process/entry": "init",
    "dispatch/Process/LocalWindowCopy/begin": "pipe_barrier",
    "dispatch/Process/LocalWindowCopy/end": "local_window_copy",
    "dispatch/Process/URMASendToken/iteration": "send_complete",
}
SPLIT_WAIT = "LW:wait"  # a newer kernel's receiver markers split LocalWindowCopy into waiting and copying
CAUTIONS = [
    "Slot numbers are not comparable across roles: each role runs a different branch between the same tick indices.",
    "Cycles are not comparable across devices: there is no global clock, so "
    "a slot compares with the same slot on another rank only as a duration.",
    "DebugClock ticks start after the kernel's entry barrier: a "
    "rank that arrives late is invisible here (see the timeline).",
    "Wait slots are mixed: they hold the cross-rank wait and the work "
    "around it; only AKL's LW:wait/LW:copy markers split LocalWindowCopy.",
]


def aiv_roles(roles: Sequence[Mapping[str, Any]]) -> list[str]:
    """kernel.roles (name, count in AIV order) -> the role of each AIV index."""
    return [r["name"] for r in roles for _ in range(int(r["count"]))]


def legacy_segments(
    frames: Sequence[tuple[int, int, pd.DataFrame]],
    roles: Sequence[str],
    phases: Mapping[str, Sequence[str]],
    clock_hz: float,
) -> pd.DataFrame:
    """(node, run, parse_legacy_csv frame) per file -> the segment table. A core beyond kernel.roles is 'unassigned'."""
    parts = []
    for node, run, frame in frames:
        f = frame.copy()
        f["node"], f["launch"] = node, run
        parts.append(f)
    if not parts:
        return _empty()
    f = pd.concat(parts, ignore_index=True).sort_values(["rank", "launch", "aiv_id", "slot"])
    f["role"] = [roles[a] if a < len(roles) else "unassigned" for a in f["aiv_id"]]
    f["us"] = f["cycles"].astype("Float64") / clock_hz * 1e6
    # A missing slot (-1) has no duration, so every later start on that core is unknown (NA), never shifted forward.
    f["start_us"] = f.groupby(["rank", "launch", "aiv_id"])["us"].transform(
        lambda s: s.cumsum(skipna=False).shift(1, fill_value=0.0)
    )
    names = [list(phases.get(r, [])) for r in f["role"]]
    f["phase"] = [n[s] if s < len(n) else f"slot{s}" for n, s in zip(names, f["slot"])]
    f = f.rename(columns={"aiv_id": "block"})
    f["slot"] = f["slot"].astype("Int64")
    return f[["rank", "node", "launch", "block", "role", "slot", "phase", "start_us", "us", "cycles"]].reset_index(
        drop=True
    )


def akl_segments(
    captures: Sequence[tuple[int, Capture]],
    phases: Mapping[str, Sequence[str]],
    clock_hz: float,
    skip_launches: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(node, capture) pairs -> (segment table, per-core roles as the event paths name them). A segment runs from a
    marker to the next marker on the same core and is named by the marker it ends at (AKL_ALIASES apply)."""
    rows, core_roles = [], []
    for node, cap in captures:
        if cap.launch < skip_launches:
            continue
        for (block, _sub), core in cap.events.groupby(["block", "sub_block"], sort=True):
            core = core.sort_values("seq")
            paths, ticks = core["path"].tolist(), core["tick"].to_numpy()
            named = {p.split("/")[2] for p in paths if p.count("/") >= 3 and p.split("/")[2] != "LocalWindowCopy"}
            role = named.pop() if len(named) == 1 else ("mixed:" + "+".join(sorted(named)) if named else "unassigned")
            core_roles.append((cap.rank, cap.launch, int(block), role))
            origin = ticks[0] if len(ticks) else 0
            for i in range(1, len(paths)):
                phase = AKL_ALIASES.get(paths[i], paths[i].rsplit("/", 1)[-1])
                names = list(phases.get(role, []))
                slot = names.index(phase) if phase in names else pd.NA
                start = (ticks[i - 1] - origin) / clock_hz * 1e6
                us = (ticks[i] - ticks[i - 1]) / clock_hz * 1e6
                rows.append(
                    (
                        cap.rank,
                        node,
                        cap.launch,
                        int(block),
                        role,
                        slot,
                        phase,
                        start,
                        us,
                        int(ticks[i] - ticks[i - 1]),
                        cap.run,
                        cap.pid,
                        int(_sub),
                    )
                )
    columns = ["rank", "node", "launch", "block", "role", "slot", "phase", "start_us", "us", "cycles"]
    seg = pd.DataFrame(rows, columns=[*columns, "run", "pid", "sub_block"]) if rows else _empty()
    if (
        rows
    ):  # a phase that repeats on one core (the send loop's iterations) is one phase: durations add, first start kept
        # One core of one capture: launch counters restart in every process (run) and subblocks share a blockIdx.
        keys = ["rank", "node", "run", "pid", "launch", "block", "sub_block", "role", "phase"]
        seg = seg.groupby(keys, sort=False, as_index=False).agg(
            slot=("slot", "first"), start_us=("start_us", "min"), us=("us", "sum"), cycles=("cycles", "sum")
        )
        seg = seg[["rank", "node", "launch", "block", "role", "slot", "phase", "start_us", "us", "cycles"]]
        seg["slot"] = seg["slot"].astype("Int64")
    return seg, pd.DataFrame(core_roles, columns=["rank", "launch", "block", "role"])


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rank": pd.Series(dtype="int64"),
            "node": pd.Series(dtype="int64"),
            "launch": pd.Series(dtype="int64"),
            "block": pd.Series(dtype="int64"),
            "role": pd.Series(dtype="str"),
            "slot": pd.Series(dtype="Int64"),
            "phase": pd.Series(dtype="str"),
            "start_us": pd.Series(dtype="float64"),
            "us": pd.Series(dtype="float64"),
            "cycles": pd.Series(dtype="Int64"),
        }
    )


def role_mismatches(core_roles: pd.DataFrame, roles: Sequence[str]) -> list[dict[str, Any]]:
    """Cores whose event paths name another role than kernel.roles assigns to their AIV index (first launch seen)."""
    out = []
    first = core_roles.sort_values("launch").drop_duplicates(["rank", "block"])
    for row in first.itertuples():
        expected = roles[row.block] if row.block < len(roles) else "unassigned"
        if row.role not in ("unassigned", expected):
            out.append(
                {"rank": int(row.rank), "block": int(row.block), "kernel_roles": expected, "event_paths": row.role}
            )
    return out


def _stats(values: pd.Series) -> dict[str, Any]:
    v = values.dropna().to_numpy(dtype=float)
    if not len(v):
        return {
            "n": 0,
            "missing": int(values.isna().sum()),
            "median_us": None,
            "p25_us": None,
            "p75_us": None,
            "min_us": None,
            "max_us": None,
        }
    q = np.percentile(v, [25, 50, 75])
    return {
        "n": int(len(v)),
        "missing": int(values.isna().sum()),
        "median_us": float(q[1]),
        "p25_us": float(q[0]),
        "p75_us": float(q[2]),
        "min_us": float(v.min()),
        "max_us": float(v.max()),
    }


def key_of(source: str) -> str:
    return "slot" if source == "legacy_csv" else "phase"


def per_rank_table(seg: pd.DataFrame, source: str) -> pd.DataFrame:
    """Per rank, role and slot (legacy) or phase (AKL): median and spread over cores and launches."""
    key = key_of(source)
    rows = []
    for (rank, role, k), g in seg.groupby(["rank", "role", key], sort=True):
        rows.append(
            {
                "rank": int(rank),
                "node": int(g["node"].iloc[0]),
                "role": role,
                key: int(k) if key == "slot" else k,
                "phase": g["phase"].iloc[0],
                "slot_of_phase": None if pd.isna(g["slot"].iloc[0]) else int(g["slot"].iloc[0]),
                "start_median_us": float(g["start_us"].dropna().median()) if g["start_us"].notna().any() else None,
                **_stats(g["us"]),
            }
        )
    return pd.DataFrame(rows)


def pooled(seg: pd.DataFrame, source: str, wait: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """Per role over ranks: debugclock.roles.<role>.slots.<k> (legacy) or .phases.<name> (AKL)."""
    key = key_of(source)
    out: dict[str, Any] = {}
    for role, g in seg.groupby("role", sort=True):
        entries = {}
        for k, h in g.groupby(key, sort=True):
            entries[str(int(k) if key == "slot" else k)] = {
                "phase": h["phase"].iloc[0],
                "wait": is_wait(role, h["slot"].iloc[0], h["phase"].iloc[0], wait),
                "start_median_us": float(h["start_us"].dropna().median()) if h["start_us"].notna().any() else None,
                **_stats(h["us"]),
            }
        out[role] = {
            "slots" if key == "slot" else "phases": entries,
            "cores": int(g[["rank", "block"]].drop_duplicates().shape[0]),
        }
    return out


def is_wait(role: str, slot: Any, phase: str, wait: Mapping[str, Sequence[Any]]) -> bool:
    if phase == SPLIT_WAIT:
        return True
    return slot is not None and not pd.isna(slot) and int(slot) in [int(s) for s in wait.get(role, [])]


def busiest(
    per_rank: pd.DataFrame, source: str, min_excess: float, wait: Mapping[str, Sequence[Any]] | None = None
) -> dict[str, Any] | None:
    """The (rank, role, slot/phase) whose median most exceeds the median of the same role and key on the other
    ranks, by at least ``min_excess`` of that peer median. None when nothing does (or fewer than two ranks).
    Wait slots are left out: a rank that waits longer there waits for someone else (a slow sender stretches every
    receiver's LocalWindowCopy), so their excess would name the waiters, not the slow rank."""
    key = key_of(source)
    best = None
    if per_rank.empty:
        return None
    for (role, k), g in per_rank.dropna(subset=["median_us"]).groupby(["role", key], sort=True):
        if g["rank"].nunique() < 2 or is_wait(role, g["slot_of_phase"].iloc[0], g["phase"].iloc[0], wait or {}):
            continue
        for row in g.itertuples():
            peers = float(g.loc[g["rank"] != row.rank, "median_us"].median())
            excess = row.median_us - peers
            if excess <= 0 or excess < min_excess * max(peers, 1e-12):
                continue
            if best is None or excess > best["excess_us"]:
                best = {
                    "rank": int(row.rank),
                    "role": role,
                    "slot": int(k)
                    if key == "slot"
                    else (None if pd.isna(row.slot_of_phase) else int(row.slot_of_phase)),
                    "phase": row.phase,
                    "median_us": float(row.median_us),
                    "peers_median_us": peers,
                    "excess_us": float(excess),
                }
    return best


def slowest_core_table(seg: pd.DataFrame, source: str) -> pd.DataFrame:
    """Per rank, role and slot/phase: the median over launches of the slowest core's duration. A rank's role is done
    when its last core is: with many URMA cores each sends to a few destinations, and the median core of a rank that
    sends slowly across nodes is one of its fast, same-node senders (56 AIV: 826 against 828 us with a slow link out
    of the node, while the slowest cores differ by 1,017 us). Launch counters restart per process, so several
    DEBUG runs pool the same launch index (a slight upward bias, alike on every rank)."""
    key = key_of(source)
    if seg.empty:
        return pd.DataFrame(columns=["rank", "node", "role", key, "phase", "slot_of_phase", "median_us"])
    keys = ["rank", "node", "role", key]
    phase = {} if key == "phase" else {"phase": ("phase", "first")}  # AKL: the phase is the key itself
    slowest = (
        seg.dropna(subset=["us"])
        .groupby([*keys, "launch"], sort=True)
        .agg(us=("us", "max"), slot=("slot", "first"), **phase)
    )
    out = (
        slowest.groupby(level=keys, sort=True)
        .agg(median_us=("us", "median"), slot_of_phase=("slot", "first"), **phase)
        .reset_index()
    )
    out["slot_of_phase"] = [None if pd.isna(v) else int(v) for v in out["slot_of_phase"]]
    return out


def busiest_node(
    per_rank: pd.DataFrame,
    source: str,
    min_excess: float,
    alpha: float,
    wait: Mapping[str, Sequence[Any]] | None = None,
) -> dict[str, Any] | None:
    """The (node, role, slot/phase) whose ranks' median most exceeds the same role and key on the other nodes' ranks
    (``per_rank``: slowest_core_table, each rank's slowest core per launch, its median over launches).

    A link that is slow out of one node (sim.slow_link; on hardware a degraded port or route) stretches the send phase
    of every rank there: half the ranks in a two-node job, so each of them against its peers' median (busiest) is
    against many of its own kind, and names one of them as if it alone were slow, or none. Here each node is one
    unit: the median over its ranks against the median of the other nodes' ranks, tested against their spread
    (1.4826 x MAD of the other nodes' rank medians) at the one-sided normal quantile of ``alpha`` over every (node,
    role, key) tested (Bonferroni), and by at least ``min_excess`` of the peers' median (debugclock.busiest_min_excess),
    as for a rank.
    The spread of single ranks, not of a node's median, so a node is held to the noise of one rank: conservative.
    Wait slots are left out (the waiters wait longer). Needs two nodes and three ranks on the others. The excess is
    per launch: where that phase is on the group's critical path (the slowest sends), it is the time the
    group would save if the node's ranks ran that phase as the others do."""
    key = key_of(source)
    if per_rank.empty or per_rank["node"].nunique() < 2:
        return None
    tests: list[dict[str, Any]] = []
    for (role, k), g in per_rank.dropna(subset=["median_us"]).groupby(["role", key], sort=True):
        if is_wait(role, g["slot_of_phase"].iloc[0], g["phase"].iloc[0], wait or {}):
            continue
        for node, mine in g.groupby("node", sort=True):
            others = g.loc[g["node"] != node, "median_us"].to_numpy(dtype=float)
            if len(others) < 3:
                continue
            peers = float(np.median(others))
            spread = 1.4826 * float(np.median(np.abs(others - peers)))
            node_us = float(mine["median_us"].median())
            tests.append(
                {
                    "node": int(node),
                    "ranks": sorted(int(r) for r in mine["rank"]),
                    "role": role,
                    "slot": int(k)
                    if key == "slot"
                    else (None if pd.isna(mine["slot_of_phase"].iloc[0]) else int(mine["slot_of_phase"].iloc[0])),
                    "phase": mine["phase"].iloc[0],
                    "median_us": node_us,
                    "peers_median_us": peers,
                    "peers_spread_us": spread,
                    "excess_us": node_us - peers,
                    "fastest_rank_us": float(mine["median_us"].min()),  # the node's least slowed rank
                }
            )
    if not tests:
        return None
    z = NormalDist().inv_cdf(1.0 - alpha / len(tests))
    best = None
    for t in tests:
        beyond = t["excess_us"] > z * t["peers_spread_us"] and t["excess_us"] >= min_excess * max(
            t["peers_median_us"], 1e-12
        )
        # every rank of the node above the others' median: a node-wide slowdown, not one slow rank among them
        if (
            beyond
            and t["fastest_rank_us"] > t["peers_median_us"]
            and (best is None or t["excess_us"] > best["excess_us"])
        ):
            best = t
    if best is None:
        return None
    return {**best, "z": z, "tests": len(tests), "alpha": alpha}


def wait_work(per_rank: pd.DataFrame, wait: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Per rank and role: the sum of the median durations of wait slots (mixed: wait + work) and of the others."""
    out = []
    for (rank, role), g in per_rank.groupby(["rank", "role"], sort=True):
        flags = [is_wait(role, s, p, wait) for s, p in zip(g["slot_of_phase"], g["phase"])]
        med = g["median_us"].fillna(0.0).to_numpy()  # NA slots add nothing to a sum; their count is reported apart
        waited = float(sum(m for m, f in zip(med, flags) if f))
        worked = float(sum(m for m, f in zip(med, flags) if not f))
        out.append(
            {
                "rank": int(rank),
                "role": role,
                "wait_slots_us": waited,
                "work_slots_us": worked,
                "missing": int(g["missing"].sum()),
            }
        )
    return out


LWC_PHASES = (
    "local_window_copy",
    SPLIT_WAIT,
    "LW:copy",
)  # LocalWindowCopy: the legacy slot / AKL segment, or its split
LWC_Z = 2.326  # one rank, named beforehand by the timeline, tested against its peers' spread: one-sided 1%


def local_window_copy(seg: pd.DataFrame) -> dict[str, Any]:
    """Per rank, the LocalWindowCopy slot of every core (wait plus copy: LW:wait + LW:copy where AKL splits it), the
    median over its cores and launches, against the median of the other ranks. The slot is a wait slot, so it never
    names a busiest rank by itself (a waiter's is long); for a rank the timeline finds slow by itself (own_work), it
    holds its own copying beside the wait every rank has, and that rank's excess here is read as its own."""
    lw = seg[seg["phase"].isin(LWC_PHASES)]
    per_core = lw.groupby(["rank", "launch", "block"])["us"].sum(min_count=1).dropna()
    per_rank = per_core.groupby(level="rank").median()
    out: dict[str, Any] = {}
    values = per_rank.to_numpy(dtype=float)
    for i, (rank, us) in enumerate(per_rank.items()):
        others = np.delete(values, i)
        peers = float(np.median(others)) if len(others) else None
        spread = 1.4826 * float(np.median(np.abs(others - peers))) if len(others) >= 3 else None
        out[str(int(rank))] = {
            "median_us": float(us),
            "peers_median_us": peers,
            "excess_us": None if peers is None else float(us - peers),
            "peers_spread_us": spread,
            "stands_out": None if spread is None or peers is None else bool(us - peers > LWC_Z * spread),
        }
    return {
        "per_rank": out,
        "phases": sorted(set(lw["phase"])),
        "definition": (
            "per rank the median over cores and launches of the LocalWindowCopy slot (wait plus copy), against the "
            "other ranks' median; peers_spread_us = 1.4826 x their MAD (3 or more other ranks); stands_out = "
            f"excess above {LWC_Z:.2f} x that spread (one named rank tested: the one-sided 1% normal quantile)"
        ),
    }


def wait_work_grids(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """rank x role heat maps of wait_work's sums (wait slots, work slots), ranks binned for large clusters."""
    from dispatchprof.analysis.waits import binned_grid

    frame = pd.DataFrame(list(rows))
    out: dict[str, Any] = {}
    for key, column in (("wait_us", "wait_slots_us"), ("work_us", "work_slots_us")):
        if frame.empty:
            out[key] = binned_grid(np.empty((0, 0)), np.array([]), np.array([]))
            continue
        wide = frame.pivot_table(index="rank", columns="role", values=column, aggfunc="first")
        out[key] = {
            **binned_grid(wide.to_numpy(), wide.index.to_numpy(), wide.columns.to_numpy(), max_columns=64),
            "unit": "us",
        }
    return out


def clipped_counts(seg: pd.DataFrame) -> dict[str, int]:
    """What the legacy analyzer would have zeroed: missing (-1 in the file) and values above 500000 cycles."""
    cycles = seg["cycles"]
    return {"missing": int(cycles.isna().sum()), "above_500000_cycles": int((cycles.dropna() > LEGACY_CLIP_HIGH).sum())}


def phase_chart(per_rank: pd.DataFrame, source: str) -> dict[str, list[dict[str, Any]]]:
    """Per role, the phases in start order with median start offset and median duration (pooled over ranks)."""
    key = key_of(source)
    out = {}
    for role, g in per_rank.dropna(subset=["median_us", "start_median_us"]).groupby("role", sort=True):
        named = g.assign(key=g[key].astype(str))
        bars = (
            named.groupby("key", sort=True)
            .agg(name=("phase", "first"), start=("start_median_us", "median"), us=("median_us", "median"))
            .reset_index()
        )
        bars = bars.sort_values("start")
        out[role] = [
            {"key": r["key"], "phase": r["name"], "start_us": float(r["start"]), "us": float(r["us"])}
            for _, r in bars.iterrows()
        ]
    return out


def overhead(on: Mapping[str, np.ndarray], off: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """DebugClock ON vs OFF on the same inputs: median and P95 of the per-iteration max, per scope (kernel, api).
    The top-level on/off median and ratio are the kernel scope's (API scope beside it: export cost shows there)."""
    scopes = {}
    for scope in ("kernel", "api"):
        a, b = on.get(scope), off.get(scope)
        if a is None or b is None or not len(a) or not len(b):
            scopes[scope] = None
            continue
        scopes[scope] = {
            "on_median_us": float(np.median(a)),
            "off_median_us": float(np.median(b)),
            "on_p95_us": float(np.percentile(a, 95)),
            "off_p95_us": float(np.percentile(b, 95)),
            "ratio": float(np.median(a) / np.median(b)) if np.median(b) > 0 else None,
            "n_on": int(len(a)),
            "n_off": int(len(b)),
        }
    k = scopes.get("kernel") or {}
    return {
        "on_median_us": k.get("on_median_us"),
        "off_median_us": k.get("off_median_us"),
        "ratio": k.get("ratio"),
        "scopes": scopes,
        "note": (
            "kernel scope ends before the DebugClock flush, so export cost shows "
            "only in the API scope; the ON build's latencies never enter the baseline"
        ),
    }


LATE_ARRIVAL = (
    "DebugClock ticks start after the kernel's entry barrier: a "
    "rank's late arrival is invisible here (the timeline shows it)."
)


def summarize(
    loaded: Any, config: Mapping[str, Any], skip_launches: int = 0
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame] | None:
    """A loaded tree (formats.debugclock.load_tree) -> (stats, segment table, per-rank table); None when empty.
    AKL traces are preferred when both formats are present (named segments keep the send loop and LW split)."""
    dc, kernel = config["debugclock"], config["kernel"]
    roles = aiv_roles(kernel["roles"])
    phases, wait = dc["phase_names"], dc["wait_slots"]
    hz = float(kernel["clock_hz"])
    mismatches: list[dict[str, Any]] = []
    if loaded.captures:
        source = "akl_trace"
        seg, cores = akl_segments(loaded.captures, phases, hz, skip_launches)
        mismatches = role_mismatches(cores, roles)
        if seg.empty:
            return None
    elif loaded.legacy:
        source = "legacy_csv"
        seg = legacy_segments(loaded.legacy, roles, phases, hz)
    else:
        return None
    table = per_rank_table(seg, source)
    best = busiest(table, source, dc["busiest_min_excess"], wait)
    node_best = busiest_node(
        slowest_core_table(seg, source), source, dc["busiest_min_excess"], dc["busiest_node_alpha"], wait
    )
    by_role = pooled(seg, source, wait)
    ww = wait_work(table, wait)
    stats = {
        "schema": "dispatchprof.debugclock/1",
        "source": source,
        "found": {
            "legacy_csv": len(loaded.legacy),
            "akl_trace": len(loaded.captures),
            "event_map": str(loaded.event_map) if loaded.event_map else None,
        },
        # markers the recorder dropped (capacity reached): a segment then spans the lost markers
        "dropped_markers": sum(c.dropped for _, c in loaded.captures),
        "clock_hz": hz,
        "clock_key": "kernel.clock_hz (the same key sets AKL_LATENCY_CLOCK_HZ)",
        "ranks": int(seg["rank"].nunique()),
        "cores": int(seg[["rank", "block"]].drop_duplicates().shape[0]),
        "launches": int(seg[["rank", "launch"]].drop_duplicates().shape[0]),
        "skipped_launches": skip_launches if source == "akl_trace" else 0,
        "roles": by_role,
        "wait_slots": {r: list(v) for r, v in wait.items()},
        "busiest": best,
        "busiest_node": node_best,
        "wait_work": ww,
        "wait_work_heatmaps": wait_work_grids(ww),
        "local_window_copy": local_window_copy(seg),
        "role_mismatches": mismatches,
        "clipped": clipped_counts(seg),
        "phase_chart": phase_chart(table, source),
        "cautions": CAUTIONS
        + [
            "Values the legacy analyzer clipped (< 0 or > 500000 cycles) "
            "are reported here, not zeroed; -1 (missing) stays missing."
        ],
        "late_arrival": LATE_ARRIVAL,
        "statistics": (
            "per rank, role and slot: median and spread (P25-P75, "
            "min-max) over cores and launches; pooled per role over ranks"
        ),
    }
    key = "slots" if source == "legacy_csv" else "phases"
    stats["summary"] = {
        "source": source,
        "roles": {
            r: {key: {k: {"median_us": v["median_us"], "wait": v["wait"]} for k, v in entry[key].items()}}
            for r, entry in by_role.items()
        },
        "wait_slots": stats["wait_slots"],
        "busiest": {k: best[k] for k in ("rank", "role", "slot", "phase", "median_us", "peers_median_us", "excess_us")}
        if best
        else None,
        "busiest_node": {
            k: node_best[k]
            for k in (
                "node",
                "ranks",
                "role",
                "slot",
                "phase",
                "median_us",
                "peers_median_us",
                "peers_spread_us",
                "excess_us",
            )
        }
        if node_best
        else None,
        "local_window_copy": stats["local_window_copy"],
        "role_mismatches": len(mismatches),
    }
    return stats, seg, table


def load_overhead(run_dir: Any, runs: int) -> dict[str, Any]:
    """Per-iteration max over ranks (measured iterations) of every ON and OFF run of the stage, pooled over runs."""
    from pathlib import Path

    from dispatchprof.analysis.baseline import load_api
    from dispatchprof.analysis.latency import per_iteration_max, select_measured
    from dispatchprof.formats.latency_csv import parse_latency_csv

    def maxima(variant: str) -> dict[str, np.ndarray]:
        out: dict[str, list[float]] = {"kernel": [], "api": []}
        for i in range(runs):
            d = Path(run_dir) / f"{variant}{i}"
            csv = d / "latency" / "dispatch_latency.csv"
            if csv.is_file():
                out["kernel"] += per_iteration_max(select_measured(parse_latency_csv(csv).frame))["max_us"].tolist()
            api = load_api(d) if d.is_dir() else None
            if api is not None:
                out["api"] += per_iteration_max(select_measured(api))["max_us"].tolist()
        return {k: np.array(v) for k, v in out.items()}

    return overhead(maxima("on"), maxima("off"))
