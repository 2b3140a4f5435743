"""Costing, one mechanism for every kind of cause: each candidate is a delay in its launches' graph (Replay), and its
cost is the graph replayed without it, per launch in both scopes, above its background, with bootstrap CIs over
launches; the group's excess the shares are of."""

from __future__ import annotations

from dataclasses import dataclass
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
    kinds: dict[tuple[str, bool, bool], list[int]] = {}
    for i, (c, *_) in enumerate(raw):
        # a delay of the whole group (no rank's columns) is a kind of its own: no other rank has one
        kinds.setdefault((c.evidence, c.node is None, len(c.cols) > 0), []).append(i)
    background = np.zeros((len(raw), 2))
    for (_, per_rank, _), members in kinds.items():
        peers = (world if per_rank else n_nodes) - 1  # peers without a candidate cost nothing
        for k in (0, 1):
            background[members, k] = backgrounds(np.array([float(raw[i][1 + k].mean()) for i in members]), peers)
    return background


PER_LAUNCH = "_per_launch"  # a costed cause's PerLaunch, taken out before the account is written (awaited.struck_by)


@dataclass(frozen=True)
class PerLaunch:
    """Where a costed cause struck, launch by launch (the rows of its replay): the merged trace's causes track. Its
    ``period``/``timed`` are the replay's savings per launch before the background is taken off (the cost is their
    mean less the background)."""

    launches: np.ndarray | None  # [row] launch index; None where the replay's rows were not numbered
    struck: np.ndarray  # [row] bool: the candidate's delay acted
    period: np.ndarray  # [row] µs: the launch period's saving without it
    timed: np.ndarray  # [row] µs: the timed scope's saving
    # the replay itself, for the trace of the launches without the cause (analysis.trace_replay): the grid's columns
    # of the cause's ranks (awaited turns them into ranks), their shifts, and the three savings of each row
    cols: np.ndarray | None = None  # [k] the grid's columns of the shifts
    arrival_shift: np.ndarray | None = None  # [row, k] µs taken off each rank's arrival
    end_shift: np.ndarray | None = None  # [row, k] µs taken off each rank's end
    arrival_saving: np.ndarray | None = None  # [row] µs: how much earlier the last arrival comes (the release)
    end_saving: np.ndarray | None = None  # [row] µs: how much earlier the last end comes, after the release
    group_delay: np.ndarray | None = None  # [row] µs: a delay of every rank's end, removed
    ranks: np.ndarray | None = None  # [k] the ranks of ``cols`` (set by awaited, which knows the grid)


