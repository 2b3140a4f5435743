"""The launch table: used launches aligned by launch index (``[launch, rank]`` µs on each node's own clock), its
host gaps and entry waits, and the binned heat map of a ``[rank, launch]`` matrix."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np


@dataclass
class LaunchGrid:
    """Used launches aligned by launch index: ``[launch, rank]`` µs on each rank's node clock, NaN where missing."""

    launches: np.ndarray
    ranks: np.ndarray
    nodes: np.ndarray
    start: np.ndarray
    end: np.ndarray
    duration: (
        np.ndarray
    )  # as read: start + duration loses precision at epoch-sized µs, so the difference is not taken back
    barrier_start: np.ndarray
    barrier_end: np.ndarray
    barrier_wait: np.ndarray  # the barrier kernel's duration: its wait
    # the end of each rank's launch before, used or not (a left-out warm-up launch's too): the first used launch then
    # has a host gap like the others. None where the table had no such column (every used launch's previous end then
    # comes from the row before, and the first row's gap is unknown).
    previous_end: np.ndarray | None = None

    @property
    def has_barrier(self) -> bool:
        return bool(np.isfinite(self.barrier_end).any())

    def complete(self, values: np.ndarray) -> np.ndarray:
        """Launches where every rank has a value."""
        return np.isfinite(values).all(axis=1)


def grid(rank: np.ndarray, launch: np.ndarray, columns: Mapping[str, np.ndarray], ranks_per_node: int) -> LaunchGrid:
    """From long columns (one row per rank and used launch; ns; NaN for a missing barrier) to the aligned grid."""
    ranks = np.unique(rank)
    launches = np.unique(launch)
    row = np.searchsorted(launches, launch)
    col = np.searchsorted(ranks, rank)

    def wide(values: np.ndarray) -> np.ndarray:
        out = np.full((len(launches), len(ranks)), np.nan)
        out[row, col] = np.asarray(values, dtype=float) / 1000.0
        return out

    start, dur = wide(columns["start_ns"]), wide(columns["dur_ns"])
    bstart, bdur = wide(columns["barrier_start_ns"]), wide(columns["barrier_dur_ns"])
    previous = wide(columns["previous_end_ns"]) if "previous_end_ns" in columns else None
    nodes = ranks // ranks_per_node
    return LaunchGrid(launches, ranks, nodes, start, start + dur, dur, bstart, bstart + bdur, bdur, previous)


def host_gaps(g: LaunchGrid) -> np.ndarray:
    """``[launch, rank]``: from the rank's previous target end to its arrival (the barrier kernel's start, else the
    target's start), on the rank's own clock. This is the host's share of lateness: a rank that ended the previous
    launch late (it waited inside the kernel) returns late without being late itself. NaN where the previous launch
    is not in the table (or, with ``previous_end``, where the rank's launch before was not read)."""
    arrival = np.where(np.isfinite(g.barrier_start), g.barrier_start, g.start) if g.has_barrier else g.start
    if g.previous_end is not None:
        return arrival - g.previous_end
    gaps = np.full_like(arrival, np.nan)
    consecutive = np.flatnonzero(np.diff(g.launches) == 1) + 1
    gaps[consecutive] = arrival[consecutive] - g.end[consecutive - 1]
    return gaps


def last_arrival_node(g: LaunchGrid) -> np.ndarray:
    """Per launch the node of the rank with the shortest barrier task (the last arrival; -1 where unknown)."""
    out = np.full(len(g.launches), -1)
    if not g.has_barrier:
        return out
    wait = np.where(np.isfinite(g.barrier_wait), g.barrier_wait, np.inf)
    known = np.isfinite(g.barrier_wait).any(axis=1)
    out[known] = g.nodes[np.argmin(wait[known], axis=1)]
    return out


def kernel_entry_waits(g: LaunchGrid, correction: np.ndarray) -> np.ndarray:
    """``[launch, rank]``: the wait at the kernel's entry barrier, the launch's last clock-corrected start minus the
    rank's own (NaN where the rank has no launch)."""
    start = g.start - correction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a launch no rank has: NaN
        return np.nanmax(start, axis=1, keepdims=True) - start


def entry_waits(g: LaunchGrid, correction: np.ndarray) -> dict[str, Any]:
    """Per rank: the median wait in the barrier kernel (its duration) and at the kernel's entry (over launches every
    rank has)."""
    entry = kernel_entry_waits(g, correction)
    entry = entry[g.complete(entry)]
    per_rank = {}
    for j, rank in enumerate(g.ranks.tolist()):
        b = g.barrier_wait[:, j][np.isfinite(g.barrier_wait[:, j])]
        e = entry[:, j]
        sync = float(np.median(b)) if len(b) else None
        kernel = float(np.median(e)) if len(e) else None
        per_rank[str(rank)] = {
            "median": sync if sync is not None else kernel,
            "sync_barrier_median": sync,
            "kernel_entry_median": kernel,
        }
    return {
        "per_rank": per_rank,
        "definition": (
            "median per rank: the barrier kernel's duration (synchronize_start) when it is there, else the wait at "
            "the kernel's entry barrier (last clock-corrected start of the launch minus the rank's own); both listed"
        ),
    }


def binned_grid(
    values: np.ndarray, rows: np.ndarray, columns: np.ndarray, max_rows: int = 128, max_columns: int = 200
) -> dict[str, Any]:
    """A ``[row, column]`` matrix for a heat map that stays readable at thousands of ranks: rows (ranks) and columns
    are grouped into at most ``max_rows`` / ``max_columns``
    consecutive bins, each cell the max of its bin (NaN-aware)."""
    values = np.asarray(values, dtype=float)

    def edges(n: int, limit: int) -> np.ndarray:
        return np.linspace(0, n, min(n, limit) + 1).round().astype(int)

    r_edges, c_edges = edges(values.shape[0], max_rows), edges(values.shape[1], max_columns)
    out = np.full((len(r_edges) - 1, len(c_edges) - 1), np.nan)
    if out.size:  # every bin holds at least one row and column (edges step by >= 1), as reduceat needs
        # fmax ignores NaN as nanmax does, over whole bins at once (a nanmax per cell took ~0.3 s at 256 ranks x
        # 2,000 launches); a cell without a finite value ends non-finite and is shown empty either way.
        out = np.fmax.reduceat(np.fmax.reduceat(values, r_edges[:-1], axis=0), c_edges[:-1], axis=1)

    def labels(names: np.ndarray, e: np.ndarray) -> list[str]:
        return [str(names[a]) if b - a == 1 else f"{names[a]}-{names[b - 1]}" for a, b in zip(e[:-1], e[1:])]

    return {
        "rows": labels(np.asarray(rows), r_edges),
        "columns": labels(np.asarray(columns), c_edges),
        "values": [[None if not np.isfinite(v) else round(float(v), 3) for v in row] for row in out],
        "aggregation": "max over the ranks and columns of each bin"
        if len(r_edges) - 1 < values.shape[0] or len(c_edges) - 1 < values.shape[1]
        else "none",
    }


def entry_wait_grid(g: LaunchGrid, correction: np.ndarray) -> dict[str, Any]:
    """rank x launch of the entry wait: the barrier kernel's duration, else the wait at the kernel's entry."""
    if g.has_barrier:
        wait, which = g.barrier_wait, "barrier kernel duration"
    else:
        wait, which = kernel_entry_waits(g, correction), "kernel entry wait (clock-corrected starts)"
    return {**binned_grid(wait.T, g.ranks, g.launches), "what": which, "unit": "us"}
