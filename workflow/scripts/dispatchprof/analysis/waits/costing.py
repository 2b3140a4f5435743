"""Costing: each candidate's what-if savings per launch in both scopes, above its background, with bootstrap CIs over
launches; the group's excess the shares are of."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.account import Account, Maxima
from dispatchprof.analysis.waits.candidate import Candidate
from dispatchprof.analysis.waits.naming import by_cost, is_named, worth_costing
from dispatchprof.analysis.waits.table import LaunchGrid


def bootstrap_mean_ci(values: np.ndarray, resamples: int, seed: int) -> list[float]:
    """95% percentile-bootstrap CI of the mean over launches (resampling launches)."""
    if len(values) < 2:
        return [float("nan"), float("nan")]
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 500):
        stop = min(resamples, start + 500)
        means[start:stop] = values[rng.integers(0, len(values), size=(stop - start, len(values)))].mean(axis=1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def excess(acc: Account, inside: Mapping[str, Any] | None = None) -> dict[str, float | None]:
    """The group's excess per launch, from the data itself (no run without a fault exists on hardware): in the launch
    period, the last arrival's lead over the first at the barrier (every delay of a launch period, carried ends
    included, passes through the barrier, where the group waits for its last); in the timed kernel scope, the last
    end's lead over the first. Both plus the launches' kernel time above the typical launch's (in_kernel), which moves
    every rank alike. No single cause can give back more than its part: shares need not sum to 1."""
    if not acc.rows:
        return {"period_us_per_launch": None, "timed_us_per_launch": None}
    extra = max(0.0, inside["cost_us_per_launch"]) if inside else 0.0
    return {
        "period_us_per_launch": float(np.ptp(acc.arrival, axis=1).mean()) + extra,
        "timed_us_per_launch": float(np.ptp(acc.end, axis=1).mean()) + extra,
    }


def backgrounds(costs: np.ndarray, peers: int) -> np.ndarray:
    """Per candidate: the median cost of the same evidence over the other ranks (or nodes), the candidate itself left
    out; ``costs`` holds every candidate's, and the ``peers + 1 - len(costs)`` ranks without a candidate cost 0. One
    sort for all (thousands of ranks are thousands of candidates)."""
    values = np.sort(np.concatenate([costs, np.zeros(max(0, peers + 1 - len(costs)))]))
    rest = len(values) - 1  # the others
    if rest <= 0:
        return np.zeros(len(costs))
    mine = np.searchsorted(values, costs)  # where each candidate sits (a tie: any equal one serves)

    def remaining(k: np.ndarray) -> np.ndarray:  # the k-th of the others, for each candidate
        return values[np.where(k < mine, k, k + 1)]

    lo, hi = (rest - 1) // 2, rest // 2
    return (remaining(np.full(len(costs), lo)) + remaining(np.full(len(costs), hi))) / 2


def kind_backgrounds(raw: list[tuple[Candidate, np.ndarray, np.ndarray]], world: int, n_nodes: int) -> np.ndarray:
    """``[candidate, scope]``: the background of each candidate's saving in the launch period (0) and the timed scope
    (1): the median over the other ranks (or nodes) of the same evidence (backgrounds)."""
    kinds: dict[tuple[str, bool], list[int]] = {}
    for i, (c, *_) in enumerate(raw):
        kinds.setdefault((c.evidence, c.node is None), []).append(i)
    background = np.zeros((len(raw), 2))
    for (_, per_rank), members in kinds.items():
        peers = (world if per_rank else n_nodes) - 1  # peers without a candidate cost nothing
        for k in (0, 1):
            background[members, k] = backgrounds(np.array([float(raw[i][1 + k].mean()) for i in members]), peers)
    return background


def costed(
    acc: Account, cands: list[Candidate], nodes: np.ndarray, waits: Mapping[str, Any], boot: Mapping[str, int]
) -> list[dict[str, Any]]:
    """Each candidate with its costs: the what-if savings per launch (averaged over every analysed launch, zero where
    it did not strike) in the launch period and in the timed scope, Scalasca's delay cost, and a bootstrap CI over
    launches. Ranked by cost (launch period first, then timed); costs are not additive.

    Removing a cause leaves a rank as its peers are: the same evidence costs every rank something (its jitter is last
    now and then), so a cost is counted above the median cost of the same evidence over the other ranks (or nodes),
    its background, where no cause is."""
    arrivals, ends = Maxima(acc.arrival, nodes), Maxima(acc.end, nodes)
    raw = []
    for c in cands:
        period, timed = arrivals.saving(c.cols, c.node, c.arrival_shift), ends.saving(c.cols, c.node, c.end_shift)
        zero = np.zeros(len(period))
        raw.append(
            (
                c,
                period,
                timed,
                c.period_extra if c.period_extra is not None else zero,
                c.timed_extra if c.timed_extra is not None else zero,
            )
        )
    causes = []
    min_cost = float(waits["min_cost_us"])
    background = kind_backgrounds(
        [(c, period, timed) for c, period, timed, *_ in raw], acc.arrival.shape[1], len(np.unique(nodes))
    )
    for i, (c, period, timed, extra, extra_timed) in enumerate(raw):
        # a spike (a launch 5 robust sigmas above the launch-to-launch spread) is no jitter: the background, what
        # jitter gives every rank now and then, is of the leads only. The CI resamples the launches, spikes
        # included: a spike seen in one to three launches is not a rate (its CI reaches zero) and is listed, not named
        cost = float((period + extra).mean() - background[i, 0])
        cost_timed = float((timed + extra_timed).mean() - background[i, 1])
        if not worth_costing(max(cost, cost_timed), min_cost):
            continue
        ci = [float(x - background[i, 0]) for x in bootstrap_mean_ci(period + extra, boot["resamples"], boot["seed"])]
        ci_timed = [
            float(x - background[i, 1]) for x in bootstrap_mean_ci(timed + extra_timed, boot["resamples"], boot["seed"])
        ]
        # named on one scope, the larger, and said in it: its explanation leads with that scope (cost_text), so that
        # a cause named on its timed cost never reads as a launch-period cost below min_cost_us
        named_on = "period" if cost >= cost_timed else "timed"
        deciding = ci if named_on == "period" else ci_timed
        causes.append(
            {
                "evidence": c.evidence,
                "rank": c.rank,
                "node": c.node,
                "ranks": c.ranks,
                "fraction": float(c.struck.mean()) if acc.rows else 0.0,
                "cost_us_per_launch": cost,
                "cost_ci_us": ci,
                "cost_timed_us_per_launch": cost_timed,
                "cost_timed_ci_us": ci_timed,
                "background_us_per_launch": float(background[i, 0]),
                "wait_caused_us_per_launch": float(arrivals.waits_caused(c.cols, c.arrival_shift).mean()),
                "launches": acc.rows,
                "named": is_named(max(cost, cost_timed), deciding[0], min_cost) and not c.group,
                "named_on": named_on,
                **c.facts,
            }
        )
    causes.sort(key=by_cost)
    return causes


def duration_excess(g: LaunchGrid) -> dict[str, float | None]:
    """Ranks that do not wait for each other: the group's excess per launch is its longest duration's lead over the
    median rank's, in both scopes."""
    durations = g.duration[g.complete(g.duration)]
    if not len(durations):
        return {"period_us_per_launch": None, "timed_us_per_launch": None}
    value = float((durations.max(axis=1) - np.median(durations, axis=1)).mean())
    return {"period_us_per_launch": value, "timed_us_per_launch": value}
