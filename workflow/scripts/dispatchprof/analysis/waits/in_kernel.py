"""Spikes: launches whose kernel takes far longer than the typical one; charged to the rank that ends last (own work)
unless it is a rank that ends launches anyway and ends the spikes no more often than that, else to the whole group
waiting inside the kernel (in_kernel)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.account import Account
from dispatchprof.analysis.waits.candidate import Candidate
from dispatchprof.analysis.waits.paces_end import binomial_tails


def transient(acc: Account, own_min: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether the group's kernel time is far above the typical launch's (more than own_min and 5 robust
    sigmas of its spread over launches), and by how much (0 where not)."""
    if not acc.rows:
        return np.zeros(0, bool), np.zeros(0)
    above = acc.kernel - np.median(acc.kernel)
    sigma = 1.4826 * float(np.median(np.abs(above)))
    spike = above > max(own_min, 5.0 * sigma)
    return spike, np.where(spike, above, 0.0)


def owns_its_spikes(last: np.ndarray, spike: np.ndarray, world: int, alpha: float) -> np.ndarray:
    """Per rank: whether the spike rows it ends are its own work. A slow launch of the whole group (link contention, a
    slow counting role) is ended by whoever ends launches anyway. A rank that ends more of the typical launches than an
    exchangeable rank could by chance ends a slow one for that reason, unless it ends the spikes far more often than
    its share of the typical launches predicts. Both are one-sided binomial tails below ``alpha`` / the number of ranks
    that end a spike (each of them tested): the first against 1/n_ranks, the second against the rank's share of the
    typical launches (half a launch added per rank, so that a rank never last keeps a share). Any other rank that ends
    a slow launch owns it, as it would without this test. The workflow simulator's 3x4 (seed 1): rank 1 ends 32 of 194
    typical launches (chance 16; p 1.6e-4) and 3 of 6 spikes, link contention that no cause struck: not its own."""
    typical = np.bincount(last[~spike], minlength=world)
    hits = np.bincount(last[spike], minlength=world)
    level = alpha / max(1, int(np.count_nonzero(hits)))
    ends_anyway = binomial_tails(int(typical.sum()), 1.0 / world)[typical] < level
    share = (typical + 0.5) / (typical.sum() + 0.5 * world)
    unusual = np.zeros(world, bool)
    for j in np.flatnonzero(hits).tolist():  # a rank that ends no spike has none to own
        unusual[j] = binomial_tails(int(spike.sum()), share[j])[hits[j]] < level
    return ~ends_anyway | unusual


def own_spikes(acc: Account, spike: np.ndarray, alpha: float) -> np.ndarray:
    """Per row: a spike (``spike``, from transient) charged to the own work of the rank that ends last, where the
    spikes it ends are its own (owns_its_spikes); the other spikes are the group's (in_kernel). The last rank's own
    time in the kernel is the row's kernel time, so in a spike it is always above its own typical time (at most the
    typical kernel's)."""
    if not spike.any():
        return spike
    last = np.argmax(acc.end, axis=1)
    return spike & owns_its_spikes(last, spike, acc.end.shape[1], alpha)[last]


def in_kernel(acc: Account, own_min: float, alpha: float) -> Candidate | None:
    """Launches whose kernel takes far longer than the typical one, ended by a rank that does not own them
    (own_spikes): a rank that ends the typical launches too, while a slow peer's data (a slow sender, a slow counting
    role) or a shared link keeps every rank waiting inside the kernel. The timeline sees when, not who: PMU or
    DebugClock must name the rank and role. Its delay is the
    kernel time above the typical launch's, a delay of the whole group (Candidate.group_delay: every rank ends later,
    and so arrives later at the next barrier). A slowdown present in every launch is the typical launch, and is not
    seen here: it needs a reference run (an A/B comparison)."""
    if acc.rows < 3:
        return None
    spike, above = transient(acc, own_min)
    mine = spike & ~own_spikes(acc, spike, alpha)
    no_rank = np.zeros((acc.rows, 0))
    return Candidate(
        evidence="in_kernel",
        rank=None,
        node=None,
        ranks=[],
        cols=np.zeros(0, int),
        arrival_shift=no_rank,
        end_shift=no_rank,
        struck=mine,
        group_delay=np.where(mine, above, 0.0),
        facts={
            "kernel_us_median": float(np.median(acc.kernel)),
            "above_us_median": float(np.median(above[mine])) if mine.any() else 0.0,
        },
    )


def is_group_wait(cause: Mapping[str, Any]) -> bool:
    """Whether a costed cause is the group waiting inside the kernel (in_kernel's, the only one with the typical
    kernel time among its facts), not a set of late-ending ranks (the same evidence, with columns)."""
    return cause["evidence"] == "in_kernel" and "kernel_us_median" in cause
