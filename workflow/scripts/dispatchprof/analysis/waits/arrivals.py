"""Late arrivals by the host: a rank (or every rank of a node together) whose host gap, from its previous kernel end to
its next arrival on its own clock, is far above the launch's typical one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dispatchprof.analysis.waits.account import Account, Maxima
from dispatchprof.analysis.waits.candidate import Candidate, Facts


@dataclass
class HostLateness:
    """Per row and rank the host gap's excess over the row's typical one (0 where unknown) and whether it is late; how a
    late arrival's cost is established (``bounded``: only as a bound) and the arrivals' maxima where it is."""

    excess: np.ndarray  # [row, rank]
    late: np.ndarray  # [row, rank] bool
    bounded: bool
    arrivals: Maxima | None  # only where a late arrival's saving is established (O(rows x ranks))


def host_lateness(acc: Account, nodes: np.ndarray, late_min: float) -> HostLateness:
    """Late by the host: the host gap (previous end to arrival, one clock) above the row's median by more than
    late_min_us and 5 robust sigmas. Only what is beyond the carried end is in a host gap.

    Its size is clock-free (one host's gap); its cost is not: arrivals across nodes are compared on clocks fitted to
    the target's ends when no barrier kernel ran, and a node that ends later in every launch (the kernel's own skew,
    carried into its next start) then looks on time. The benchmark sees 39-64% errors there (3x4). What holds whatever
    the clocks: removing a delay of L us from one host gives the group back at most L (every later event is a max of
    earlier ones plus durations), so the cost is reported as that bound (bound_facts), the estimate on the fitted
    clocks beside it."""
    excess = np.where(np.isfinite(acc.gap_excess), acc.gap_excess, 0.0)
    on_time = excess[excess <= np.median(excess)]
    sigma = 1.4826 * float(np.median(np.abs(on_time - np.median(on_time)))) if len(on_time) else 0.0
    late = excess > max(late_min, 5.0 * sigma)
    bounded = not (acc.ends_across_nodes or len(np.unique(nodes)) == 1)
    # 2,048 ranks have no late one most often: the maxima only where they are read
    arrivals = Maxima(acc.arrival, nodes) if late.any() and not bounded else None
    return HostLateness(excess, late, bounded, arrivals)


def bound_facts(host: HostLateness, delay: np.ndarray) -> Facts:
    """Without established arrivals: the bound on the saving, the mean per launch of the ``delay`` removed ([row]; a
    node's by its latest rank, since removing several delays gives back at most the largest)."""
    if not host.bounded:
        return {}
    return {"cost_clocks": "target_ends", "cost_bound_us": [0.0, float(delay.mean())]}


def ahead_facts(acc: Account, host: HostLateness, cols: np.ndarray, node: int | None, struck: np.ndarray) -> Facts:
    """Where it struck and arrived last, its lead over the next arrival (median): removing its lateness brings the
    group's last arrival back no further, which is why a late arrival costs less than its lateness."""
    if host.arrivals is None:
        return {}
    lead = acc.arrival[:, cols].min(axis=1) - host.arrivals.others(cols, node)
    last = struck & (lead > 0)
    return {"ahead_us_median": float(np.median(lead[last])), "ahead_launches": int(last.sum())} if last.any() else {}


def late_arrival(
    cols: np.ndarray,
    rank: int | None,
    node: int | None,
    ranks: list[int],
    size: float,
    struck: np.ndarray,
    facts: Facts,
) -> Candidate:
    """The candidate that takes a lateness of ``size`` off ``cols`` at the barrier where it struck (the launch period
    only: a late arrival moves no end in the timed kernel scope)."""
    shift = np.where(struck[:, None], size, 0.0) * np.ones((1, len(cols)))
    return Candidate(
        evidence="late_arrival",
        rank=rank,
        node=node,
        ranks=ranks,
        cols=cols,
        arrival_shift=shift,
        end_shift=np.zeros_like(shift),
        struck=struck,
        facts={"late_us_median": size, **facts},
    )


def late_arrivals(acc: Account, ranks: np.ndarray, nodes: np.ndarray, late_min: float) -> list[Candidate]:
    """Each rank late by its host, then each node whose ranks are late together (not the whole group). Its size is the
    median excess over its late launches: the knob-like part, without this launch's own jitter."""
    host = host_lateness(acc, nodes, late_min)
    out = []
    for j in np.flatnonzero(host.late.any(axis=0)).tolist():
        struck, cols, rank = host.late[:, j], np.array([j]), int(ranks[j])
        size = float(np.median(host.excess[struck, j]))
        facts = {
            **bound_facts(host, np.where(struck, host.excess[:, j], 0.0)),
            **ahead_facts(acc, host, cols, None, struck),
        }
        out.append(late_arrival(cols, rank, None, [rank], size, struck, facts))
    for node in np.unique(nodes):
        cols = np.flatnonzero(nodes == node)
        if len(cols) < 2 or len(cols) == acc.arrival.shape[1]:
            continue
        together = host.late[:, cols].all(axis=1)
        if not together.any():
            continue
        size = float(np.median(host.excess[together][:, cols]))
        facts = {
            **bound_facts(host, np.where(together, host.excess[:, cols].max(axis=1), 0.0)),
            **ahead_facts(acc, host, cols, int(node), together),
        }
        out.append(late_arrival(cols, None, int(node), ranks[cols].tolist(), size, together, facts))
    return out
