"""A picture of the launch: per rank, one typical launch and the costliest one, on corrected node clocks (arrival at the
barrier, its release, the kernel's start and end), so that a reader sees who waits for whom.

Typical: the launch whose group time (first arrival to last end; without clocks the longest rank's barrier wait plus
kernel time) is nearest the median launch's. Costliest: the launch where the top named cause costs most, read as its
ranks' lead over everyone else in that launch (a late arrival: their last arrival over the others' last; a rank or ranks
that end late: their last end over the others' last; the whole group inside the kernel: the kernel time above the
typical launch's); with no cause named, the launch with the largest excess (the last arrival's lead over the first,
plus the kernel time above the typical launch's). The lead is what removing the cause could at most give back in that
launch: the cost account's saving takes the cause's typical delay off, never more than the lead.

Where the node clocks cannot be established (several nodes and no barrier kernel: the clocks come from the target's
own ends; a node whose clock has no fit) the picture holds durations only: each rank's barrier wait and time in the
kernel, with no place on a common clock, and says why."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from dispatchprof.analysis.waits.table import LaunchGrid

CORRECTED, DURATIONS = "corrected", "durations only"
NOT_SPLIT = (
    "time in the kernel is own work plus waiting for peers' tokens, not split: DebugClock's phases come from their own "
    "run (another build and other launches), not from these launches"
)

COSTLIEST_BY_CAUSE = (
    "the launch where the top named cause's ranks lead the others most (what removing it could at most give back there)"
)
COSTLIEST_BY_EXCESS = (
    "no cause is named: the launch with the largest excess (the last arrival's "
    "lead over the first, plus kernel time above the typical launch's)"
)
COSTLIEST_BY_EXCESS_INSTEAD = (
    "the top named cause's ranks lead the others in none of these launches: the launch with the largest "
    "excess (the last arrival's lead over the first, plus kernel time above the typical launch's)"
)

DEFINITION = (
    "per rank of a typical launch (group time, first arrival to last end, nearest the median launch's) and of the "
    "costliest (costliest_by): arrival_us (the barrier kernel's start; else the target's), barrier_release_us (the "
    "barrier kernel's end), kernel_start_us and end_us, each after the launch's first arrival on corrected node "
    "clocks (null where the clocks are not established: why); barrier_wait_us and kernel_us, durations that need no "
    "clock; last_arrival_rank (the shortest barrier wait), last_end_rank; "
    "cost_us: what the cause could at most give back in that launch"
)


@dataclass
class Times:
    """``[launch, rank]`` µs of the launches every rank has: arrival, release and the kernel's
    start and end on corrected clocks (NaN without them), and the durations that need no clock."""

    rows: np.ndarray  # the grid's row indices
    arrival: np.ndarray
    release: np.ndarray
    start: np.ndarray
    end: np.ndarray
    barrier_wait: np.ndarray  # 0 without the barrier kernel
    kernel: np.ndarray  # the target's duration


def clocks_of(g: LaunchGrid, clocks: Mapping[str, Any]) -> tuple[str, str]:
    """Whether the ranks' times can be placed on one clock, and why (or why not)."""
    several = len(np.unique(g.nodes)) > 1
    if not several:
        return CORRECTED, "one node: one host clock, nothing to correct"
    if not g.has_barrier:
        return DURATIONS, (
            "no barrier kernel (baseline.synchronize_start off): the node clocks come from the "
            "target's own ends, so arrivals and ends cannot be placed across nodes; durations only"
        )
    unfitted = sorted(int(n) for n, c in clocks.items() if c.get("offset_us") is None)
    if unfitted:
        return (
            DURATIONS,
            f"node {unfitted[0]}'s clock has no fit against node 0's (no launch both have): durations only",
        )
    return CORRECTED, "node clocks corrected by the barrier kernel's ends (offset and drift against node 0)"


def times_of(g: LaunchGrid, correction: np.ndarray, established: bool) -> Times:
    """The launches every rank has (with clocks: every event; without: both durations), relative times left to
    ``launch_record``."""
    barrier_wait = g.barrier_wait if g.has_barrier else np.zeros_like(g.duration)
    arrival = (g.barrier_start if g.has_barrier else g.start) - correction
    release = g.barrier_end - correction if g.has_barrier else g.start - correction
    start, end = g.start - correction, g.end - correction
    needed = [barrier_wait, g.duration] + ([arrival, release, start, end] if established else [])
    rows = (
        np.flatnonzero(np.logical_and.reduce([g.complete(v) for v in needed])) if len(g.launches) else np.zeros(0, int)
    )
    if not established:
        arrival = release = start = end = np.full_like(g.duration, np.nan)
    return Times(rows, arrival[rows], release[rows], start[rows], end[rows], barrier_wait[rows], g.duration[rows])


def group_time(t: Times, established: bool) -> np.ndarray:
    """Per launch the group's time: first arrival to last end; without clocks the longest barrier wait plus kernel."""
    if established:
        return t.end.max(axis=1) - t.arrival.min(axis=1)
    return (t.barrier_wait + t.kernel).max(axis=1)


def kernel_time(t: Times, established: bool) -> np.ndarray:
    """Per launch the group's time in the kernel: last start to last end; without clocks the longest kernel."""
    return t.end.max(axis=1) - t.start.max(axis=1) if established else t.kernel.max(axis=1)