@dataclass(frozen=True)
class Replay:
    """The launches a cost replays, as the graph every kind of cause is a delay in: per row the arrivals at the barrier
    (which releases everyone at the last), the ends (the timed scope ends at the last; a delay of the data every rank
    receives moves them all) and, through the shifts a candidate carries, an end delay into the next row's arrival.
    Ranks that do not wait for each other replay their durations in both scopes, and nobody waits for anybody."""

    arrivals: Maxima
    ends: Maxima
    rows: int
    world: int
    n_nodes: int
    coupled: bool = True
    launches: np.ndarray | None = None  # [row] the launch index of each row, where known

    @staticmethod
    def of(acc: Account, nodes: np.ndarray) -> Replay:
        return Replay(
            Maxima(acc.arrival, nodes),
            Maxima(acc.end, nodes),
            acc.rows,
            acc.arrival.shape[1],
            len(np.unique(nodes)),
            launches=acc.launches,
        )

    @staticmethod
    def of_durations(durations: np.ndarray, nodes: np.ndarray, launches: np.ndarray | None = None) -> Replay:
        longest = Maxima(durations, nodes)
        return Replay(
            longest,
            longest,
            len(durations),
            durations.shape[1],
            len(np.unique(nodes)),
            coupled=False,
            launches=launches,
        )

    def savings(self, c: Candidate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row, in the launch period and the timed scope: how much earlier the last arrival (the last end) comes
        with the candidate's shifts removed from the graph; and its group delay, which moves both alike."""
        group = c.group_delay if c.group_delay is not None else np.zeros(self.rows)
        return (
            self.arrivals.saving(c.cols, c.node, c.arrival_shift),
            self.ends.saving(c.cols, c.node, c.end_shift),
            group,
        )

    def waits_caused(self, c: Candidate) -> np.ndarray:
        """Per row, Scalasca's delay cost: the waiting the delay made the others do (a group delay: every other rank
        waits it; the cause is at least one rank). Nobody waits where ranks do not wait for each other."""
        if not self.coupled:
            return np.zeros(self.rows)
        group = c.group_delay * (self.world - max(1, len(c.cols))) if c.group_delay is not None else 0.0
        return self.arrivals.waits_caused(c.cols, c.arrival_shift) + group


def costed(
    acc: Account, cands: list[Candidate], nodes: np.ndarray, waits: Mapping[str, Any], boot: Mapping[str, int]
) -> list[dict[str, Any]]:
    """The candidates of ranks that wait for each other, costed on their launches' replay (replayed)."""
    return replayed(Replay.of(acc, nodes), cands, waits, boot)


def replayed(
    replay: Replay, cands: list[Candidate], waits: Mapping[str, Any], boot: Mapping[str, int]
) -> list[dict[str, Any]]:
    """Each candidate with its costs, whatever its kind: the graph replayed without its delay, the saving per launch
    (averaged over every analysed launch, zero where it did not strike) in the launch period and in the timed scope,
    Scalasca's delay cost, and a bootstrap CI over launches. Ranked by cost (launch period first, then timed); costs
    are not additive.

    Removing a cause leaves a rank as its peers are: the same evidence costs every rank something (its jitter is last
    now and then), so a cost is counted above the median cost of the same evidence over the other ranks (or nodes),
    its background, where no cause is."""
    raw = [(c, *replay.savings(c)) for c in cands]
    min_cost = float(waits["min_cost_us"])
    # the background is of the shifts' savings: a whole-group delay is no jitter the other ranks have too
    background = kind_backgrounds([(c, period, timed) for c, period, timed, _ in raw], replay.world, replay.n_nodes)
    causes = []
    for i, (c, shifts_period, shifts_timed, group) in enumerate(raw):
        period, timed = shifts_period + group, shifts_timed + group
        # a spike (a launch 5 robust sigmas above the launch-to-launch spread) is no jitter: the background, what
        # jitter gives every rank now and then, is of the leads only. The CI resamples the launches, spikes
        # included: a spike seen in one to three launches is not a rate (its CI reaches zero) and is listed, not named
        cost, cost_timed = float(period.mean() - background[i, 0]), float(timed.mean() - background[i, 1])
        if not worth_costing(max(cost, cost_timed), min_cost):
            continue
        ci = [float(x - background[i, 0]) for x in bootstrap_mean_ci(period, boot["resamples"], boot["seed"])]
        ci_timed = [float(x - background[i, 1]) for x in bootstrap_mean_ci(timed, boot["resamples"], boot["seed"])]
        entry = cause_entry(c, replay, (cost, ci), (cost_timed, ci_timed), float(background[i, 0]), min_cost)
        entry[PER_LAUNCH] = PerLaunch(
            replay.launches,
            c.struck,
            period,
            timed,
            c.cols,
            c.arrival_shift,
            c.end_shift,
            shifts_period,
            shifts_timed,
            group,
        )
        causes.append(entry)
    causes.sort(key=by_cost)
    return causes


def cause_entry(
    c: Candidate,
    replay: Replay,
    period: tuple[float, list[float]],
    timed: tuple[float, list[float]],
    background: float,
    min_cost: float,
) -> dict[str, Any]:
    """One costed candidate as the cost account holds it. Named on one scope, the larger, and said in it: its
    explanation leads with that scope (cost_text), so that a cause named on its timed cost never reads as a
    launch-period cost below min_cost_us."""
    (cost, ci), (cost_timed, ci_timed) = period, timed
    named_on = "period" if cost >= cost_timed else "timed"
    deciding = ci if named_on == "period" else ci_timed
    return {
        "evidence": c.evidence,
        "rank": c.rank,
        "node": c.node,
        "ranks": c.ranks,
        "fraction": float(c.struck.mean()) if replay.rows else 0.0,
        "cost_us_per_launch": cost,
        "cost_ci_us": ci,
        "cost_timed_us_per_launch": cost_timed,
        "cost_timed_ci_us": ci_timed,
        "background_us_per_launch": background,
        "wait_caused_us_per_launch": float(replay.waits_caused(c).mean()),
        "launches": replay.rows,
        "named": is_named(max(cost, cost_timed), deciding[0], min_cost) and not c.group,
        "named_on": named_on,
        **c.facts,
    }


def not_costed(c: Candidate, replay: Replay) -> dict[str, Any]:
    """A candidate the timeline names but cannot cost (facts["cost_not_established"] says why), as the cost account
    holds it: the replay's saving of what the timeline sees of it, nothing (0, CI 0-0: its delay is hidden, not
    zero), no background, named unless it is a listed kind."""
    entry = cause_entry(c, replay, (0.0, [0.0, 0.0]), (0.0, [0.0, 0.0]), 0.0, 0.0)
    entry["named"] = not c.group
    return entry


def duration_excess(g: LaunchGrid) -> dict[str, float | None]:
    """Ranks that do not wait for each other: the group's excess per launch is its longest duration's lead over the
    median rank's, in both scopes."""
    durations = g.duration[g.complete(g.duration)]
    if not len(durations):
        return {"period_us_per_launch": None, "timed_us_per_launch": None}
    value = float((durations.max(axis=1) - np.median(durations, axis=1)).mean())
    return {"period_us_per_launch": value, "timed_us_per_launch": value}
