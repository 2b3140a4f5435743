"""A candidate cause: the delay it adds to each analysed launch (shifts of its ranks' arrivals and ends, a delay of the
whole group's ends), with the facts its explanation reads. Every kind is costed alike (costing.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np


class ChanceTest(TypedDict):
    """stands_out: how often the ranks late in most launches are late, against the most often late of the others."""

    fraction_late: float
    others_fraction_late: float
    z: float


class PacesEnd(TypedDict):
    """paces_end: how often the rank ends first, against chance under exchangeable ends, and how close after it the
    others end."""

    fraction_first: float  # the launches it ends first (ties at the nanosecond: nobody)
    chance: float  # 1 / n_ranks
    p_value: float  # the one-sided binomial tail of its count at chance
    lag_us_median: float  # where it ends first, the others' last end after its own (median)


class Facts(TypedDict, total=False):
    """What a candidate's explanation reads; spread into its cost-account entry in the order they were set (the stats
    JSON keeps that order). Kinds, never words: report/cause_text says them under the same keys."""

    late_us_median: float  # late arrival: its median host-gap excess where it struck
    cost_clocks: str  # late arrival without a pure barrier: why its estimate is uncertain ("target_ends": clocks fitted
    # to the target's ends)
    cost_bound_us: list[float]  # ... and the bound that holds whatever the clocks: [0, mean delay per launch]
    ahead_us_median: float  # late arrival: where it arrived last, its median lead over the next arrival
    ahead_launches: int
    lead_us_median: (
        float  # own work and late-ending ranks or nodes: the median lead over the next end (or the others' last)
    )
    spike_launches: int  # own work: launches where it is a spike of the rank's own time in the kernel
    late_ending_ranks: list[int]
    persistent: bool  # late-ending ranks in most launches
    with_ranks: list[int]  # the core of a late-ending set: the ranks late with it in at least 10% of its launches
    followers_of: int  # late-ending ranks that end as one: the rank they follow
    ending_with: list[
        int
    ]  # late-ending ranks of most launches: the ranks whose end moves with theirs, brought down too
    likely_pacer: list[int]  # late-ending ranks of most launches that are whole nodes plus these off-node ranks
    waiting_nodes: list[int]  # ... and these whole nodes, which likely wait for the likely pacer's data
    stands_out: ChanceTest
    not_named: str  # listed, never named: why, as a kind ("chance", "no_pure_barrier", "kernel_structure",
    # "ranks_missing")
    missing_ranks: list[int]  # ranks_missing: the ranks of the world without data (awaited.listed_on_partial_coverage)
    kernel_us_median: float  # the group waiting inside the kernel: the typical launch's kernel time
    above_us_median: float  # ... and the median excess of the launches it struck
    not_coupled: bool  # ranks that do not wait for each other: own work compared by durations
    paces_end: PacesEnd  # own work that paces the group's end: the others end just after it (paces_end.py)
    cost_not_established: str  # named, but the timeline cannot cost it ("peers_hidden": its peers' own work is hidden
    # behind their wait for its data); cost_us_per_launch is then the replay's saving of what it sees (0), no estimate


@dataclass(kw_only=True)
class Candidate:
    evidence: str
    rank: int | None
    node: int | None
    ranks: list[int]
    cols: np.ndarray  # the grid's columns of those ranks
    arrival_shift: np.ndarray  # [row, len(cols)] lateness removed at the barrier (launch-period scope)
    end_shift: np.ndarray  # [row, len(cols)] end delay removed in the timed kernel scope
    struck: np.ndarray  # [row] bool
    facts: Facts = field(default_factory=lambda: Facts())
    # [row] a delay every rank's end waits for (data every rank receives: a spike of one rank's own work, the group
    # waiting inside the kernel): removing it moves the whole group, in both scopes
    group_delay: np.ndarray | None = None
    # listed, never named (late-ending ranks; own work that the clocks cannot establish): facts["not_named"] says why
    group: bool = False
