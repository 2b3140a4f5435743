"""The cost account assembled: every cause with its cost, ranked by cost, the top one as the straggler, and what the
timeline's stats hold of it (analyse). Facts only: report/cause_text puts the causes in words (their explanations)."""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.analysis.waits.account import Account, account
from dispatchprof.analysis.waits.candidates import candidates
from dispatchprof.analysis.waits.clocks import node_clocks, release_skew
from dispatchprof.analysis.waits.costing import PER_LAUNCH, PerLaunch, costed, duration_excess, excess
from dispatchprof.analysis.waits.coupling import coupling
from dispatchprof.analysis.waits.in_kernel import in_kernel, is_group_wait
from dispatchprof.analysis.waits.naming import by_cost, covered
from dispatchprof.analysis.waits.paces_end import paced_causes
from dispatchprof.analysis.waits.picture import launch_picture
from dispatchprof.analysis.waits.table import LaunchGrid, entry_wait_grid, entry_waits, kernel_entry_waits
from dispatchprof.analysis.waits.uncoupled import longest_own_work


EXCESS_DEFINITION = (
    "per launch, the last arrival's lead over the first at the barrier (launch period; carried ends included) or the "
    "last end's lead over the first (timed kernel scope), plus the kernel "
    "time above the typical launch's; averaged over the analysed launches"
)


EXCESS_NOT_COUPLED = (
    "ranks that do not wait for each other: per launch, the longest duration's lead over the median rank's (each "
    "duration is own work, on the rank's own clock), in both scopes; averaged over the launches every rank has"
)


def arrived_last(acc: Account, ranks: np.ndarray) -> dict[str, float]:
    """Per rank: the fraction of launches it arrived last at the barrier (frequency, not cost)."""
    if not acc.rows:
        return {}
    last = np.argmax(acc.arrival, axis=1)
    counts = np.bincount(last, minlength=len(ranks)) / acc.rows
    return {str(int(r)): float(f) for r, f in zip(ranks, counts) if f > 0}


def rank_offsets(acc: Account, ranks: np.ndarray) -> dict[str, Any]:
    """Per rank the median arrival at the barrier and the median end, each after the launch's first (µs; the
    corrected clocks, or the barrier's durations for arrivals): who comes late, and who ends late."""
    if not acc.rows:
        return {"ranks": [], "arrival_us_median": [], "end_us_median": [], "definition": "no complete launch"}
    arrival = np.median(acc.arrival - acc.arrival.min(axis=1, keepdims=True), axis=0)
    end = np.median(acc.end - acc.end.min(axis=1, keepdims=True), axis=0)
    return {
        "ranks": [int(r) for r in ranks],
        "arrival_us_median": [round(float(v), 3) for v in arrival],
        "end_us_median": [round(float(v), 3) for v in end],
        "definition": (
            "median over launches of each rank's arrival after the launch's first "
            f"({acc.arrival_how}) and of its end after the first end ({acc.end_how})"
        ),
    }


