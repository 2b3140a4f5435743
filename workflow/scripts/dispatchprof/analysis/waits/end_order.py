"""How the ends of each analysed launch fall, as the own-work and late-ending causes read them: the rank that ends
last and its lead, the ranks that end late apart from the others (a late set), the set late in most launches and the
ranks that end as one with it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dispatchprof.analysis.waits.account import Account, top_two
from dispatchprof.analysis.waits.candidate import Facts
from dispatchprof.analysis.waits.naming import stands_out


def node_shaped(late: np.ndarray, nodes: np.ndarray) -> bool:
    """Whether the late columns ``late`` are every rank of one node or more plus a few ranks of other nodes (at most
    half of each other node's ranks, one at least in all): a node's ranks share links, so a whole node ending late with
    an off-node rank whose node mates end early waits for that rank's data (the rank is slow itself). Only that shape
    says who is late when the late side is the majority; ranks that end first by the kernel's own structure (3x4:
    ranks 0, 3 and 6, each first in a quarter of the launches) leave no whole node behind them without taking more than
    half of their own node's ranks."""
    ids, size = np.unique(nodes, return_counts=True)
    late_count = np.array([np.count_nonzero(nodes[late] == k) for k in ids])
    whole = late_count == size
    return bool(whole.any() and (~whole).any() and late_count[~whole].any() and (2 * late_count <= size)[~whole].all())


def late_sets(
    acc: Account, own_min: float, nodes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row the ranks that end late apart from the others: the largest gap between consecutive ends in the later
    half, when it exceeds own_min and 3 times the median gap (the ends' own spacing). Returns per row the size of that
    late set (0: none), its gap (its first end's lead over the others' last) and the end order (ascending). Given the
    columns' ``nodes``, a row's largest gap in the earlier half splits off a late majority where that majority is
    node_shaped (a whole node waiting, to the end, for an off-node rank that is slow itself)."""
    n, world = acc.end.shape
    if not n or world < 2:
        return np.zeros(n, int), np.zeros(n), np.zeros((n, world), int)
    order = np.argsort(acc.end, axis=1, kind="stable")
    gaps = np.diff(np.take_along_axis(acc.end, order, axis=1), axis=1)  # [row, world - 1]
    first = (world - 1) // 2  # a late set is at most half of the ranks, unless node_shaped
    split = first + np.argmax(gaps[:, first:], axis=1)
    if nodes is not None and first:
        widest = np.argmax(gaps, axis=1)
        for i in np.flatnonzero((widest < first) & (gaps[np.arange(n), widest] > gaps[np.arange(n), split])):
            if node_shaped(order[i, widest[i] + 1 :], nodes):
                split[i] = widest[i]
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


def persistent_group(end: np.ndarray, persistent: np.ndarray, own_min: float) -> np.ndarray:
    """The persistent columns and the followers of each (followers): ranks whose end moves with a persistent rank's,
    launch after launch, are delayed with it, wherever they fall in the end order. A slow sender serves its receivers
    in turn, each waiting for its data a step later than the one before (2x8 with one URMA core per rank: seven ranks
    54 to 593 us late in steps of ~107 us): the late sets hold the top steps, the lower steps end before them at a
    constant lag, and left among the others they made the others' last end a victim's (costed 44% under). A rank
    late by its own slowdown is no follower (its lag spreads with both jitters): it stays among the others."""
    found = [followers(end, int(core), own_min) for core in persistent]
    return np.union1d(persistent, np.concatenate(found)).astype(int) if found else persistent


@dataclass
class EndOrder:
    """The ends of the analysed launches, read once for every cause that needs them."""

    last: np.ndarray  # [row] the column that ends last
    first: np.ndarray  # [row] its end
    second: np.ndarray  # [row] the next end
    size: np.ndarray  # [row] the size of the row's late set (late_sets; 0: none)
    gap: np.ndarray  # [row] the late set's lead over the others' last end
    order: np.ndarray  # [row, rank] the columns in end order (ascending)
    member: np.ndarray  # [row, rank] bool: in the row's late set
    persistent: np.ndarray  # the columns in the late set of most launches (only where ends compare across nodes)
    group: np.ndarray  # the persistent columns and, for one persistent rank, its followers
    alone: bool  # one persistent rank whose group ends last in most launches where it is late
    apart: Facts  # stands_out's chance test of the persistent set (empty without one)

    @property
    def established(self) -> bool:
        """The persistent set is late more often than the others beyond chance: it may be named."""
        return "not_named" not in self.apart


def end_order(acc: Account, own_min: float, alpha: float, nodes: np.ndarray | None = None) -> EndOrder:
    """Who ends last and by how much, the late sets, and the set late in most launches with its followers.

    One persistent rank and its followers (ranks whose end moves with its own launch after launch: a receiver that
    waits for its data to the end, or the rank it waits for) end as one. When that group ends last in most launches
    where the rank is late (nobody else ends after it waiting for its data): alone, the rank's own work; with
    followers, late-ending ranks brought down together to the others' last (which of them keeps the other waiting,
    the timeline cannot tell: the lag is the same either way). A lead over a follower is no lead: in 3x4 a x1.15
    rank's lead over the very next end, a follower 2.4 us behind it, costed it at half its counterfactual truth. One
    that is mostly late with others ending after it at varying lags (its receivers) is the core of a late-ending set
    (core_candidate). A majority of launches can be the kernel's own structure over a short run: the set is named only
    where it is late more often than the others beyond chance (stands_out); else listed, with why."""
    last, first, second = top_two(acc.end)
    size, gap, order = late_sets(acc, own_min, nodes)
    member = late_members(size, order)
    persistent = persistent_late_ranks(member) if acc.ends_across_nodes else np.zeros(0, int)
    group = persistent_group(acc.end, persistent, own_min)
    alone = len(persistent) == 1 and float(np.isin(last[member[:, persistent[0]]], group).mean()) > PERSISTENT_FRACTION
    apart: Facts = stands_out(member, persistent, group, alpha) if len(persistent) else {}
    return EndOrder(last, first, second, size, gap, order, member, persistent, group, alone, apart)
