"""What the group waits for: node clocks, coupling, entry waits and the awaited rank or node of a collective kernel.

elastic_dispatch_kernel is a collective: a rank's duration is its own work plus its wait for the slowest peer, so
"longest = slowest" is wrong (shared/DESIGN.md, "The kernel is a collective"). This module works on launch tables
aligned by launch index (``[launch, rank]`` arrays of µs on each node's own clock):
- node clocks: ranks of one node share a host clock; each node's offset and drift against node 0 are estimated
  from a pure barrier (the ends of the synchronize_start barrier kernel, which release every rank together; else
  the target's ends, a weaker reference) and removed before any cross-node comparison;
- coupling: within a node (one clock) the barrier's ends coincide while its starts spread;
- entry waits: the barrier kernel's duration is its wait; the target's entry wait is the last corrected start
  minus the rank's own;
- the awaited: per launch who arrived last (the shortest barrier wait needs no clock at all), who ends last by
  itself, and whether the group ends far apart with nobody late (the wait is inside the kernel); each cause with its
  cost, the group time per launch its removal would save, ranked by that cost, never by how often it strikes; a
  cause is named when it costs more than ``min_cost_us`` with a CI above zero (shared/DESIGN.md, "The answer is a
  cost account").
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from dispatchprof.formats.ranklog import name_ranks


@dataclass
class LaunchGrid:
    """Used launches aligned by launch index: ``[launch, rank]`` µs on each rank's node clock, NaN where missing."""

    launches: np.ndarray
    ranks: np.ndarray
    nodes: np.ndarray
    start: np.ndarray
    end: np.ndarray
    duration: np.ndarray  # as read: start + duration loses precision at epoch-sized µs, so the difference is not taken back
    barrier_start: np.ndarray
    barrier_end: np.ndarray
    barrier_wait: np.ndarray  # the barrier kernel's duration: its wait

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
    return LaunchGrid(launches, ranks, ranks // ranks_per_node, start, start + dur, dur, bstart, bstart + bdur, bdur)


def host_gaps(g: LaunchGrid) -> np.ndarray:
    """``[launch, rank]``: from the rank's previous target end to its arrival (the barrier kernel's start, else the
    target's start), on the rank's own clock. This is the host's share of lateness: a rank that ended the previous
    launch late (it waited inside the kernel) returns late without being late itself. NaN where the previous launch
    is not in the table."""
    arrival = np.where(np.isfinite(g.barrier_start), g.barrier_start, g.start) if g.has_barrier else g.start
    gaps = np.full_like(arrival, np.nan)
    consecutive = np.flatnonzero(np.diff(g.launches) == 1) + 1
    gaps[consecutive] = arrival[consecutive] - g.end[consecutive - 1]
    return gaps


DRIFT_IMPLAUSIBLE_PPM = 100.0  # crystal oscillators of hosts stay within tens of ppm: beyond this, suspect the fit


def last_arrival_node(g: LaunchGrid) -> np.ndarray:
    """Per launch the node of the rank with the shortest barrier task (the last arrival; -1 where unknown)."""
    out = np.full(len(g.launches), -1)
    if not g.has_barrier:
        return out
    wait = np.where(np.isfinite(g.barrier_wait), g.barrier_wait, np.inf)
    known = np.isfinite(g.barrier_wait).any(axis=1)
    out[known] = g.nodes[np.argmin(wait[known], axis=1)]
    return out


def node_clocks(g: LaunchGrid) -> tuple[dict[str, Any], np.ndarray]:
    """Each node's clock against node 0's: offset (at the first launch) and drift, fitted over the launches, from
    the medians of the reference ends per node. Returns the per-node report and the ``[launch, rank]`` correction
    (µs to subtract).

    With the barrier kernel, the fit also takes out the barrier's release skew across nodes: the release reaches the
    last arrival's node first, the other nodes ``release_skew_us`` later (per launch, which node that is follows from
    the barrier's durations alone). Without it that skew would stay in the offsets, half a skew either way. A drift
    whose standard error is at least its size is reported as unresolved; one above DRIFT_IMPLAUSIBLE_PPM is flagged.
    msprof's device time is the device counter anchored once to the host clock (shared/formats/msprof.md §5), so
    chrony or PTP on the hosts does not correct it during a collection."""
    use_barrier = g.has_barrier
    ref = g.barrier_end if use_barrier else g.end
    reference = "ends of the barrier kernel (all ranks released together)" if use_barrier else "ends of the target kernel (coupled ends; weaker)"
    nodes = np.unique(g.nodes)
    base = nodes[0]
    last_node = last_arrival_node(g)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN launch has no median: NaN, left out below
        t0 = np.nanmedian(ref[:, g.nodes == base], axis=1)
    correction = np.zeros_like(ref)
    report: dict[str, Any] = {}
    first = np.nanmin(t0) if np.isfinite(t0).any() else 0.0
    for node in nodes:
        cols = g.nodes == node
        if node == base:
            report[str(int(node))] = {"offset_us": 0.0, "drift_ppm": 0.0, "spread_us": 0.0, "launches": int(np.isfinite(t0).sum()), "reference": reference}
            continue
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            tk = np.nanmedian(ref[:, cols], axis=1)
        d = tk - t0
        t = t0 - first
        ok = np.isfinite(d) & np.isfinite(t)
        skew_x = (last_node == base).astype(float) - (last_node == node).astype(float)
        skew = None
        if ok.sum() >= 3 and np.ptp(t[ok]) > 0:
            design = [np.ones(ok.sum()), t[ok]]
            if use_barrier and ok.sum() >= 4 and np.ptp(skew_x[ok]) > 0:
                design.append(skew_x[ok])
            coef = np.linalg.lstsq(np.column_stack(design), d[ok], rcond=None)[0]
            intercept, slope = float(coef[0]), float(coef[1])
            skew = float(coef[2]) if len(coef) > 2 else None
        elif ok.any():
            slope, intercept = 0.0, float(np.median(d[ok]))
        else:
            report[str(int(node))] = {"offset_us": None, "drift_ppm": None, "spread_us": None, "launches": 0, "reference": reference}
            continue
        fitted = intercept + slope * np.where(np.isfinite(t), t, 0.0)
        resid = d[ok] - fitted[ok] - (skew or 0.0) * skew_x[ok]
        correction[:, cols] = fitted[:, None]
        spread_t = float(((t[ok] - t[ok].mean()) ** 2).sum())
        dof = len(resid) - (3 if skew is not None else 2)
        stderr = math.sqrt(float((resid**2).sum()) / dof / spread_t) * 1e6 if dof > 0 and spread_t > 0 else None
        drift = float(slope * 1e6)
        if stderr is None or stderr >= abs(drift):
            drift_state = "unresolved"
        elif abs(drift) > DRIFT_IMPLAUSIBLE_PPM:
            drift_state = "implausible"
        else:
            drift_state = "resolved"
        report[str(int(node))] = {
            "offset_us": float(intercept),
            "drift_ppm": drift if drift_state != "unresolved" else None,
            "drift_ppm_fitted": drift,
            "drift_ppm_stderr": stderr,  # a short collection pins the drift down poorly: read it with this
            "drift_state": drift_state,
            "release_skew_us": skew,
            "spread_us": float(1.4826 * np.median(np.abs(resid - np.median(resid)))) if len(resid) else None,
            "launches": int(ok.sum()),
            "reference": reference,
            "reference_us": float(first),  # the drift is per µs of node 0's clock after this (the trace needs it)
        }
    return report, correction


def release_skew(clocks: Mapping[str, Any]) -> float:
    """The barrier's release skew across nodes (µs, >= 0), the median over the nodes' clock fits; 0 when not fitted."""
    skews = [c["release_skew_us"] for c in clocks.values() if c.get("release_skew_us") is not None]
    return max(0.0, float(np.median(skews))) if skews else 0.0


def coupling(g: LaunchGrid) -> dict[str, Any]:
    """Within each node (one clock): do ends coincide while starts spread? Measured on the barrier kernel when
    present (a pure barrier), else on the target kernel."""
    start, end = (g.barrier_start, g.barrier_end) if g.has_barrier else (g.start, g.end)
    kernel = "barrier kernel" if g.has_barrier else "target kernel"
    starts, ends, correlations = [], [], []
    for node in np.unique(g.nodes):
        cols = g.nodes == node
        if cols.sum() < 2:
            continue
        s, e = start[:, cols], end[:, cols]
        ok = np.isfinite(s).all(axis=1) & np.isfinite(e).all(axis=1)
        starts += list(np.ptp(s[ok], axis=1))
        ends += list(np.ptp(e[ok], axis=1))
        if cols.sum() >= 3:
            correlations += list(_row_correlations(s[ok], e[ok] - s[ok]))
    if not starts:
        return {"state": "unknown", "reason": "no node has two ranks with data in the same launch", "kernel": kernel}
    start_med, end_med = float(np.median(starts)), float(np.median(ends))
    corr = [c for c in correlations if np.isfinite(c)]
    corr_med = float(np.median(corr)) if corr else None
    if start_med < 1.0:
        state, why = "unknown", "starts within a node do not spread (median < 1 us): coupling cannot be seen"
    elif end_med <= 0.5 * start_med:
        state, why = "coupled", "ends coincide within a node while starts spread: ranks wait for each other"
    elif corr_med is not None and corr_med <= -0.5:
        state, why = "coupled", f"within a node the later a rank starts, the shorter it runs (median correlation {corr_med:.2f}): ranks wait for each other"
    elif end_med >= 0.9 * start_med and (corr_med is None or corr_med > -0.2):
        state, why = "not_coupled", "ends spread as much as starts and durations do not shrink with later starts: ranks run independently"
    else:
        state, why = "unknown", "neither clearly coupled nor independent"
    return {
        "state": state,
        "reason": why,
        "kernel": kernel,
        "start_spread_us_median": start_med,
        "end_spread_us_median": end_med,
        "start_duration_correlation_median": corr_med,
    }


def _row_correlations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``a`` with the same row of ``b`` (NaN where a row is constant); vectorised:
    thousands of launches x nodes."""
    da = a - a.mean(axis=1, keepdims=True)
    db = b - b.mean(axis=1, keepdims=True)
    norm = np.sqrt((da**2).sum(axis=1) * (db**2).sum(axis=1))
    with np.errstate(all="ignore"):
        return np.where(norm > 0, (da * db).sum(axis=1) / norm, np.nan)


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
    body: np.ndarray  # [row, rank] end minus the row's last kernel start (corrected clocks): the rank's time in the kernel
    kernel: np.ndarray  # [row] the group's kernel time: last end minus last start

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
        how = f"the barrier kernel's durations (shortest = last arrival; no clock), less its release skew across nodes ({skew_us:.2f} us)"
    else:
        arrival, how = g.start - correction, "the target's starts on clock-corrected node clocks (the clocks come from the target's ends: weaker)"
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
    end_how = "clock-corrected ends (node clocks from the barrier kernel's ends)" if g.has_barrier else "clock-corrected ends within a node"
    return Account(arrival, end, excess[rows], follows, how, end_how, g.has_barrier, body, kernel)


def _top_two(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        self.top, self.first, self.second = _top_two(values)
        self.node_ids = np.unique(nodes)
        per_node = np.column_stack([values[:, nodes == n].max(axis=1) for n in self.node_ids]) if len(values) else np.zeros((0, len(self.node_ids)))
        self.node_top, self.node_first, self.node_second = _top_two(per_node) if len(values) else (np.zeros(0, int), np.zeros(0), np.zeros(0))

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


@dataclass
class Candidate:
    evidence: str
    rank: int | None
    node: int | None
    ranks: list[int]
    cols: np.ndarray  # the grid's columns of those ranks
    arrival_shift: np.ndarray  # [row, len(cols)] lateness removed at the barrier (launch-period scope)
    end_shift: np.ndarray  # [row, len(cols)] end delay removed in the timed kernel scope
    struck: np.ndarray  # [row] bool
    facts: dict[str, Any]
    period_extra: np.ndarray | None = None  # [row] a saving that moves the whole group (added to the shifts' saving)
    timed_extra: np.ndarray | None = None
    group: bool = False  # listed, never named (late-ending ranks; own work that the clocks cannot establish): facts["not_named"] says why


def transient(acc: Account, own_min: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether the group's kernel time is far above the typical launch's (more than own_min and 5 robust
    sigmas of its spread over launches), and by how much (0 where not)."""
    if not acc.rows:
        return np.zeros(0, bool), np.zeros(0)
    above = acc.kernel - np.median(acc.kernel)
    sigma = 1.4826 * float(np.median(np.abs(above)))
    spike = above > max(own_min, 5.0 * sigma)
    return spike, np.where(spike, above, 0.0)


CLOCKS_FROM_ENDS = (
    "its cost compares arrivals across nodes on clocks fitted to the target's own ends (no barrier kernel): a node that ends later in "
    "every launch looks on time there, so the cost is uncertain by that skew; enable baseline.synchronize_start"
)
EVERY_LAUNCH_ALIKE = (
    "a slowdown in every launch that moves every rank's end alike (a slow link between nodes, a role slow on every rank) does not stand "
    "out here: DebugClock's busiest_node (debugclock.when: always) or an A/B comparison can show it"
)
MAX_LATE_SET = 16  # late-ending ranks beyond this many are not listed one set at a time (thousands of ranks)


def lead_within_node(end: np.ndarray, last: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Per row: the last rank's lead over the next end on its own node (one clock); infinite when it is alone there."""
    out = np.full(len(end), np.inf)
    for node in np.unique(nodes):
        cols = np.flatnonzero(nodes == node)
        rows = np.isin(last, cols)
        if len(cols) < 2 or not rows.any():
            continue
        part = np.sort(end[np.ix_(rows, cols)], axis=1)
        out[rows] = part[:, -1] - part[:, -2]
    return out


def late_sets(acc: Account, own_min: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row the ranks that end late apart from the others: the largest gap between consecutive ends in the later
    half, when it exceeds own_min and 3 times the median gap (the ends' own spacing). Returns per row the size of that
    late set (0: none), its gap (its first end's lead over the others' last) and the end order (ascending)."""
    n, world = acc.end.shape
    if not n or world < 2:
        return np.zeros(n, int), np.zeros(n), np.zeros((n, world), int)
    order = np.argsort(acc.end, axis=1, kind="stable")
    gaps = np.diff(np.take_along_axis(acc.end, order, axis=1), axis=1)  # [row, world - 1]
    first = (world - 1) // 2  # a late set is at most half of the ranks
    split = first + np.argmax(gaps[:, first:], axis=1)
    gap = gaps[np.arange(n), split]
    typical = np.median(gaps, axis=1)
    clear = (gap > own_min) & (gap > 3.0 * typical)
    return np.where(clear, world - 1 - split, 0), np.where(clear, gap, 0.0), order


PERSISTENT_FRACTION = 0.5  # "in most launches": a majority, so that at most one set of ranks can be persistent


def stands_out(member: np.ndarray, persistent: np.ndarray, group: np.ndarray, alpha: float) -> dict[str, Any]:
    """Whether the ranks in the late set of most launches (``persistent``'s columns of ``member``, late_members) are
    late more often than the most often late of the ranks outside ``group`` (they and their followers), beyond chance:
    a one-sided two-proportion z-test at ``alpha`` between the least often late of them and the most often late of the
    others. The kernel's own structure makes some ranks end late often without any fault (3x4: four ranks in about
    40% of launches); over a short run that is a majority by chance (25 launches, no fault: ranks 7 and 8 in 52%, the
    next in 36%, costed 47 us per launch), and only a comparison with the others' fractions in the same run says so.
    The most often late of many others is high by chance too: with thousands of ranks the test errs towards listing,
    not naming. A x1.15 rank in 3x4 over 200 launches: 53-60% against the others' 28-34% (z 4.9-5.9); a slow sender
    in 95-99% against 4-9% (z above 17)."""
    n = len(member)
    counts = member.sum(axis=0)
    others = np.setdiff1d(np.arange(member.shape[1]), group)
    mine, theirs = int(counts[persistent].min()), int(counts[others].max()) if len(others) else 0
    pooled = (mine + theirs) / (2 * n)
    spread = math.sqrt(pooled * (1 - pooled) * 2 / n)  # 0 only where both are late in every launch, or in none
    z = (mine - theirs) / n / spread if spread > 0 else 0.0
    fact = {"fraction_late": mine / n, "others_fraction_late": theirs / n, "z": z}
    if z > statistics.NormalDist().inv_cdf(1 - alpha):
        return {"stands_out": fact}
    return {
        "stands_out": fact,
        "not_named": (
            f"late in {mine / n:.0%} of {n} launches, the most often late of the other ranks in {theirs / n:.0%}: not apart beyond chance "
            f"(z = {z:.1f}, timeline.waits.alpha {alpha:g}). The kernel's own structure makes some ranks end late often; more launches "
            "(timeline.iterations) can tell"
        ),
    }


def persistent_late_ranks(member: np.ndarray) -> np.ndarray:
    """The grid columns that are in the late set (``member``, late_members) of most launches: a slowdown present in
    every launch (a slow rank, a slow sender) splits into many per-launch sets (its receivers end late with it, in a
    varying staircase), each rare, while its own ranks stay in nearly all of them."""
    if not len(member):
        return np.zeros(0, int)
    return np.flatnonzero(member.mean(axis=0) > PERSISTENT_FRACTION)


def late_members(size: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``[row, column]``: whether the column is in the row's late set (late_sets)."""
    n, world = order.shape
    member = np.zeros((n, world), bool)
    if n:
        np.put_along_axis(member, order, np.arange(world)[None, :] >= (world - size)[:, None], axis=1)
    return member


def core_candidate(
    acc: Account, ranks: np.ndarray, core: np.ndarray, member: np.ndarray, own_min: float, ends: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> Candidate:
    """One rank in the late set of most launches whose late sets mostly hold others too, ending after it (its
    receivers wait for its data, cross-node as well): where its receivers end after it, the whole late set's lead over
    the others' last is the delay (the set brought down to the others' last); where it ends last itself, its own lead
    over the next end (as own work: the set's other ranks may end late by the kernel's own structure, a sender serving
    its receivers in turn, and taking the whole set's lead there tripled a x1.15 rank's cost in 3x4). Named as
    late-ending ranks with that rank as their core, the others listed beside it; no claim about why: PMU or DebugClock
    name the rank and role. ``ends``: _top_two of the ends (per row the last rank, its end and the next end)."""
    (j,) = core
    rows = member[:, j]
    cols = np.flatnonzero(member[rows].any(axis=0)) if rows.any() else core
    others_last = np.where(member, -np.inf, acc.end).max(axis=1, keepdims=True)
    shift = np.where(rows[:, None] & member[:, cols], np.maximum(0.0, acc.end[:, cols] - others_last), 0.0)
    # where the core itself ends last, nobody ends after it waiting for its data: its delay is its own lead over the
    # next end. That next end may be a receiver that waited for it, so this understates; the set's lead overstated more
    top, first, second = ends
    alone_last = rows & (top == j)
    k = int(np.flatnonzero(cols == j)[0])
    shift[alone_last] = 0.0
    shift[alone_last, k] = first[alone_last] - second[alone_last]
    cand = _late_ending(acc, [int(ranks[j])], cols, shift, own_min)
    together = member[cand.struck][:, cols].mean(axis=0) if cand.struck.any() else np.zeros(len(cols))
    # late with it in at least 10% of the launches it struck, most often first
    cand.facts["with_ranks"] = [int(ranks[c]) for c, f in sorted(zip(cols, together), key=lambda x: -x[1]) if c != j and f >= 0.1]
    return cand


def followers(end: np.ndarray, core: int, own_min: float) -> np.ndarray:
    """The columns whose end moves with the core's, launch after launch: the robust spread (1.4826 x MAD) of their lag
    behind the core's end is below own_min, the resolution at which the account calls a lead own work, and below half
    the spread of their own end about the launch's median end: the core's end explains most of the variation of theirs
    (three quarters of its variance). A receiver that waits for the core's data to the end ends a constant
    transfer-and-tail from it (a spread of 2 us in 3x4, where a receiver that waits for it only at times spreads
    15-48 us), and so does a rank the core waits for: a lead over either is no lead. Ranks that merely end together,
    each with its own jitter, are no followers: their lag spreads more than their own end (about 1.2x, the difference
    of two jitters). Each end is taken about its launch's median end, not as the rank's time in the kernel: a kernel
    whose time varies from launch to launch alike for every rank moves every end alike, and read as a rank's own time
    that made every rank that ends with the others a follower of a core that leads them all by a constant (the whole
    group, and then nobody was left to end before it)."""
    if len(end) < 3:
        return np.zeros(0, int)

    def spread(values: np.ndarray) -> np.ndarray:
        return 1.4826 * np.median(np.abs(values - np.median(values, axis=0)), axis=0)

    lag = spread(end[:, [core]] - end)
    tied = (lag < own_min) & (lag < 0.5 * spread(end - np.median(end, axis=1, keepdims=True)))
    tied[core] = False
    return np.flatnonzero(tied)


def _late_ending(acc: Account, named: list[int], cols: np.ndarray, end_shift: np.ndarray, own_min: float) -> Candidate:
    """A named late-ending set (``named``: its ranks) from the end delays that bring its ``cols`` down to the others'
    last: struck where that lead exceeds own_min, carried into the next arrival in the launch period."""
    lead = end_shift.max(axis=1)
    struck = lead > own_min
    end_shift = np.where(struck[:, None], end_shift, 0.0)
    facts = {"lead_us_median": float(np.median(lead[struck])) if struck.any() else 0.0, "late_ending_ranks": named, "persistent": True}
    return Candidate("in_kernel", None, None, named, cols, carried(end_shift, acc.follows), end_shift, struck, facts)


def persistent_candidate(acc: Account, ranks: np.ndarray, cols: np.ndarray, own_min: float) -> Candidate:
    """Ranks that end late together in most launches: per launch their lead over the others' last end is the delay
    (each of them brought down to the others' last). Named, with no claim about why: one of them may be slow and the
    others wait for its data; PMU or DebugClock names the rank and role. The lead over the others' last is what the
    timeline sees; the group's time without the slowdown also depends on how the others' ends move with it, which
    needs a reference run (an A/B comparison)."""
    mask = np.zeros(acc.end.shape[1], bool)
    mask[cols] = True
    others_last = acc.end[:, ~mask].max(axis=1, keepdims=True)
    return _late_ending(acc, ranks[cols].tolist(), cols, np.maximum(0.0, acc.end[:, cols] - others_last), own_min)


def candidates(acc: Account, ranks: np.ndarray, nodes: np.ndarray, waits: Mapping[str, Any]) -> list[Candidate]:
    """Every delay the data shows, as the shifts that would remove it: late arrivals by the host (a rank, or a node's
    ranks together), ends late by a rank's own work, ends late by a node's ranks together."""
    n, world = acc.arrival.shape
    out: list[Candidate] = []
    if not n or world < 2:
        return out
    # Late arrival by the host: the host gap (previous end to arrival, one clock) above the row's median by more
    # than late_min_us and 5 robust sigmas. Its size is the rank's median excess over its late launches: the
    # knob-like part, without this launch's own jitter. Only what is beyond the carried end is in a host gap.
    excess_ = np.where(np.isfinite(acc.gap_excess), acc.gap_excess, 0.0)
    on_time = excess_[excess_ <= np.median(excess_)]
    sigma = 1.4826 * float(np.median(np.abs(on_time - np.median(on_time)))) if len(on_time) else 0.0
    late = excess_ > max(float(waits["late_min_us"]), 5.0 * sigma)
    # Its size is clock-free (one host's gap); its cost is not: arrivals across nodes are compared on clocks fitted to
    # the target's ends when no barrier kernel ran, and a node that ends later in every launch (the kernel's own
    # skew, carried into its next start) then looks on time. The benchmark sees 39-64% errors there (3x4). What
    # holds whatever the clocks: removing a delay of L us from one host gives the group back at most L (every later
    # event is a max of earlier ones plus durations), so the cost is reported as that bound (cost_bound_us: the host
    # gaps' excess summed over the launches it struck, per launch; a node's by its latest rank, since removing several
    # delays gives back at most the largest), the estimate on the fitted clocks beside it.
    bounded = not (acc.ends_across_nodes or len(np.unique(nodes)) == 1)
    caveat = {"cost_clocks": CLOCKS_FROM_ENDS} if bounded else {}

    def bound_of(delay: np.ndarray) -> dict[str, Any]:  # [row] the delay removed: its mean per launch bounds the saving
        return {**caveat, "cost_bound_us": [0.0, float(delay.mean())]} if bounded else {}

    # only where a late arrival's saving is established (O(rows x ranks): 2,048 ranks have no late one most often)
    arrivals = Maxima(acc.arrival, nodes) if late.any() and not bounded else None

    def ahead_of(cols: np.ndarray, node: int | None, struck: np.ndarray) -> dict[str, Any]:
        """Where it struck and arrived last, its lead over the next arrival (median): removing its lateness brings
        the group's last arrival back no further, which is why a late arrival costs less than its lateness."""
        if arrivals is None:
            return {}
        lead = acc.arrival[:, cols].min(axis=1) - arrivals.others(cols, node)
        last = struck & (lead > 0)
        return {"ahead_us_median": float(np.median(lead[last])), "ahead_launches": int(last.sum())} if last.any() else {}

    for j in np.flatnonzero(late.any(axis=0)).tolist():
        size = float(np.median(excess_[late[:, j], j]))
        shift = np.where(late[:, j], size, 0.0)[:, None]
        rank = int(ranks[j])
        facts = {"late_us_median": size, **bound_of(np.where(late[:, j], excess_[:, j], 0.0)), **ahead_of(np.array([j]), None, late[:, j])}
        out.append(Candidate("late_arrival", rank, None, [rank], np.array([j]), shift, np.zeros_like(shift), late[:, j], facts))
    for node in np.unique(nodes):
        cols = np.flatnonzero(nodes == node)
        if len(cols) < 2 or len(cols) == world:
            continue
        together = late[:, cols].all(axis=1)
        if not together.any():
            continue
        size = float(np.median(excess_[together][:, cols]))
        shift = np.where(together[:, None], size, 0.0) * np.ones((1, len(cols)))
        facts = {"late_us_median": size, **bound_of(np.where(together, excess_[:, cols].max(axis=1), 0.0)), **ahead_of(cols, int(node), together)}
        out.append(Candidate("late_arrival", None, int(node), ranks[cols].tolist(), cols, shift, np.zeros_like(shift), together, facts))
    # Own work: the rank that ends last, by its lead over the next end. In the timed scope the lead is the saving;
    # in the launch period it is carried into the next barrier (its host returns that much later), counted there once.
    # A launch whose kernel takes far longer than the typical one (a spike), ended last by a rank whose own time in the
    # kernel is as far above its own typical time, is that rank's own work as a whole: the peers it kept waiting for
    # its data end late too, so its lead over them says too little. The whole group then ends later, and arrives
    # later at the next barrier: the same saving in both scopes.
    last, first, second = _top_two(acc.end)
    # By itself: the last end stands apart (late_sets). A staircase of ends (a slow sender serves its receivers one
    # after another, and the last served ends last) is no rank's own work: the last of it is a late-ending rank.
    size, gap, order = late_sets(acc, float(waits["own_work_min_us"]))
    lead = np.where(size == 1, gap, 0.0)
    across = acc.ends_across_nodes or len(np.unique(nodes)) == 1
    own_min = float(waits["own_work_min_us"])
    member = late_members(size, order)
    persistent = persistent_late_ranks(member) if acc.ends_across_nodes else np.zeros(0, int)
    # One persistent rank and its followers (ranks whose end moves with its own launch after launch: a receiver that
    # waits for its data to the end, or the rank it waits for) end as one. When that group ends last in most launches
    # where the rank is late (nobody else ends after it waiting for its data): alone, the rank's own work; with
    # followers, late-ending ranks brought down together to the others' last (which of them keeps the other waiting,
    # the timeline cannot tell: the lag is the same either way). A lead over a follower is no lead: in 3x4 a x1.15
    # rank's lead over the very next end, a follower 2.4 us behind it, costed it at half its counterfactual truth. One
    # that is mostly late with others ending after it at varying lags (its receivers) is the core of a late-ending set
    # (core_candidate, below).
    group = np.union1d(persistent, followers(acc.end, int(persistent[0]), own_min)) if len(persistent) == 1 else persistent
    alone = len(persistent) == 1 and float(np.isin(last[member[:, persistent[0]]], group).mean()) > PERSISTENT_FRACTION
    # A majority of launches can be the kernel's own structure over a short run: named only where the set is late
    # more often than the others beyond chance (stands_out); else listed, with why.
    apart = stands_out(member, persistent, group, float(waits["alpha"])) if len(persistent) else {}
    established = "not_named" not in apart
    if alone and len(group) == 1 and established:
        # where it ends last, its lead over the next end is its own delay even when the gap to the next is not the
        # row's largest (its peers' staircase behind it varies)
        (j,) = persistent
        lead = np.where((last == j) & (first - second > own_min), first - second, lead)
    if not across:
        # without a pure barrier the clocks come from the ends themselves: a lead over another node's end is not
        # established, a lead over the same node's ranks is (one clock). The smaller of the two is what is known, and
        # the cause is listed, not named: "ends last by itself" compares ends across nodes.
        lead = np.minimum(lead, lead_within_node(acc.end, last, nodes))
    spike, above = transient(acc, own_min)
    own_above = acc.body - np.median(acc.body, axis=0, keepdims=True)
    for j in np.unique(last[(lead > 0) | spike]).tolist():
        mine = (last == j) & ((lead > 0) | spike)
        own_spike = mine & spike & (own_above[:, j] > 0)
        spike_cost = np.where(own_spike, np.minimum(above, own_above[:, j]), 0.0)
        end_shift = np.where(mine & ~own_spike, lead, 0.0)[:, None]
        if not (end_shift.any() or own_spike.any()):
            continue
        clear = mine & ((lead > own_min) | own_spike)
        rank = int(ranks[j])
        facts = {"lead_us_median": float(np.median(np.maximum(lead, spike_cost)[clear] if clear.any() else lead[mine])), "spike_launches": int(own_spike.sum())}
        cols = np.array([j])
        if across:
            out.append(Candidate("own_work", rank, None, [rank], cols, carried(end_shift, acc.follows), end_shift, clear, facts, spike_cost, spike_cost))
            continue
        # Without a pure barrier: a spike is the rank's own time in the kernel above its own typical time, while the
        # group's kernel time is above the typical launch's (each on one clock): named as usual. The lead over the next
        # end compares ends across nodes: listed, not named.
        if own_spike.any():
            zero = np.zeros_like(end_shift)
            out.append(Candidate("own_work", rank, None, [rank], cols, zero, zero, own_spike, dict(facts), spike_cost, spike_cost))
        if end_shift.any():
            facts["not_named"] = "without a pure barrier, cross-node comparisons of ends are not established (enable baseline.synchronize_start)"
            out.append(Candidate("own_work", rank, None, [rank], cols, carried(end_shift, acc.follows), end_shift, clear & ~own_spike, facts, group=True))
    # Ranks that end late together, apart from the others, and are not a whole node: late-ending ranks, with no
    # claim about why (one of them may keep the others waiting for its data). Their lead over the others' last end.
    sets: dict[tuple[int, ...], list[int]] = {}
    for i in np.flatnonzero((size >= 2) & (size <= MAX_LATE_SET) & acc.ends_across_nodes).tolist():
        sets.setdefault(tuple(sorted(order[i, world - size[i] :].tolist())), []).append(i)
    whole_nodes = {tuple(np.flatnonzero(nodes == n).tolist()) for n in np.unique(nodes)}
    recurring: Candidate | None = None
    if len(persistent) >= 2 and tuple(persistent.tolist()) not in whole_nodes:
        recurring = persistent_candidate(acc, ranks, persistent, own_min)
    elif alone and len(group) > 1:
        recurring = persistent_candidate(acc, ranks, group, own_min)
        recurring.facts["followers_of"] = int(ranks[persistent[0]])
    elif len(persistent) == 1 and not alone:
        recurring = core_candidate(acc, ranks, persistent, member, own_min, (last, first, second))
    if recurring is not None:
        recurring.group = not established
        recurring.facts.update(apart)
        out.append(recurring)
    for members, rows_ in sets.items():
        if members in whole_nodes or len(rows_) < 2 or members in (tuple(persistent.tolist()), tuple(group.tolist())):
            continue
        cols = np.array(members)
        struck = np.zeros(n, bool)
        struck[rows_] = True
        end_shift = np.where(struck, gap, 0.0)[:, None] * np.ones((1, len(cols)))
        facts = {"lead_us_median": float(np.median(gap[struck])), "late_ending_ranks": ranks[cols].tolist()}
        facts["not_named"] = (
            "the timeline cannot tell a slow rank among late-ending ranks from the kernel's own "
            "structure (a sender serves its receivers in turn): PMU or DebugClock can"
        )
        out.append(Candidate("in_kernel", None, None, [], cols, carried(end_shift, acc.follows), end_shift, struck, facts, group=True))
    # A node whose ranks all end after every other rank: its lead over the others' last end, per rank. The link into
    # it, or its own work: the timeline cannot tell. Needs ends comparable across nodes.
    if acc.ends_across_nodes and len(np.unique(nodes)) > 1:
        ids = np.unique(nodes)
        node_max = np.column_stack([acc.end[:, nodes == k].max(axis=1) for k in ids])
        node_min = np.column_stack([acc.end[:, nodes == k].min(axis=1) for k in ids])
        top, first_max, second_max = _top_two(node_max)
        for k, node in enumerate(ids.tolist()):
            cols = np.flatnonzero(nodes == node)
            if len(cols) < 2:
                continue
            others_last = np.where(top == k, second_max, first_max)
            # the node as a whole is late by its first rank's lead; what a rank adds beyond is its own
            node_lead = node_min[:, k] - others_last
            together = node_lead > 0
            if not together.any():
                continue
            end_shift = np.where(together, node_lead, 0.0)[:, None] * np.ones((1, len(cols)))
            facts = {"lead_us_median": float(np.median(node_lead[together]))}
            out.append(Candidate("late_ending_node", None, int(node), ranks[cols].tolist(), cols, carried(end_shift, acc.follows), end_shift, together, facts))
    return out


def bootstrap_mean_ci(values: np.ndarray, resamples: int, seed: int) -> list[float]:
    """95% percentile-bootstrap CI of the mean over launches (resampling launches)."""
    if len(values) < 2:
        return [float("nan"), float("nan")]
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 500):
        stop = min(resamples, start + 500)
        means[start:stop] = values[rng.integers(0, len(values), size=(stop - start, len(values)))].mean(axis=1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def excess(acc: Account, inside: Mapping[str, Any] | None = None) -> dict[str, float | None]:
    """The group's excess per launch, from the data itself (no run without a fault exists on hardware): in the launch
    period, the last arrival's lead over the first at the barrier (every delay of a launch period, carried ends
    included, passes through the barrier, where the group waits for its last); in the timed kernel scope, the last
    end's lead over the first. Both plus the launches' kernel time above the typical launch's (in_kernel), which moves
    every rank alike. No single cause can give back more than its part: shares need not sum to 1."""
    if not acc.rows:
        return {"period_us_per_launch": None, "timed_us_per_launch": None}
    extra = max(0.0, inside["cost_us_per_launch"]) if inside else 0.0
    return {"period_us_per_launch": float(np.ptp(acc.arrival, axis=1).mean()) + extra, "timed_us_per_launch": float(np.ptp(acc.end, axis=1).mean()) + extra}


def backgrounds(costs: np.ndarray, peers: int) -> np.ndarray:
    """Per candidate: the median cost of the same evidence over the other ranks (or nodes), the candidate itself left
    out; ``costs`` holds every candidate's, and the ``peers + 1 - len(costs)`` ranks without a candidate cost 0. One
    sort for all (thousands of ranks are thousands of candidates)."""
    values = np.sort(np.concatenate([costs, np.zeros(max(0, peers + 1 - len(costs)))]))
    rest = len(values) - 1  # the others
    if rest <= 0:
        return np.zeros(len(costs))
    mine = np.searchsorted(values, costs)  # where each candidate sits (a tie: any equal one serves)

    def remaining(k: np.ndarray) -> np.ndarray:  # the k-th of the others, for each candidate
        return values[np.where(k < mine, k, k + 1)]

    lo, hi = (rest - 1) // 2, rest // 2
    return (remaining(np.full(len(costs), lo)) + remaining(np.full(len(costs), hi))) / 2


def costed(acc: Account, cands: list[Candidate], nodes: np.ndarray, waits: Mapping[str, Any], boot: Mapping[str, int]) -> list[dict[str, Any]]:
    """Each candidate with its costs: the what-if savings per launch (averaged over every analysed launch, zero where
    it did not strike) in the launch period and in the timed scope, Scalasca's delay cost, and a bootstrap CI over
    launches. Ranked by cost (launch period first, then timed); costs are not additive.

    Removing a cause leaves a rank as its peers are: the same evidence costs every rank something (its jitter is last
    now and then), so a cost is counted above the median cost of the same evidence over the other ranks (or nodes),
    its background, where no cause is."""
    arrivals, ends = Maxima(acc.arrival, nodes), Maxima(acc.end, nodes)
    raw = []
    for c in cands:
        period, timed = arrivals.saving(c.cols, c.node, c.arrival_shift), ends.saving(c.cols, c.node, c.end_shift)
        zero = np.zeros(len(period))
        raw.append((c, period, timed, c.period_extra if c.period_extra is not None else zero, c.timed_extra if c.timed_extra is not None else zero))
    world, n_nodes = acc.arrival.shape[1], len(np.unique(nodes))
    causes = []
    min_cost = float(waits["min_cost_us"])
    kinds: dict[tuple[str, bool], list[int]] = {}
    for i, (c, *_) in enumerate(raw):
        kinds.setdefault((c.evidence, c.node is None), []).append(i)
    background = np.zeros((len(raw), 2))
    for (_, per_rank), members in kinds.items():
        peers = (world if per_rank else n_nodes) - 1  # peers without a candidate cost nothing
        for k in (0, 1):
            background[members, k] = backgrounds(np.array([float(raw[i][1 + k].mean()) for i in members]), peers)
    for i, (c, period, timed, extra, extra_timed) in enumerate(raw):
        # a spike (a launch 5 robust sigmas above the launch-to-launch spread) is no jitter: the background, what
        # jitter gives every rank now and then, is of the leads only. The CI resamples the launches, spikes
        # included: a spike seen in one to three launches is not a rate (its CI reaches zero) and is listed, not named
        cost = float((period + extra).mean() - background[i, 0])
        cost_timed = float((timed + extra_timed).mean() - background[i, 1])
        if max(cost, cost_timed) < 0.05 * min_cost:
            continue  # a cost nobody would read: not worth its bootstrap
        ci = [float(x - background[i, 0]) for x in bootstrap_mean_ci(period + extra, boot["resamples"], boot["seed"])]
        ci_timed = [float(x - background[i, 1]) for x in bootstrap_mean_ci(timed + extra_timed, boot["resamples"], boot["seed"])]
        # named on one scope, the larger, and said in it: its explanation leads with that scope (_cost_text), so that
        # a cause named on its timed cost never reads as a launch-period cost below min_cost_us
        named_on = "period" if cost >= cost_timed else "timed"
        deciding = ci if named_on == "period" else ci_timed
        causes.append(
            {
                "evidence": c.evidence,
                "rank": c.rank,
                "node": c.node,
                "ranks": c.ranks,
                "fraction": float(c.struck.mean()) if acc.rows else 0.0,
                "cost_us_per_launch": cost,
                "cost_ci_us": ci,
                "cost_timed_us_per_launch": cost_timed,
                "cost_timed_ci_us": ci_timed,
                "background_us_per_launch": float(background[i, 0]),
                "wait_caused_us_per_launch": float(arrivals.waits_caused(c.cols, c.arrival_shift).mean()),
                "launches": acc.rows,
                "named": bool(max(cost, cost_timed) > min_cost and deciding[0] > 0 and not c.group),
                "named_on": named_on,
                **c.facts,
            }
        )
    causes.sort(key=lambda c: (-c["cost_us_per_launch"], -c["cost_timed_us_per_launch"], c["evidence"], c["rank"] if c["rank"] is not None else -1))
    return causes


def longest_own_work(g: LaunchGrid, waits: Mapping[str, Any], boot: Mapping[str, int]) -> list[dict[str, Any]]:
    """Ranks that do not wait for each other: a rank's duration is its own work, so durations compare directly, on
    each rank's own clock (no clock correction: node clocks hundreds of ms apart change nothing). Per launch the
    longest rank's lead over the next-longest is what removing its excess gives back to the launch's longest duration
    (the per-iteration max); averaged over the launches compared (zero where it is not the longest), less the median of
    the same over the other ranks (the background jitter gives every rank), with a bootstrap CI over launches. The
    same saving in both scopes: nobody waits, so nothing is carried into a barrier."""
    durations = g.duration[g.complete(g.duration)]
    n, world = durations.shape
    if not n or world < 2:
        return []
    top, first, second = _top_two(durations)
    lead = first - second
    tops = np.unique(top[lead > 0]).tolist()
    savings = [np.where(top == j, lead, 0.0) for j in tops]
    background = backgrounds(np.array([float(s.mean()) for s in savings]), world - 1)
    min_cost, own_min = float(waits["min_cost_us"]), float(waits["own_work_min_us"])
    causes = []
    for j, saving, bg in zip(tops, savings, background.tolist()):
        cost = float(saving.mean()) - bg
        if cost < 0.05 * min_cost:
            continue  # a cost nobody would read: not worth its bootstrap
        ci = [float(x - bg) for x in bootstrap_mean_ci(saving, boot["resamples"], boot["seed"])]
        longest = (top == j) & (lead > 0)
        rank = int(g.ranks[j])
        causes.append(
            {
                "evidence": "own_work",
                "rank": rank,
                "node": None,
                "ranks": [rank],
                "fraction": float(((top == j) & (lead > own_min)).mean()),
                "cost_us_per_launch": cost,
                "cost_ci_us": ci,
                "cost_timed_us_per_launch": cost,
                "cost_timed_ci_us": ci,
                "background_us_per_launch": bg,
                "wait_caused_us_per_launch": 0.0,  # nobody waits for it
                "launches": n,
                "named": bool(cost > min_cost and ci[0] > 0),
                "named_on": "period",
                "lead_us_median": float(np.median(lead[longest])),
                "spike_launches": 0,
                "not_coupled": True,
            }
        )
    causes.sort(key=lambda c: (-c["cost_us_per_launch"], c["rank"]))
    return causes


def duration_excess(g: LaunchGrid) -> dict[str, float | None]:
    """Ranks that do not wait for each other: the group's excess per launch is its longest duration's lead over the
    median rank's, in both scopes."""
    durations = g.duration[g.complete(g.duration)]
    if not len(durations):
        return {"period_us_per_launch": None, "timed_us_per_launch": None}
    value = float((durations.max(axis=1) - np.median(durations, axis=1)).mean())
    return {"period_us_per_launch": value, "timed_us_per_launch": value}


def in_kernel(acc: Account, waits: Mapping[str, Any], boot: Mapping[str, int]) -> dict[str, Any] | None:
    """Launches whose kernel takes far longer than the typical one while the rank that ends last is not itself above
    its own typical time: a slow peer's data (a slow sender, a slow counting role) keeps every rank waiting inside
    the kernel. The timeline sees when, not who: PMU or DebugClock must name the rank and role. Its saving is the
    kernel time above the typical launch's, in both scopes alike (the whole group ends later, and so arrives later at
    the next barrier). A slowdown present in every launch is the typical launch, and is not seen here: it needs a
    reference run (an A/B comparison)."""
    if acc.rows < 3:
        return None
    spike, above = transient(acc, float(waits["own_work_min_us"]))
    last = np.argmax(acc.end, axis=1)
    own_above = acc.body - np.median(acc.body, axis=0, keepdims=True)
    mine = spike & ~(own_above[np.arange(acc.rows), last] > 0)
    per_row = np.where(mine, above, 0.0)
    cost = float(per_row.mean())
    ci = bootstrap_mean_ci(per_row, boot["resamples"], boot["seed"])
    return {
        "evidence": "in_kernel",
        "rank": None,
        "node": None,
        "ranks": [],
        "fraction": float(mine.mean()),
        "kernel_us_median": float(np.median(acc.kernel)),
        "above_us_median": float(np.median(above[mine])) if mine.any() else 0.0,
        "cost_us_per_launch": cost,
        "cost_ci_us": ci,
        "cost_timed_us_per_launch": cost,
        "cost_timed_ci_us": ci,
        "background_us_per_launch": 0.0,
        "wait_caused_us_per_launch": cost * (acc.arrival.shape[1] - 1),
        "launches": acc.rows,
        "named": bool(cost > float(waits["min_cost_us"]) and ci[0] > 0),
        "named_on": "period",
    }


def arrived_last(acc: Account, ranks: np.ndarray) -> dict[str, float]:
    """Per rank: the fraction of launches it arrived last at the barrier (frequency, not cost)."""
    if not acc.rows:
        return {}
    last = np.argmax(acc.arrival, axis=1)
    counts = np.bincount(last, minlength=len(ranks)) / acc.rows
    return {str(int(r)): float(f) for r, f in zip(ranks, counts) if f > 0}


def rank_offsets(acc: Account, ranks: np.ndarray) -> dict[str, Any]:
    """Per rank the median arrival at the barrier and the median end, each after the launch's first (µs; the
    corrected clocks, or the barrier's durations for arrivals): who comes late, and who ends late."""
    if not acc.rows:
        return {"ranks": [], "arrival_us_median": [], "end_us_median": [], "definition": "no complete launch"}
    arrival = np.median(acc.arrival - acc.arrival.min(axis=1, keepdims=True), axis=0)
    end = np.median(acc.end - acc.end.min(axis=1, keepdims=True), axis=0)
    return {
        "ranks": [int(r) for r in ranks],
        "arrival_us_median": [round(float(v), 3) for v in arrival],
        "end_us_median": [round(float(v), 3) for v in end],
        "definition": f"median over launches of each rank's arrival after the launch's first ({acc.arrival_how}) and of its end after the first end "
        f"({acc.end_how})",
    }


def waiting_ranks(g: LaunchGrid, correction: np.ndarray, blamed: set[int]) -> dict[str, Any]:
    """The ranks that wait: a median barrier (or entry) wait in the upper half of the ranks' and above the lowest by
    more than half the spread between them; never a cause."""
    wait = g.barrier_wait if g.has_barrier else kernel_entry_waits(g, correction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per_rank = np.nanmedian(wait, axis=0)
    ok = np.isfinite(per_rank)
    if ok.sum() < 2:
        return {"ranks": [], "definition": "no waits to compare"}
    lo, hi = np.nanmin(per_rank), np.nanmax(per_rank)
    long = [int(r) for r, w in zip(g.ranks, per_rank) if np.isfinite(w) and w > lo + 0.5 * (hi - lo)]
    return {
        "ranks": [r for r in long if r not in blamed],
        "causes_left_out": [r for r in long if r in blamed],  # they wait as long, but are causes, named or listed
        "compared": int(ok.sum() - len(blamed & set(g.ranks[ok].tolist()))),  # ranks with waits that are no cause
        "definition": "ranks whose median wait at the barrier (its duration; else the kernel's entry wait) is above the lowest rank's by more than "
        "half the spread over ranks; a cause, named or listed, is never among them",
    }


def covered(costs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The named causes, less a rank's late arrival inside a named late node, and a rank's own work inside a named
    late-ending node (it ends late together with others: a late-ending rank, with no claim about why), where the node
    costs at least as much as the rank: the node explains it."""
    nodes = [c for c in costs if c["named"] and c["node"] is not None]
    within = {"late_arrival": "late_arrival", "own_work": "late_ending_node"}
    kept = []
    for c in costs:
        if not c["named"]:
            continue
        node = next((n for n in nodes if c["node"] is None and c["rank"] in n["ranks"] and n["evidence"] == within.get(c["evidence"])), None)
        if node is not None and node["cost_us_per_launch"] >= c["cost_us_per_launch"]:
            continue
        kept.append(c)
    return kept


def awaited(
    g: LaunchGrid,
    correction: np.ndarray,
    couple: Mapping[str, Any],
    waits: Mapping[str, Any],
    boot: Mapping[str, int] | None = None,
    clocks: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The cost account: every cause with its cost, ranked by cost, and the top one as the straggler:
    ``{rank, ranks, node, evidence, fraction, cost..., causes, explanation}``."""
    boot = {"resamples": 2000, "seed": 0, **(boot or {})}
    acc = account(g, correction, release_skew(clocks) if clocks else 0.0)
    # Ranks shown to run independently wait for nobody: no group time to account. Unknown coupling (say, no barrier
    # kernel across nodes) is accounted, and what the clocks cannot establish is listed, not named.
    coupled = couple["state"] != "not_coupled"
    where = "at the barrier kernel" if g.has_barrier else "at the kernel's entry barrier"
    if coupled:
        costs = costed(acc, candidates(acc, g.ranks, g.nodes, waits), g.nodes, waits, boot)
        inside = in_kernel(acc, waits, boot)
        group = excess(acc, inside)
    else:  # durations are own work and compare directly (shared/DESIGN.md): the longest's lead is what it costs
        costs, inside, group = longest_own_work(g, waits, boot), None, duration_excess(g)
    named = covered(costs)
    for c in costs + ([inside] if inside else []):
        for key, scope, value in (
            ("cost_share", "period_us_per_launch", c["cost_us_per_launch"]),
            ("cost_timed_share", "timed_us_per_launch", c["cost_timed_us_per_launch"]),
        ):
            c[key] = value / group[scope] if group[scope] else None
        if c.get("cost_bound_us"):
            # the share and the waiting caused compare the same arrivals across nodes as the estimate: not established
            c["cost_share"] = c["wait_caused_us_per_launch"] = None
    if inside and inside["named"]:
        named.append(inside)
        named.sort(key=lambda c: (-c["cost_us_per_launch"], -c["cost_timed_us_per_launch"]))
    for c in named:
        if c["evidence"] == "late_arrival":
            c["where"] = where
        c["explanation"] = describe(c)
    unnamed = [c for c in costs if not c["named"]][:10]
    # a cause is never among the waiting ranks, named or only listed (waiting is not blame, and neither is the reverse)
    blamed = {r for c in named + unnamed for r in c["ranks"]}
    notes = []
    if not coupled:
        notes.append("not coupled: the ranks do not wait for each other, so durations are own work and are compared directly")
    if not g.has_barrier:
        notes.append("cross-node comparisons of ends: not established (enable baseline.synchronize_start for a pure barrier)")
    if named:
        main = named[0]
        answer = {k: main.get(k) for k in (*STRAGGLER_KEYS, "cost_timed_ci_us", "cost_timed_share", "launches", "named_on")}
        explanation = "; ".join(c["explanation"] for c in named[:EXPLAINED])
        if len(named) > EXPLAINED:
            explanation += f"; and {len(named) - EXPLAINED} smaller named causes (timeline.causes)"
    else:
        answer = {"rank": None, "ranks": [], "node": None, "evidence": "none", "fraction": None, **dict.fromkeys(STRAGGLER_KEYS[5:])}
        explanation = (
            f"no rank or node stands out: no cause costs the group more than {float(waits['min_cost_us']):g} us per launch (timeline.waits.min_cost_us)"
        )
        listed = [c for c in unnamed if c.get("not_named")]
        if listed:  # sentences, not one chain of semicolons: the reader takes each part apart
            explanation += ". Listed, not named: " + listed_text(listed[:3])
        explanation += f". {EVERY_LAUNCH_ALIKE[0].upper()}{EVERY_LAUNCH_ALIKE[1:]}"
    return {
        **answer,
        "causes": named,
        "unnamed": unnamed,
        "explanation": explanation,
        "excess": {**group, "definition": EXCESS_DEFINITION if coupled else EXCESS_NOT_COUPLED},
        "arrived_last_fraction": arrived_last(acc, g.ranks),
        "rank_offsets": rank_offsets(acc, g.ranks),
        "waiting": waiting_ranks(g, correction, blamed),
        "arrivals": acc.arrival_how,
        "ends": acc.end_how,
        "notes": notes,
        "launches_compared": acc.rows,
    }


EXPLAINED = 5  # named causes spelled out in the explanation; the rest are in the causes table

EXCESS_DEFINITION = (
    "per launch, the last arrival's lead over the first at the barrier (launch period; carried ends included) or the last end's lead over "
    "the first (timed kernel scope), plus the kernel time above the typical launch's; averaged over the analysed launches"
)

EXCESS_NOT_COUPLED = (
    "ranks that do not wait for each other: per launch, the longest duration's lead over the median rank's (each duration is own work, "
    "on the rank's own clock), in both scopes; averaged over the launches every rank has"
)

STRAGGLER_KEYS = (
    "rank",
    "ranks",
    "node",
    "evidence",
    "fraction",
    "cost_us_per_launch",
    "cost_ci_us",
    "cost_timed_us_per_launch",
    "wait_caused_us_per_launch",
    "cost_share",
    "cost_bound_us",
)


CAUSE_KEYS = (
    "evidence",
    "rank",
    "node",
    "ranks",
    "fraction",
    "cost_us_per_launch",
    "cost_ci_us",
    "wait_caused_us_per_launch",
    "cost_timed_us_per_launch",
    "cost_share",
    "cost_bound_us",
    "explanation",
)


def _cost_text(cause: Mapping[str, Any]) -> str:
    lo, hi = cause["cost_ci_us"]
    if cause.get("cost_bound_us"):  # the saving is not established: the bound is the cost, the estimate is said as one
        return (
            f"costs at most {cause['cost_bound_us'][1]:.1f} us per launch (its lateness, where it struck: a delay gives back no more than itself); "
            f"the saving estimated on clocks fitted to the target's ends, {cause['cost_us_per_launch']:.1f} us (95% CI {lo:.1f}-{hi:.1f}), is not "
            "established: a node that ends later than the others in every launch by the kernel's own structure looks on time on those clocks "
            f"(enable baseline.synchronize_start for a number); {cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope"
        )
    if cause.get("not_coupled"):  # nobody waits: one saving, in the launch's longest duration
        text = f"costs the launch's longest duration {cause['cost_us_per_launch']:.1f} us per launch (95% CI {lo:.1f}-{hi:.1f}"
        return text + (f"; {100 * cause['cost_share']:.0f}% of the group's excess)" if cause.get("cost_share") is not None else ")")
    if cause.get("named_on") == "timed":  # named on its timed cost: said in that scope first (costed)
        lo, hi = cause["cost_timed_ci_us"]
        text = f"costs {cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope per launch (95% CI {lo:.1f}-{hi:.1f}"
        if cause.get("cost_timed_share") is not None:
            text += f"; {100 * cause['cost_timed_share']:.0f}% of the group's excess there"
        return text + f"), {cause['cost_us_per_launch']:.1f} us per launch of the launch period"
    text = f"costs {cause['cost_us_per_launch']:.1f} us per launch (95% CI {lo:.1f}-{hi:.1f}"
    if cause.get("cost_share") is not None:
        text += f"; {100 * cause['cost_share']:.0f}% of the group's excess"
    return text + f"), {cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope"


def describe(cause: Mapping[str, Any]) -> str:
    share = 100 * cause["fraction"]
    # "100%" only for every launch: 199 of 200 (a first launch without a host gap) reads 99.5%
    pct = f"{share:.1f}% of launches" if f"{share:.0f}" in ("0", "100") and share not in (0.0, 100.0) else f"{share:.0f}% of launches"
    cost = _cost_text(cause)
    if cause["evidence"] == "late_arrival":
        who = f"node {cause['node']} (ranks {cause['ranks'][0]}-{cause['ranks'][-1]})" if cause["node"] is not None else f"rank {cause['rank']}"
        ahead = ""
        if cause.get("ahead_us_median") is not None and cause["ahead_us_median"] < 0.9 * cause["late_us_median"]:
            ahead = (
                f" (where it arrives last, the next arrival is a median {cause['ahead_us_median']:.0f} us before it: removing its lateness brings "
                "the group's last arrival back no further)"
            )
        return f"{who} arrives {cause['late_us_median']:.0f} us late {cause.get('where', '')} by its host (its host gap) in {pct}: it {cost}{ahead}"
    if cause["evidence"] == "own_work" and cause.get("not_coupled"):
        return (
            f"rank {cause['rank']}'s kernel takes longest by itself (median {cause['lead_us_median']:.1f} us longer than the next-longest rank) in "
            f"{pct}: the ranks do not wait for each other here, so its duration is its own work; it {cost}"
        )
    if cause["evidence"] == "own_work" and cause.get("spike_launches") and cause["spike_launches"] >= round(cause["fraction"] * cause["launches"]):
        n = cause["spike_launches"]
        return (
            f"rank {cause['rank']}'s own work spiked in {n} launch{'es' if n > 1 else ''} of {cause['launches']} (median {cause['lead_us_median']:.0f} us above "
            f"its typical time in the kernel, the group's kernel as much above its typical launch): not a wait; it {cost}"
        )
    if cause["evidence"] == "own_work":
        return (
            f"rank {cause['rank']} ends last by itself (median {cause['lead_us_median']:.1f} us after the next rank, its host on time) in {pct}: "
            f"its own work, not a wait; it {cost}"
        )
    if cause["evidence"] == "late_ending_node":
        return (
            f"node {cause['node']}'s ranks ({cause['ranks'][0]}-{cause['ranks'][-1]}) end late together (median {cause['lead_us_median']:.1f} us after the "
            f"other nodes' last) in {pct}: the link into or out of it, or its own work: not established (DebugClock's send/receive phases and the PMU of the "
            f"senders on the other nodes can tell); it {cost}"
        )
    if cause.get("late_ending_ranks") and cause.get("with_ranks") is not None:
        (core,) = cause["late_ending_ranks"]
        shown = cause["with_ranks"][:6]
        others = f", with ranks {', '.join(map(str, shown))}{' and others' if len(cause['with_ranks']) > 6 else ''}" if shown else ""
        return (
            f"rank {core} is among the late-ending ranks of most launches{others} (median lead {cause['lead_us_median']:.1f} us: the set's over "
            f"the others' last where they end after it, its own over the next end where it ends last; in {pct}): late-ending ranks, with no claim about why (rank {core} may keep the others waiting "
            f"for its data, or wait with them; PMU or DebugClock must name the rank and role); it {cost}"
        )
    if cause.get("late_ending_ranks") and cause.get("followers_of") is not None:
        late, core = cause["late_ending_ranks"], cause["followers_of"]
        tied = ", ".join(str(r) for r in late if r != core)
        return (
            f"rank {core} ends late in most launches, and rank{'s' if len(late) > 2 else ''} {tied} end{'' if len(late) > 2 else 's'} with it launch after "
            f"launch, a constant lag apart: they end as one, last in most of them (median {cause['lead_us_median']:.1f} us after the others' last; in "
            f"{pct}): late-ending ranks, with no claim about why (which of them keeps the other waiting, the timeline cannot tell; PMU or DebugClock "
            f"must name the rank and role); it {cost}"
        )
    if cause.get("late_ending_ranks"):
        late = cause["late_ending_ranks"]
        return (
            f"ranks {', '.join(map(str, late))}{' are among the late-ending ranks of most launches and' if cause.get('persistent') else ''} end late together (median "
            f"{cause['lead_us_median']:.1f} us after the others' last) in {pct}: "
            "late-ending ranks, with no claim about why (one of them may keep the others waiting for its data; PMU or DebugClock must name "
            f"the rank and role); it {cost}"
        )
    return (
        f"in {pct} the whole group's kernel takes longer ({cause['above_us_median']:.0f} us above the typical "
        f"{cause['kernel_us_median']:.0f} us) with nobody late by itself: every rank waits inside the kernel for a peer's data; "
        f"PMU or DebugClock must name the rank and role; it {cost}"
    )


def listed_clause(cause: Mapping[str, Any]) -> str:
    """A listed cause in one clause: who, the evidence and its known lead (why it is not named: listed_text)."""
    members = cause["ranks"] or cause.get("late_ending_ranks") or []
    who = f"rank {cause['rank']}" if cause["rank"] is not None else f"ranks {', '.join(map(str, members))}"
    if cause.get("late_ending_ranks"):  # ends on corrected clocks: the lead is established, the culprit among them is not
        return f"{who} end late together ({cause['lead_us_median']:.1f} us after the others' last, in {100 * cause['fraction']:.0f}% of launches)"
    return f"{who} {cause['evidence']} ({cause['lead_us_median']:.1f} us lead over what the clocks can compare)"


def listed_text(causes: list[Mapping[str, Any]]) -> str:
    """Listed causes, each in its clause, and why they are not named: a reason that several share is said once."""
    reasons: dict[str, list[str]] = {}
    for cause in causes:
        reasons.setdefault(cause["not_named"], []).append(listed_clause(cause))
    return "; ".join(f"{' and '.join(clauses)}: {reason}" for reason, clauses in reasons.items())


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
        per_rank[str(rank)] = {"median": sync if sync is not None else kernel, "sync_barrier_median": sync, "kernel_entry_median": kernel}
    return {
        "per_rank": per_rank,
        "definition": "median per rank: the barrier kernel's duration (synchronize_start) when it is there, else the wait at the kernel's "
        "entry barrier (last clock-corrected start of the launch minus the rank's own); both listed",
    }


def binned_grid(values: np.ndarray, rows: np.ndarray, columns: np.ndarray, max_rows: int = 128, max_columns: int = 200) -> dict[str, Any]:
    """A ``[row, column]`` matrix for a heat map that stays readable at thousands of ranks: rows (ranks) and columns
    are grouped into at most ``max_rows`` / ``max_columns`` consecutive bins, each cell the max of its bin (NaN-aware)."""
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
        "aggregation": "max over the ranks and columns of each bin" if len(r_edges) - 1 < values.shape[0] or len(c_edges) - 1 < values.shape[1] else "none",
    }


def entry_wait_grid(g: LaunchGrid, correction: np.ndarray) -> dict[str, Any]:
    """rank x launch of the entry wait: the barrier kernel's duration, else the wait at the kernel's entry."""
    if g.has_barrier:
        wait, which = g.barrier_wait, "barrier kernel duration"
    else:
        wait, which = kernel_entry_waits(g, correction), "kernel entry wait (clock-corrected starts)"
    return {**binned_grid(wait.T, g.ranks, g.launches), "what": which, "unit": "us"}


def analyse(g: LaunchGrid, waits: Mapping[str, Any], missing_ranks: list[int], bootstrap: Mapping[str, int] | None = None) -> dict[str, Any]:
    """node_clock, coupling, entry_wait_us and straggler (the cost account) of the timeline's stats, and the entry-wait
    heat map."""
    clocks, correction = node_clocks(g)
    couple = coupling(g)
    strag = awaited(g, correction, couple, waits, bootstrap, clocks)
    if missing_ranks:
        strag["coverage_note"] = f"{name_ranks(missing_ranks).capitalize()} without data: the awaited rank may be among them"
    return {
        "node_clock": clocks,
        "coupling": couple,
        "entry_wait_us": entry_waits(g, correction),
        "straggler": strag,
        "entry_wait_heatmap": entry_wait_grid(g, correction),
    }
