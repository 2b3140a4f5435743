"""Naming: which causes are named rather than listed (a cost above ``min_cost_us`` with a CI above zero; the chance
test for ranks late in most launches), in which order (by cost, never by how often they strike), and the named causes
a named node explains."""

from __future__ import annotations

import math
import statistics
from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.candidate import ChanceTest, Facts


def stands_out(member: np.ndarray, persistent: np.ndarray, group: np.ndarray, alpha: float) -> Facts:
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
    fact: ChanceTest = {"fraction_late": mine / n, "others_fraction_late": theirs / n, "z": z}
    if z > statistics.NormalDist().inv_cdf(1 - alpha):
        return {"stands_out": fact}
    return {"stands_out": fact, "not_named": "chance"}  # in words: report/cause_text.not_apart_text


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
        node = next(
            (
                n
                for n in nodes
                if c["node"] is None and c["rank"] in n["ranks"] and n["evidence"] == within.get(c["evidence"])
            ),
            None,
        )
        if node is not None and node["cost_us_per_launch"] >= c["cost_us_per_launch"]:
            continue
        kept.append(c)
    return kept


def is_named(cost: float, ci_low: float, min_cost: float) -> bool:
    """A cause is named when it costs the group more than ``min_cost`` us per launch (timeline.waits.min_cost_us) with
    the lower end of its CI above zero; else it is listed."""
    return bool(cost > min_cost and ci_low > 0)


def worth_costing(cost: float, min_cost: float) -> bool:
    """A cost below 5% of ``min_cost`` is one nobody would read: not worth its bootstrap."""
    return not cost < 0.05 * min_cost


def by_cost(cause: Mapping[str, Any]) -> tuple[float, float, str, int]:
    """The sort key of the cost account: launch-period cost first, then timed, descending; ties by evidence and rank
    (a node's or a group's rank is -1)."""
    return (
        -cause["cost_us_per_launch"],
        -cause["cost_timed_us_per_launch"],
        cause["evidence"],
        cause["rank"] if cause["rank"] is not None else -1,
    )
