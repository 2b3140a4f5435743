"""Every delay the data shows, as candidate causes: late arrivals by the host (a rank, or a node's ranks together), ends
late by a rank's own work, ends late by a set of ranks or by a node's ranks together."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.account import Account
from dispatchprof.analysis.waits.arrivals import late_arrivals
from dispatchprof.analysis.waits.candidate import Candidate
from dispatchprof.analysis.waits.end_order import end_order
from dispatchprof.analysis.waits.late_ending import late_ending_nodes, listed_late_sets, recurring_late_ranks
from dispatchprof.analysis.waits.own_work import own_work


def candidates(acc: Account, ranks: np.ndarray, nodes: np.ndarray, waits: Mapping[str, Any]) -> list[Candidate]:
    """Every delay the data shows, as the shifts that would remove it, in this order: late arrivals (ranks, then
    nodes), own work, the ranks late in most launches, the other late sets (listed), late-ending nodes."""
    n, world = acc.arrival.shape
    if not n or world < 2:
        return []
    own_min = float(waits["own_work_min_us"])
    # ends compare across nodes on a pure barrier's clocks, or trivially on one node
    across = acc.ends_across_nodes or len(np.unique(nodes)) == 1
    ends = end_order(acc, own_min, float(waits["alpha"]), nodes)
    out = late_arrivals(acc, ranks, nodes, float(waits["late_min_us"])) + own_work(
        acc, ranks, nodes, ends, own_min, across, float(waits["alpha"])
    )
    recurring = recurring_late_ranks(acc, ranks, nodes, ends, own_min)
    if recurring is not None:
        out.append(recurring)
    return out + listed_late_sets(acc, ranks, nodes, ends) + late_ending_nodes(acc, ranks, nodes)
