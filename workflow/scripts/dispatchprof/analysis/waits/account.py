"""The launches a cost account reads (complete rows: arrivals, ends, host gaps, time in the kernel) and the what-if
helpers over them: the per-row maxima a saving needs, an end delay carried into the next arrival."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from dispatchprof.analysis.waits.table import LaunchGrid, host_gaps, last_arrival_node


@dataclass
class Account:
    """The launches a cost account reads (complete rows, in launch order): per row and rank the arrival at the barrier
    and the end of the target, each relative within its row (µs; larger = later), and whether the previous row is the
    previous launch (a carried delay needs it); the ranks' and the group's time in the kernel, to see a launch that
    takes longer than the typical one."""

    arrival: np.ndarray  # [row, rank]
    end: np.ndarray  # [row, rank]
    gap_excess: np.ndarray  # [row, rank] host gap minus the row's median host gap (NaN where no previous launch)
    follows: np.ndarray  # [row] bool: row - 1 is launch - 1
    arrival_how: str
    end_how: str
    ends_across_nodes: bool  # False without a pure barrier: cross-node comparisons of ends are not established
    body: (
        np.ndarray
    )  # [row, rank] end minus the row's last kernel start (corrected clocks): the rank's time in the kernel
    kernel: np.ndarray  # [row] the group's kernel time: last end minus last start
    launches: np.ndarray | None = None  # [row] the launch index of each row (the merged trace's causes track)

    @property
    def rows(self) -> int:
        return len(self.arrival)


def account(g: LaunchGrid, correction: np.ndarray, skew_us: float = 0.0) -> Account:
    """Arrivals and ends of the complete launches. With the barrier kernel, arrivals come from its durations alone (the
    barrier releases every rank together, up to its release skew across nodes, so the shortest barrier task is the last
    arrival): no clock. Ends come from the clock-corrected node clocks, which the barrier's ends give. Without it,
    arrivals are the target's clock-corrected starts and ends its corrected ends; the clocks then come from the
    target's own ends, so ends cannot be compared across nodes (they were used to align the clocks)."""
    if g.has_barrier:
        # the barrier releases the last arrival's node first: the other nodes' waits are longer by the skew
        late_node = last_arrival_node(g)
        arrival = -g.barrier_wait + skew_us * (g.nodes[None, :] != late_node[:, None])
        how = (
            "the barrier kernel's durations (shortest = last arrival; no "
            f"clock), less its release skew across nodes ({skew_us:.2f} us)"
        )
    else:
        arrival, how = (
            g.start - correction,
            "the target's starts on clock-corrected node clocks (the clocks come from the target's ends: weaker)",
        )
    end = g.end - correction
    gaps = host_gaps(g)
    rows = g.complete(arrival) & g.complete(end)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # against the row's lower quartile: a late node can be half of the ranks, and would move the median
        excess = gaps - np.nanpercentile(gaps, 25, axis=1, keepdims=True)
    launches = g.launches[rows]
    follows = np.concatenate([[False], np.diff(launches) == 1])
    arrival, end = arrival[rows], end[rows]
    starts = (g.start - correction)[rows]
    body = end - starts.max(axis=1, keepdims=True) if len(end) else end
    kernel = body.max(axis=1) if len(end) else np.zeros(0)
    arrival = arrival - arrival.max(axis=1, keepdims=True) if len(arrival) else arrival
    end = end - end.max(axis=1, keepdims=True) if len(end) else end
    end_how = (
        "clock-corrected ends (node clocks from the barrier kernel's ends)"
        if g.has_barrier
        else "clock-corrected ends within a node"
    )
    return Account(arrival, end, excess[rows], follows, how, end_how, g.has_barrier, body, kernel, launches)


def top_two(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: the column of the largest value, the largest and the second largest."""
    if values.shape[1] < 2:
        return np.zeros(len(values), int), values[:, 0], values[:, 0]
    top = np.argmax(values, axis=1)
    part = np.partition(values, -2, axis=1)
    return top, part[:, -1], part[:, -2]


class Maxima:
    """Per row the largest value and the next, overall and over nodes: what a what-if saving needs, so that a rank's or
    a node's saving costs O(rows), not O(rows x ranks) (2,048 ranks have 2,048 candidates)."""

    def __init__(self, values: np.ndarray, nodes: np.ndarray):
        self.values = values
        self.top, self.first, self.second = top_two(values)
        self.node_ids = np.unique(nodes)
        per_node = (
            np.column_stack([values[:, nodes == n].max(axis=1) for n in self.node_ids])
            if len(values)
            else np.zeros((0, len(self.node_ids)))
        )
        self.node_top, self.node_first, self.node_second = (
            top_two(per_node) if len(values) else (np.zeros(0, int), np.zeros(0), np.zeros(0))
        )

    def others(self, cols: np.ndarray, node: int | None) -> np.ndarray:
        """Per row the largest value outside ``cols`` (one rank, or every rank of ``node``, or a few ranks)."""
        if node is None and len(cols) > 1:
            mask = np.ones(self.values.shape[1], bool)
            mask[cols] = False
            if not mask.any():  # every rank is among them: nobody else ends
                return np.full(len(self.values), -np.inf)
            return self.values[:, mask].max(axis=1)
        if node is None:
            (col,) = cols
            return np.where(self.top == col, self.second, self.first)
        k = int(np.searchsorted(self.node_ids, node))
        return np.where(self.node_top == k, self.node_second, self.node_first)

    def saving(self, cols: np.ndarray, node: int | None, shift: np.ndarray) -> np.ndarray:
        """Per row: how much earlier the row's last value comes when ``shift`` (>= 0, [row, len(cols)]) is taken off
        those columns: the what-if saving of removing a delay, in a collective where everyone waits for the last."""
        if not len(cols):  # a delay of the whole group only (Candidate.group_delay): no rank's shift
            return np.zeros(len(self.values))
        shifted = (self.values[:, cols] - shift).max(axis=1)
        return self.first - np.maximum(self.others(cols, node), shifted)

    def waits_caused(self, cols: np.ndarray, shift: np.ndarray) -> np.ndarray:
        """Per row: the waiting the delay made the others do (Scalasca's delay cost, summed over the ranks it did not
        delay): each waits until the last value, and without the delay until the new last, or its own value."""
        full = np.zeros_like(self.values)
        full[:, cols] = shift
        new_last = (self.values - full).max(axis=1, keepdims=True)
        waited = self.first[:, None] - np.maximum(self.values, new_last)
        return np.where(full <= 0, waited, 0.0).sum(axis=1)


def carried(shift_end: np.ndarray, follows: np.ndarray) -> np.ndarray:
    """An end delay of row i carried into the arrival at row i + 1's barrier (the host returns that much later): the
    same delay, counted once, where it costs the launch period."""
    out = np.zeros_like(shift_end)
    out[1:] = np.where(follows[1:, None], shift_end[:-1], 0.0)
    return out
