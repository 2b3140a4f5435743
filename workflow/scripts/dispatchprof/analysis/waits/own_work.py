"""Own work: the rank that ends last by itself, by its lead over the next end, and the spikes of its own time in the
kernel. In the timed scope the lead is the saving; in the launch period it is carried into the next barrier (its host
returns that much later), counted there once. A launch whose kernel takes far longer than the typical one (a spike),
ended last by a rank whose own time in the kernel is as far above its own typical time, is that rank's own work as a
whole: the peers it kept waiting for its data end late too, so its lead over them says too little. The whole group then
ends later, and arrives later at the next barrier: the same saving in both scopes."""

from __future__ import annotations

import numpy as np

from dispatchprof.analysis.waits.account import Account, carried
from dispatchprof.analysis.waits.candidate import Candidate, Facts
from dispatchprof.analysis.waits.end_order import EndOrder
from dispatchprof.analysis.waits.in_kernel import own_spikes, transient


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


def own_leads(acc: Account, nodes: np.ndarray, ends: EndOrder, own_min: float, across: bool) -> np.ndarray:
    """Per row the last rank's lead by itself: where its end stands apart (a late set of one). A staircase of ends (a
    slow sender serves its receivers one after another, and the last served ends last) is no rank's own work: the last
    of it is a late-ending rank."""
    lead = np.where(ends.size == 1, ends.gap, 0.0)
    if ends.alone and len(ends.group) == 1 and ends.established:
        # where it ends last, its lead over the next end is its own delay even when the gap to the next is not the
        # row's largest (its peers' staircase behind it varies)
        (j,) = ends.persistent
        lead = np.where((ends.last == j) & (ends.first - ends.second > own_min), ends.first - ends.second, lead)
    if not across:
        # without a pure barrier the clocks come from the ends themselves: a lead over another node's end is not
        # established, a lead over the same node's ranks is (one clock). The smaller of the two is what is known, and
        # the cause is listed, not named: "ends last by itself" compares ends across nodes.
        lead = np.minimum(lead, lead_within_node(acc.end, ends.last, nodes))
    return lead


def own_work(
    acc: Account, ranks: np.ndarray, nodes: np.ndarray, ends: EndOrder, own_min: float, across: bool, alpha: float
) -> list[Candidate]:
    """Each rank that ends last by itself (its lead) or in a spike of its own time in the kernel (own_spikes)."""
    lead = own_leads(acc, nodes, ends, own_min, across)
    spike, above = transient(acc, own_min)
    owned = own_spikes(acc, spike, alpha)
    out = []
    for j in np.unique(ends.last[(lead > 0) | spike]).tolist():
        mine = (ends.last == j) & ((lead > 0) | spike)
        own_spike = mine & owned
        spike_cost = np.where(own_spike, above, 0.0)  # its own time above its typical is at least that
        out += own_work_of(acc, j, int(ranks[j]), lead, mine, own_spike, spike_cost, own_min, across)
    return out


def own_work_of(
    acc: Account,
    j: int,
    rank: int,
    lead: np.ndarray,
    mine: np.ndarray,
    own_spike: np.ndarray,
    spike_cost: np.ndarray,
    own_min: float,
    across: bool,
) -> list[Candidate]:
    """Column ``j``'s own work over the rows it ends last (``mine``): its lead where that is no spike of its own,
    ``spike_cost`` where it is. Without a pure barrier a spike is the rank's own time in the kernel above its own
    typical time, while the group's kernel time is above the typical launch's (each on one clock): named as usual. The
    lead over the next end compares ends across nodes there: listed, not named."""
    end_shift = np.where(mine & ~own_spike, lead, 0.0)[:, None]
    if not (end_shift.any() or own_spike.any()):
        return []
    clear = mine & ((lead > own_min) | own_spike)
    facts: Facts = {
        "lead_us_median": float(np.median(np.maximum(lead, spike_cost)[clear] if clear.any() else lead[mine])),
        "spike_launches": int(own_spike.sum()),
    }
    cols = np.array([j])

    def candidate(
        arrival_shift: np.ndarray, end_shift: np.ndarray, struck: np.ndarray, facts: Facts, extra: np.ndarray | None
    ) -> Candidate:
        return Candidate(
            evidence="own_work",
            rank=rank,
            node=None,
            ranks=[rank],
            cols=cols,
            arrival_shift=arrival_shift,
            end_shift=end_shift,
            struck=struck,
            facts=facts,
            group_delay=extra,
            group="not_named" in facts,
        )

    if across:
        return [candidate(carried(end_shift, acc.follows), end_shift, clear, facts, spike_cost)]
    out = []
    if own_spike.any():
        zero = np.zeros_like(end_shift)
        out.append(candidate(zero, zero, own_spike, facts.copy(), spike_cost))
    if end_shift.any():
        out.append(
            candidate(
                carried(end_shift, acc.follows),
                end_shift,
                clear & ~own_spike,
                {**facts, "not_named": "no_pure_barrier"},
                None,
            )
        )
    return out
