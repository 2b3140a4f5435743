"""Ranks that do not wait for each other: a rank's duration is its own work, compared directly."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.naming import by_cost, is_named, worth_costing

from dispatchprof.analysis.waits.account import top_two
from dispatchprof.analysis.waits.costing import backgrounds, bootstrap_mean_ci
from dispatchprof.analysis.waits.table import LaunchGrid


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
    top, first, second = top_two(durations)
    lead = first - second
    tops = np.unique(top[lead > 0]).tolist()
    savings = [np.where(top == j, lead, 0.0) for j in tops]
    background = backgrounds(np.array([float(s.mean()) for s in savings]), world - 1)
    min_cost, own_min = float(waits["min_cost_us"]), float(waits["own_work_min_us"])
    causes = []
    for j, saving, bg in zip(tops, savings, background.tolist()):
        cost = float(saving.mean()) - bg
        if not worth_costing(cost, min_cost):
            continue
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
                "named": is_named(cost, ci[0], min_cost),
                "named_on": "period",
                "lead_us_median": float(np.median(lead[longest])),
                "spike_launches": 0,
                "not_coupled": True,
            }
        )
    causes.sort(key=by_cost)  # every one own work of one rank, the same cost in both scopes: by cost, then rank
    return causes
