"""Late-ending ranks and nodes: the ranks that end late apart from the others per launch, the set late in most
launches, its followers and core, and a node whose ranks all end last."""

from __future__ import annotations


import numpy as np

from dispatchprof.analysis.waits.account import Account, carried
from dispatchprof.analysis.waits.candidate import Candidate


MAX_LATE_SET = 16  # late-ending ranks beyond this many are not listed one set at a time (thousands of ranks)


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
    name the rank and role. ``ends``: top_two of the ends (per row the last rank, its end and the next end)."""
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
    cand = late_ending(acc, [int(ranks[j])], cols, shift, own_min)
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


def late_ending(acc: Account, named: list[int], cols: np.ndarray, end_shift: np.ndarray, own_min: float) -> Candidate:
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
    return late_ending(acc, ranks[cols].tolist(), cols, np.maximum(0.0, acc.end[:, cols] - others_last), own_min)
