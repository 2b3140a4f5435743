"""Ranks that do not wait for each other: a rank's duration is its own work, compared directly."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.account import top_two
from dispatchprof.analysis.waits.candidate import Candidate
from dispatchprof.analysis.waits.costing import Replay, replayed
from dispatchprof.analysis.waits.table import LaunchGrid


def longest_own_work(g: LaunchGrid, waits: Mapping[str, Any], boot: Mapping[str, int]) -> list[dict[str, Any]]:
    """Ranks that do not wait for each other: a rank's duration is its own work, so durations compare directly, on
    each rank's own clock (no clock correction: node clocks hundreds of ms apart change nothing). Per launch the
    longest rank's delay is its lead over the next-longest: removing it gives that back to the launch's longest
    duration (the per-iteration max). Costed as every kind is (costing.replayed), on the durations' replay: the same
    saving in both scopes, above the median of the same over the other ranks, and nobody waits for it."""
    complete = g.complete(g.duration)
    durations = g.duration[complete]
    n, world = durations.shape
    if not n or world < 2:
        return []
    top, first, second = top_two(durations)
    lead = first - second
    own_min = float(waits["own_work_min_us"])
    cands = []
    for j in np.unique(top[lead > 0]).tolist():
        shift = np.where(top == j, lead, 0.0)[:, None]
        longest = (top == j) & (lead > 0)
        rank = int(g.ranks[j])
        cands.append(
            Candidate(
                evidence="own_work",
                rank=rank,
                node=None,
                ranks=[rank],
                cols=np.array([j]),
                arrival_shift=shift,
                end_shift=shift,
                struck=(top == j) & (lead > own_min),
                facts={"lead_us_median": float(np.median(lead[longest])), "spike_launches": 0, "not_coupled": True},
            )
        )
    return replayed(Replay.of_durations(durations, g.nodes, g.launches[complete]), cands, waits, boot)
