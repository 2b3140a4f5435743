"""A rank that paces the group's end: in a coupled collective its peers wait for its data, so they end just after it,
and it ends first in far more launches than chance. Its own work is longer than theirs in every launch, yet every end
moves alike and nobody ends last by itself: the late-ending and own-work kinds see nothing. Named, with its cost not
established: the peers' own work is hidden behind their wait, so the timeline cannot tell by how much the group would
end earlier without it (the PMU's role excess or DebugClock's slot excess on that rank gives a figure)."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.account import Account
from dispatchprof.analysis.waits.candidate import Candidate
from dispatchprof.analysis.waits.costing import Replay, not_costed

TIE_US = 0.0005  # ends within half a nanosecond (msprof's resolution) are tied: nobody ends first in that launch


def binomial_tails(n: int, p: float) -> np.ndarray:
    """``[k]``: P(X >= k) for X ~ Binomial(n, p), k = 0..n, from the log pmf once (thousands of launches and ranks)."""
    if p >= 1.0:
        return np.ones(n + 1)
    i = np.arange(n + 1)
    log_comb = np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in range(n + 1)])
    log_pmf = log_comb + i * math.log(p) + (n - i) * math.log1p(-p)
    pmf = np.exp(log_pmf - log_pmf.max())
    return np.minimum(1.0, np.cumsum(pmf[::-1])[::-1] / pmf.sum())


def first_enders(end: np.ndarray) -> np.ndarray:
    """Per row the column that ends first; -1 where the first end is tied with another at the nanosecond."""
    if end.shape[1] < 2:
        return np.full(len(end), -1)
    part = np.partition(end, 1, axis=1)
    return np.where(part[:, 1] - part[:, 0] > TIE_US, np.argmin(end, axis=1), -1)


def pacers(acc: Account, ranks: np.ndarray, alpha: float, own_min: float) -> list[Candidate]:
    """The ranks that pace the group's end: each ends first in more launches than chance allows under exchangeable ends
    (1/n_ranks each: a one-sided binomial tail below ``alpha`` / n_ranks, every rank being tested), and where it does,
    the others' last end is a median of at most ``own_min`` after its own (they end with it; a rank that ends first by
    more has a lead of its own and is no pace: it is out of the group). The kernel's own structure makes some ranks end
    first often without any fault: in the workflow simulator's 3x4, ranks 0, 3 and 6 each end first in 24-27% of
    launches (chance 8%, p ~1e-11), but the others' last end is a median 62-66 us after theirs (they do not wait for
    them): the lag rule, not the count, keeps them out. In benchmarks/second_model.py's tied cases the slow rank ends
    first in 63-97% of launches, the others' last a median 0.5 us after it. Ends compared across nodes: the caller
    checks that the clocks allow it (a pure barrier, or one node) and that the ranks are coupled."""
    n, world = acc.end.shape
    if n < 2 or world < 2:
        return []
    first = first_enders(acc.end)
    counts = np.bincount(first[first >= 0], minlength=world)
    tails = binomial_tails(n, 1.0 / world)
    out = []
    for j in np.flatnonzero(counts > n / world).tolist():
        p_value = float(tails[counts[j]])
        paced = first == j
        lag = float(np.median(acc.end[paced].max(axis=1) - acc.end[paced, j]))
        if p_value >= alpha / world or lag > own_min:
            continue
        zero = np.zeros((n, 1))
        out.append(
            Candidate(
                evidence="own_work",
                rank=int(ranks[j]),
                node=None,
                ranks=[int(ranks[j])],
                cols=np.array([j]),
                arrival_shift=zero,
                end_shift=zero,
                struck=paced,
                facts={
                    "paces_end": {
                        "fraction_first": float(paced.mean()),
                        "chance": 1.0 / world,
                        "p_value": p_value,
                        "lag_us_median": lag,
                    },
                    "cost_not_established": "peers_hidden",
                },
            )
        )
    return out


def paced_causes(
    acc: Account, ranks: np.ndarray, nodes: np.ndarray, waits: Mapping[str, Any], costs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The pacers (pacers) as cost-account entries with their cost not established (costing.not_costed), less a rank
    another named cause already holds (its late arrival, own work, or a late-ending set it is in): that cause says
    more. Coupled ranks only (the caller checks): where ranks run on their own, a rank that ends first is merely
    fast. Its first end is compared across nodes: on a pure barrier's clocks, or on one node."""
    if not (acc.ends_across_nodes or len(np.unique(nodes)) == 1):
        return []
    held = {int(r) for c in costs if c["named"] for r in [*c["ranks"], *([c["rank"]] if c["rank"] is not None else [])]}
    found = pacers(acc, ranks, float(waits["alpha"]), float(waits["own_work_min_us"]))
    replay = Replay.of(acc, nodes)
    return [not_costed(c, replay) for c in found if c.rank not in held]