def waiting_ranks(g: LaunchGrid, correction: np.ndarray, blamed: set[int]) -> dict[str, Any]:
    """The ranks that wait: a median barrier (or entry) wait in the upper half of the ranks' and above the lowest by
    more than half the spread between them; never a cause."""
    wait = g.barrier_wait if g.has_barrier else kernel_entry_waits(g, correction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per_rank = np.nanmedian(wait, axis=0)
    ok = np.isfinite(per_rank)
    if ok.sum() < 2:
        return {"ranks": [], "definition": "no waits to compare"}
    lo, hi = np.nanmin(per_rank), np.nanmax(per_rank)
    long = [int(r) for r, w in zip(g.ranks, per_rank) if np.isfinite(w) and w > lo + 0.5 * (hi - lo)]
    return {
        "ranks": [r for r in long if r not in blamed],
        "causes_left_out": [r for r in long if r in blamed],  # they wait as long, but are causes, named or listed
        "compared": int(ok.sum() - len(blamed & set(g.ranks[ok].tolist()))),  # ranks with waits that are no cause
        "definition": (
            "ranks whose median wait at the barrier (its duration; else the kernel's entry wait) is above the "
            "lowest rank's by more than half the spread over ranks; a cause, named or listed, is never among them"
        ),
    }


def awaited(
    g: LaunchGrid,
    correction: np.ndarray,
    couple: Mapping[str, Any],
    waits: Mapping[str, Any],
    boot: Mapping[str, int] | None = None,
    clocks: Mapping[str, Any] | None = None,
    missing_ranks: Sequence[int] = (),
    struck_by: list[PerLaunch | None] | None = None,
) -> dict[str, Any]:
    """The cost account: every cause with its cost, ranked by cost, and the top one as the straggler:
    ``{rank, ranks, node, evidence, fraction, cost..., causes,
    unnamed, ...}``; the explanations are report/cause_text's. ``missing_ranks``: ranks of the world without data
    (listed_on_partial_coverage). ``struck_by``, where given, is filled with each named cause's launches (PerLaunch,
    in the order of ``causes``; None for a cause the replay did not cost): the merged trace's causes track."""
    boot = {"resamples": 2000, "seed": 0, **(boot or {})}
    acc = account(g, correction, release_skew(clocks) if clocks else 0.0)
    # Ranks shown to run independently wait for nobody: no group time to account. Unknown coupling (say, no barrier
    # kernel across nodes) is accounted, and what the clocks cannot establish is listed, not named.
    coupled = couple["state"] != "not_coupled"
    where = "barrier_kernel" if g.has_barrier else "entry_barrier"  # where a late arrival is late (a kind)
    # every kind of cause is a delay in the launches' graph, costed by one replay (costing.py); kinds differ only in
    # how their delay is found
    if coupled:
        inside = in_kernel(acc, float(waits["own_work_min_us"]), float(waits["alpha"]))
        costs = costed(
            acc, candidates(acc, g.ranks, g.nodes, waits) + ([inside] if inside else []), g.nodes, waits, boot
        )
        if couple["state"] == "coupled":  # a rank that ends first paces the others only where they wait for it
            costs = sorted(costs + paced_causes(acc, g.ranks, g.nodes, waits, costs), key=by_cost)
        group_wait = next((c for c in costs if is_group_wait(c)), None)
        group = excess(acc, group_wait)
    else:  # durations are own work and compare directly (docs/architecture.md): the longest's lead is what it costs
        costs, group_wait, group = longest_own_work(g, waits, boot), None, duration_excess(g)
    listed_on_partial_coverage(costs, missing_ranks)
    named = covered(costs)
    add_shares(costs, group)
    for c in named:
        if c["evidence"] == "late_arrival":
            c["where"] = where
    unnamed = [c for c in costs if not c["named"] and c is not group_wait][:10]  # the group's wait names nobody to list
    # a cause is never among the waiting ranks, named or only listed (waiting is not blame, and neither is the reverse)
    blamed = {r for c in named + unnamed for r in c["ranks"]}
    if struck_by is not None:
        struck_by.extend(with_ranks(c.get(PER_LAUNCH), g.ranks) for c in named)
    for c in costs:  # numpy arrays: never in the account as written
        c.pop(PER_LAUNCH, None)
    return {
        **answer_of(named),
        "causes": named,
        "unnamed": unnamed,
        "excess": {**group, "definition": EXCESS_DEFINITION if coupled else EXCESS_NOT_COUPLED},
        "arrived_last_fraction": arrived_last(acc, g.ranks),
        "rank_offsets": rank_offsets(acc, g.ranks),
        "waiting": waiting_ranks(g, correction, blamed),
        "arrivals": acc.arrival_how,
        "ends": acc.end_how,
        "notes": notes_of(coupled, g.has_barrier),
        "launches_compared": acc.rows,
    }


def listed_on_partial_coverage(costs: list[dict[str, Any]], missing_ranks: Sequence[int]) -> None:
    """Every cause that would be named, listed instead where ranks of the world have no data (changed in place). Who
    ends last, by how much, and who arrives last are order statistics over every rank: a missing rank's end may fall
    anywhere in each launch, so a rank present that ends last by itself may end last together with it, or not last at
    all (2x8 without a fault: ranks 8 and 9 end as a pair, listed; without rank 9 rank 8 ended "by itself" in 7 of
    200 launches and took both spikes of the pair: its own work named at 6.1 us per launch). Costs stay those of the
    ranks present; the data of every rank decide the naming."""
    if not missing_ranks:
        return
    for c in costs:
        if c["named"]:
            c.update(named=False, not_named="ranks_missing", missing_ranks=sorted(int(r) for r in missing_ranks))


def add_shares(causes: list[dict[str, Any]], group: Mapping[str, float | None]) -> None:
    """Each cause's share of the group's excess in both scopes (None where there is no excess)."""
    for c in causes:
        for key, scope, value in (
            ("cost_share", "period_us_per_launch", c["cost_us_per_launch"]),
            ("cost_timed_share", "timed_us_per_launch", c["cost_timed_us_per_launch"]),
        ):
            c[key] = value / group[scope] if group[scope] else None
        if c.get("cost_bound_us"):
            # the share and the waiting caused compare the same arrivals across nodes as the estimate: not established
            c["cost_share"] = c["wait_caused_us_per_launch"] = None
        if c.get("cost_not_established"):  # no cost, no share of anything, no waiting it is known to cause
            c["cost_share"] = c["cost_timed_share"] = c["wait_caused_us_per_launch"] = None


def answer_of(named: list[dict[str, Any]]) -> dict[str, Any]:
    """The straggler's keys: the top named cause's, or nobody's."""
    if named:
        main = named[0]
        return {
            k: main.get(k) for k in (*STRAGGLER_KEYS, "cost_timed_ci_us", "cost_timed_share", "launches", "named_on")
        }
    return {
        "rank": None,
        "ranks": [],
        "node": None,
        "evidence": "none",
        "fraction": None,
        **dict.fromkeys(STRAGGLER_KEYS[5:]),
    }


def notes_of(coupled: bool, has_barrier: bool) -> list[str]:
    """What the account could not compare, said once beside it."""
    notes = []
    if not coupled:
        notes.append(
            "not coupled: the ranks do not wait for each other, so durations are own work and are compared directly"
        )
    if not has_barrier:
        notes.append(
            "cross-node comparisons of ends: not established (enable baseline.synchronize_start for a pure barrier)"
        )
    return notes


STRAGGLER_KEYS = (
    "rank",
    "ranks",
    "node",
    "evidence",
    "fraction",
    "cost_us_per_launch",
    "cost_ci_us",
    "cost_timed_us_per_launch",
    "wait_caused_us_per_launch",
    "cost_share",
    "cost_bound_us",
    "cost_not_established",
)


CAUSE_KEYS = (
    "evidence",
    "rank",
    "node",
    "ranks",
    "fraction",
    "cost_us_per_launch",
    "cost_ci_us",
    "wait_caused_us_per_launch",
    "cost_timed_us_per_launch",
    "cost_share",
    "cost_bound_us",
    "cost_not_established",  # named without a cost: why, in words (report/cause_text)
    "likely_pacer",  # late-ending ranks that are whole nodes plus these off-node ranks (end_order.node_shaped)
    "waiting_nodes",  # ... and these whole nodes
    "explanation",  # report/cause_text's
)


def with_ranks(per: PerLaunch | None, ranks: np.ndarray) -> PerLaunch | None:
    """A cause's launches with its shifts' columns named as ranks (the trace knows ranks, not the grid's columns)."""
    if per is None or per.cols is None:
        return per
    return replace(per, ranks=np.asarray(ranks)[per.cols])


def analyse(
    g: LaunchGrid, waits: Mapping[str, Any], missing_ranks: list[int], bootstrap: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """node_clock, coupling, entry_wait_us and straggler (the cost account) of the timeline's stats, the entry-wait
    heat map, and the picture of a typical and the costliest launch."""
    clocks, correction = node_clocks(g)
    couple = coupling(g)
    struck_by: list[PerLaunch | None] = []
    strag = awaited(g, correction, couple, waits, bootstrap, clocks, missing_ranks, struck_by)
    if missing_ranks:
        strag["coverage_note"] = (
            f"{name_ranks(missing_ranks).capitalize()} without data: the awaited rank may be among them"
        )
    return {
        "node_clock": clocks,
        "coupling": couple,
        "entry_wait_us": entry_waits(g, correction),
        "straggler": strag,
        "entry_wait_heatmap": entry_wait_grid(g, correction),
        "launch_picture": launch_picture(g, correction, clocks, strag["causes"]),
        "struck_by": struck_by,  # per named cause, its launches (the merged trace's); not written to the stats
    }