def lead(values: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Per launch how far the last of ``cols`` comes after the last of the others (0 where it does not)."""
    mask = np.zeros(values.shape[1], bool)
    mask[cols] = True
    if mask.all() or not mask.any():
        return np.zeros(len(values))
    return np.maximum(0.0, values[:, mask].max(axis=1) - values[:, ~mask].max(axis=1))


def cause_cost(t: Times, g: LaunchGrid, cause: Mapping[str, Any], established: bool) -> np.ndarray:
    """Per launch what the cause could at most give back: its ranks' lead over the others (see the module)."""
    cols = np.flatnonzero(np.isin(g.ranks, list(cause.get("ranks") or [])))
    kernel = kernel_time(t, established)
    above = np.maximum(0.0, kernel - np.median(kernel))
    if len(cols) in (0, len(g.ranks)):  # the whole group waits inside the kernel
        return above
    if cause.get("not_coupled"):  # nobody waits: the longest duration's lead
        return lead(t.kernel, cols)
    if cause["evidence"] == "late_arrival":
        # the barrier's durations need no clock: the shortest wait is the last arrival (account())
        # the barrier's durations need no clock: the shortest wait is the last arrival (account()); without the barrier
        # kernel and clocks, the late rank waits least at the kernel's entry: its kernel is the shortest
        arrivals = -t.barrier_wait if g.has_barrier else (t.arrival if established else -t.kernel)
        return lead(arrivals, cols)
    ends = t.end if established else t.kernel
    out = lead(ends, cols)
    if cause["evidence"] == "own_work":  # a spike of its own: its peers waited for its data and end with it
        ends_last = np.isin(np.argmax(ends, axis=1), cols)
        out = np.where(ends_last, np.maximum(out, above), out)
    return out


def group_excess(t: Times, established: bool) -> np.ndarray:
    """Per launch the group's excess: the last arrival's lead over the first (the barrier's durations without clocks)
    plus the kernel time above the typical launch's."""
    kernel = kernel_time(t, established)
    spread = np.ptp(t.arrival, axis=1) if established else np.ptp(t.barrier_wait, axis=1)
    return spread + np.maximum(0.0, kernel - np.median(kernel))


def nearest_median(values: np.ndarray) -> int:
    """The index of the value nearest the median (the first of ties)."""
    return int(np.argmin(np.abs(values - np.median(values))))


def launch_record(t: Times, g: LaunchGrid, i: int, established: bool, cost: float) -> dict[str, Any]:
    """One launch for the picture: per rank its events after the launch's first arrival (µs) and its durations; who
    arrived last (the shortest barrier wait, no clock needed) and who ended last (corrected clocks only)."""
    zero = float(t.arrival[i].min()) if established else 0.0
    barrier = g.has_barrier  # a scan of the whole grid: once, not per rank (2,048 ranks)

    def at(values: np.ndarray, keep: bool = True) -> list[float | None]:
        return [round(v - zero, 3) for v in values[i].tolist()] if established and keep else [None] * len(g.ranks)

    columns = {
        "rank": g.ranks.tolist(),
        "node": g.nodes.tolist(),
        "arrival_us": at(t.arrival),
        "barrier_release_us": at(t.release, barrier),
        "kernel_start_us": at(t.start),
        "end_us": at(t.end),
        "barrier_wait_us": [round(v, 3) for v in t.barrier_wait[i].tolist()] if barrier else [None] * len(g.ranks),
        "kernel_us": [round(v, 3) for v in t.kernel[i].tolist()],
    }
    ranks = [dict(zip(columns, row)) for row in zip(*columns.values())]
    if barrier:
        last_arrival: int | None = int(g.ranks[np.argmin(t.barrier_wait[i])])
    else:
        last_arrival = int(g.ranks[np.argmax(t.arrival[i])]) if established else None
    return {
        "launch": int(g.launches[t.rows[i]]),
        "group_us": round(float(group_time(t, established)[i]), 3),
        "cost_us": round(float(cost), 3),
        "last_arrival_rank": last_arrival,
        "last_end_rank": int(g.ranks[np.argmax(t.end[i])]) if established else None,
        "ranks": ranks,
    }


def launch_picture(
    g: LaunchGrid, correction: np.ndarray, clocks: Mapping[str, Any], causes: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The typical and the costliest launch per rank (see the module), with the top named cause (``causes`` ranked by
    cost, the named ones) whose ranks the picture highlights; ``typical``/``costliest`` None without a launch every
    rank has."""
    state, why = clocks_of(g, clocks)
    established = state == CORRECTED
    t = times_of(g, correction, established)
    top = causes[0] if causes else None
    out: dict[str, Any] = {
        "clocks": state,
        "why": why,
        "cause": {k: top.get(k) for k in ("evidence", "rank", "node", "ranks", "cost_us_per_launch")} if top else None,
        "time_in_kernel": NOT_SPLIT,
        "definition": DEFINITION,
        "typical": None,
        "costliest": None,
    }
    if not len(t.rows):
        return {**out, "costliest_by": None, "note": "no launch with data on every rank"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cost = cause_cost(t, g, top, established) if top else group_excess(t, established)
        by = COSTLIEST_BY_CAUSE if top else COSTLIEST_BY_EXCESS
        if top and not (cost > 0).any():  # the cause leads in none of these launches: the largest excess shows the most
            cost, by = group_excess(t, established), COSTLIEST_BY_EXCESS_INSTEAD
    cost = np.where(np.isfinite(cost), cost, -np.inf)
    typical, costliest = nearest_median(group_time(t, established)), int(np.argmax(cost))
    out["costliest_by"] = by
    out["typical"] = launch_record(t, g, typical, established, max(0.0, float(cost[typical])))
    out["costliest"] = launch_record(t, g, costliest, established, max(0.0, float(cost[costliest])))
    return out
