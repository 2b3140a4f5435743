"""Every delay the data shows, as candidate causes: late arrivals, own work, late-ending ranks and nodes."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.account import Account, Maxima, carried, top_two
from dispatchprof.analysis.waits.candidate import Candidate
from dispatchprof.analysis.waits.in_kernel import transient
from dispatchprof.analysis.waits.late_ending import (
    MAX_LATE_SET,
    PERSISTENT_FRACTION,
    core_candidate,
    followers,
    late_members,
    late_sets,
    persistent_candidate,
    persistent_late_ranks,
)
from dispatchprof.analysis.waits.naming import stands_out


CLOCKS_FROM_ENDS = (
    "its cost compares arrivals across nodes on clocks fitted to the target's own ends (no barrier kernel): a node that ends later in "
    "every launch looks on time there, so the cost is uncertain by that skew; enable baseline.synchronize_start"
)


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
    last, first, second = top_two(acc.end)
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
        top, first_max, second_max = top_two(node_max)
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
