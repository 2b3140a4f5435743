"""Late-ending ranks and nodes as candidate causes: the set late in most launches (with its followers, or around its
core), the other late sets (listed, never named) and a node whose ranks all end after every other rank."""

from __future__ import annotations


import numpy as np

from dispatchprof.analysis.waits.account import Account, carried, top_two
from dispatchprof.analysis.waits.candidate import Candidate, Facts
from dispatchprof.analysis.waits.end_order import EndOrder, node_shaped


MAX_LATE_SET = 16  # late-ending ranks beyond this many are not listed one set at a time (thousands of ranks)


def core_candidate(
    acc: Account,
    ranks: np.ndarray,
    core: np.ndarray,
    member: np.ndarray,
    own_min: float,
    ends: tuple[np.ndarray, np.ndarray, np.ndarray],
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
    cand.facts["with_ranks"] = [
        int(ranks[c]) for c, f in sorted(zip(cols, together), key=lambda x: -x[1]) if c != j and f >= 0.1
    ]
    return cand


def late_ending(acc: Account, named: list[int], cols: np.ndarray, end_shift: np.ndarray, own_min: float) -> Candidate:
    """A named late-ending set (``named``: its ranks) from the end delays that bring its ``cols`` down to the others'
    last: struck where that lead exceeds own_min, carried into the next arrival in the launch period."""
    lead = end_shift.max(axis=1)
    struck = lead > own_min
    end_shift = np.where(struck[:, None], end_shift, 0.0)
    facts: Facts = {
        "lead_us_median": float(np.median(lead[struck])) if struck.any() else 0.0,
        "late_ending_ranks": named,
        "persistent": True,
    }
    return Candidate(
        evidence="in_kernel",
        rank=None,
        node=None,
        ranks=named,
        cols=cols,
        arrival_shift=carried(end_shift, acc.follows),
        end_shift=end_shift,
        struck=struck,
        facts=facts,
    )


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


def whole_nodes(nodes: np.ndarray) -> set[tuple[int, ...]]:
    """Each node's columns: a late set that is a whole node is the late-ending node's (late_ending_nodes)."""
    return {tuple(np.flatnonzero(nodes == n).tolist()) for n in np.unique(nodes)}


def node_pacer(ranks: np.ndarray, nodes: np.ndarray, late: np.ndarray) -> Facts:
    """A node_shaped late set's whole nodes (waiting) and its off-node ranks (their node mates end early): the whole
    nodes likely wait for those ranks' data, which are then slow themselves."""
    whole = [int(k) for k in np.unique(nodes) if np.isin(np.flatnonzero(nodes == k), late).all()]
    off = late[~np.isin(nodes[late], whole)]
    return {"likely_pacer": ranks[off].tolist(), "waiting_nodes": whole}


def recurring_late_ranks(
    acc: Account, ranks: np.ndarray, nodes: np.ndarray, ends: EndOrder, own_min: float
) -> Candidate | None:
    """The ranks in the late set of most launches, when they are not a whole node: several ranks (persistent_candidate),
    one rank with the ranks that end as one with it (the same, their core said), or one rank mostly late with others
    ending after it (core_candidate). Listed, not named, where the chance test does not set them apart."""
    persistent, group = ends.persistent, ends.group
    # followers may take every rank (ends tied to the nanosecond): nobody then ends before the set to compare with
    others = len(group) < acc.end.shape[1]
    if others and len(persistent) >= 2 and tuple(persistent.tolist()) not in whole_nodes(nodes):
        # brought down with the ranks whose end moves with theirs (a lead over a follower is no lead)
        recurring = persistent_candidate(acc, ranks, group, own_min)
        if len(group) > len(persistent):
            recurring.facts["ending_with"] = ranks[np.setdiff1d(group, persistent)].tolist()
        if node_shaped(persistent, nodes):
            recurring.facts.update(node_pacer(ranks, nodes, persistent))
    elif others and ends.alone and len(group) > 1:
        recurring = persistent_candidate(acc, ranks, group, own_min)
        recurring.facts["followers_of"] = int(ranks[persistent[0]])
    elif len(persistent) == 1 and not ends.alone:
        recurring = core_candidate(acc, ranks, persistent, ends.member, own_min, (ends.last, ends.first, ends.second))
    else:
        return None
    recurring.group = not ends.established
    recurring.facts.update(ends.apart)
    return recurring


def listed_late_sets(acc: Account, ranks: np.ndarray, nodes: np.ndarray, ends: EndOrder) -> list[Candidate]:
    """Ranks that end late together, apart from the others, in two launches or more, and are neither a whole node nor
    the set of most launches: late-ending ranks, with no claim about why (one of them may keep the others waiting for
    its data). Their lead over the others' last end. Listed, never named."""
    n, world = acc.end.shape
    sets: dict[tuple[int, ...], list[int]] = {}
    for i in np.flatnonzero((ends.size >= 2) & (ends.size <= MAX_LATE_SET) & acc.ends_across_nodes).tolist():
        sets.setdefault(tuple(sorted(ends.order[i, world - ends.size[i] :].tolist())), []).append(i)
    known = whole_nodes(nodes) | {tuple(ends.persistent.tolist()), tuple(ends.group.tolist())}
    out = []
    for members, rows in sets.items():
        if members in known or len(rows) < 2:
            continue
        cols = np.array(members)
        struck = np.zeros(n, bool)
        struck[rows] = True
        end_shift = np.where(struck, ends.gap, 0.0)[:, None] * np.ones((1, len(cols)))
        facts: Facts = {
            "lead_us_median": float(np.median(ends.gap[struck])),
            "late_ending_ranks": ranks[cols].tolist(),
            "not_named": "kernel_structure",  # a slow rank among them, or the kernel's own structure
        }
        out.append(
            Candidate(
                evidence="in_kernel",
                rank=None,
                node=None,
                ranks=[],
                cols=cols,
                arrival_shift=carried(end_shift, acc.follows),
                end_shift=end_shift,
                struck=struck,
                facts=facts,
                group=True,
            )
        )
    return out


def late_ending_nodes(acc: Account, ranks: np.ndarray, nodes: np.ndarray) -> list[Candidate]:
    """A node whose ranks all end after every other rank: its lead over the others' last end, per rank. The link into
    it, or its own work: the timeline cannot tell. Needs ends comparable across nodes."""
    ids = np.unique(nodes)
    if not (acc.ends_across_nodes and len(ids) > 1):
        return []
    node_max = np.column_stack([acc.end[:, nodes == k].max(axis=1) for k in ids])
    node_min = np.column_stack([acc.end[:, nodes == k].min(axis=1) for k in ids])
    top, first_max, second_max = top_two(node_max)
    out = []
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
        out.append(
            Candidate(
                evidence="late_ending_node",
                rank=None,
                node=int(node),
                ranks=ranks[cols].tolist(),
                cols=cols,
                arrival_shift=carried(end_shift, acc.follows),
                end_shift=end_shift,
                struck=together,
                facts={"lead_us_median": float(np.median(node_lead[together]))},
            )
        )
    return out
