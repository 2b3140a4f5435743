"""Spikes: launches whose kernel takes far longer than the typical one; charged to the rank that ends last when its own
time is above its typical (own work), else to the whole group waiting inside the kernel (in_kernel)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.account import Account
from dispatchprof.analysis.waits.candidate import Candidate


def transient(acc: Account, own_min: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether the group's kernel time is far above the typical launch's (more than own_min and 5 robust
    sigmas of its spread over launches), and by how much (0 where not)."""
    if not acc.rows:
        return np.zeros(0, bool), np.zeros(0)
    above = acc.kernel - np.median(acc.kernel)
    sigma = 1.4826 * float(np.median(np.abs(above)))
    spike = above > max(own_min, 5.0 * sigma)
    return spike, np.where(spike, above, 0.0)


def in_kernel(acc: Account, own_min: float) -> Candidate | None:
    """Launches whose kernel takes far longer than the typical one while the rank that ends last is not itself above
    its own typical time: a slow peer's data (a slow sender, a slow counting role) keeps every rank waiting inside
    the kernel. The timeline sees when, not who: PMU or DebugClock must name the rank and role. Its delay is the
    kernel time above the typical launch's, a delay of the whole group (Candidate.group_delay: every rank ends later,
    and so arrives later at the next barrier). A slowdown present in every launch is the typical launch, and is not
    seen here: it needs a reference run (an A/B comparison)."""
    if acc.rows < 3:
        return None
    spike, above = transient(acc, own_min)
    last = np.argmax(acc.end, axis=1)
    own_above = acc.body - np.median(acc.body, axis=0, keepdims=True)
    mine = spike & ~(own_above[np.arange(acc.rows), last] > 0)
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
