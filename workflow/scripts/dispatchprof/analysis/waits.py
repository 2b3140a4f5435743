"""What the group waits for: node clocks, coupling, entry waits and the awaited rank or node of a collective kernel.

elastic_dispatch_kernel is a collective: a rank's duration is its own work plus its wait for the slowest peer, so
"longest = slowest" is wrong (shared/DESIGN.md, "The kernel is a collective"). This module works on launch tables
aligned by launch index (``[launch, rank]`` arrays of µs on each node's own clock):
- node clocks: ranks of one node share a host clock; each node's offset and drift against node 0 are estimated
  from a pure barrier (the ends of the synchronize_start barrier kernel, which release every rank together; else
  the target's ends, a weaker reference) and removed before any cross-node comparison;
- coupling: within a node (one clock) the barrier's ends coincide while its starts spread;
- entry waits: the barrier kernel's duration is its wait; the target's entry wait is the last corrected start
  minus the rank's own;
- the awaited: per launch who arrived last (the shortest barrier wait needs no clock at all), who ends last by
  itself, and whether the group ends far apart with nobody late (the wait is inside the kernel); a rank or node is
  named only when it is last significantly more often than chance (binomial tail below ``alpha``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from dispatchprof.formats.ranklog import name_ranks


@dataclass
class LaunchGrid:
    """Used launches aligned by launch index: ``[launch, rank]`` µs on each rank's node clock, NaN where missing."""

    launches: np.ndarray
    ranks: np.ndarray
    nodes: np.ndarray
    start: np.ndarray
    end: np.ndarray
    duration: np.ndarray  # as read: start + duration loses precision at epoch-sized µs, so the difference is not taken back
    barrier_start: np.ndarray
    barrier_end: np.ndarray
    barrier_wait: np.ndarray  # the barrier kernel's duration: its wait

    @property
    def has_barrier(self) -> bool:
        return bool(np.isfinite(self.barrier_end).any())

    def complete(self, values: np.ndarray) -> np.ndarray:
        """Launches where every rank has a value."""
        return np.isfinite(values).all(axis=1)


def grid(rank: np.ndarray, launch: np.ndarray, columns: Mapping[str, np.ndarray], ranks_per_node: int) -> LaunchGrid:
    """From long columns (one row per rank and used launch; ns; NaN for a missing barrier) to the aligned grid."""
    ranks = np.unique(rank)
    launches = np.unique(launch)
    row = np.searchsorted(launches, launch)
    col = np.searchsorted(ranks, rank)

    def wide(values: np.ndarray) -> np.ndarray:
        out = np.full((len(launches), len(ranks)), np.nan)
        out[row, col] = np.asarray(values, dtype=float) / 1000.0
        return out

    start, dur = wide(columns["start_ns"]), wide(columns["dur_ns"])
    bstart, bdur = wide(columns["barrier_start_ns"]), wide(columns["barrier_dur_ns"])
    return LaunchGrid(launches, ranks, ranks // ranks_per_node, start, start + dur, dur, bstart, bstart + bdur, bdur)


def host_gaps(g: LaunchGrid) -> np.ndarray:
    """``[launch, rank]``: from the rank's previous target end to its arrival (the barrier kernel's start, else the
    target's start), on the rank's own clock. This is the host's share of lateness: a rank that ended the previous
    launch late (it waited inside the kernel) returns late without being late itself. NaN where the previous launch
    is not in the table."""
    arrival = np.where(np.isfinite(g.barrier_start), g.barrier_start, g.start) if g.has_barrier else g.start
    gaps = np.full_like(arrival, np.nan)
    consecutive = np.flatnonzero(np.diff(g.launches) == 1) + 1
    gaps[consecutive] = arrival[consecutive] - g.end[consecutive - 1]
    return gaps


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p). Callers ask about an excess (k above the mean n*p); at or below the mean the
    answer is reported as 1 (nothing stands out). The terms fall from i = k on, so the sum stops once they no longer
    count: thousands of launches and ranks stay cheap."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0 or k <= n * p:
        return 1.0
    first = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)
    odds, term, total = p / (1.0 - p), 1.0, 1.0
    for i in range(k, n):
        term *= (n - i) / (i + 1) * odds
        total += term
        if term < 1e-17 * total:
            break
    return min(1.0, math.exp(first) * total)


def stands_out(k: int, n: int, p: float, alpha: float) -> bool:
    """Last in ``k`` of ``n`` launches is more than chance ``p`` would give, at level ``alpha``."""
    return n > 0 and k / n > p and binomial_tail(k, n, p) < alpha


def node_clocks(g: LaunchGrid) -> tuple[dict[str, Any], np.ndarray]:
    """Each node's clock against node 0's: offset (at the first launch) and drift, fitted over the launches, from
    the medians of the reference ends per node. Returns the per-node report and the ``[launch, rank]`` correction
    (µs to subtract)."""
    use_barrier = g.has_barrier
    ref = g.barrier_end if use_barrier else g.end
    reference = "ends of the barrier kernel (all ranks released together)" if use_barrier else "ends of the target kernel (coupled ends; weaker)"
    nodes = np.unique(g.nodes)
    base = nodes[0]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN launch has no median: NaN, left out below
        t0 = np.nanmedian(ref[:, g.nodes == base], axis=1)
    correction = np.zeros_like(ref)
    report: dict[str, Any] = {}
    first = np.nanmin(t0) if np.isfinite(t0).any() else 0.0
    for node in nodes:
        cols = g.nodes == node
        if node == base:
            report[str(int(node))] = {"offset_us": 0.0, "drift_ppm": 0.0, "spread_us": 0.0, "launches": int(np.isfinite(t0).sum()), "reference": reference}
            continue
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            tk = np.nanmedian(ref[:, cols], axis=1)
        d = tk - t0
        t = t0 - first
        ok = np.isfinite(d) & np.isfinite(t)
        if ok.sum() >= 3 and np.ptp(t[ok]) > 0:
            slope, intercept = np.polyfit(t[ok], d[ok], 1)
        elif ok.any():
            slope, intercept = 0.0, float(np.median(d[ok]))
        else:
            report[str(int(node))] = {"offset_us": None, "drift_ppm": None, "spread_us": None, "launches": 0, "reference": reference}
            continue
        fitted = intercept + slope * np.where(np.isfinite(t), t, 0.0)
        resid = d[ok] - fitted[ok]
        correction[:, cols] = fitted[:, None]
        spread_t = float(((t[ok] - t[ok].mean()) ** 2).sum())
        stderr = math.sqrt(float((resid**2).sum()) / (len(resid) - 2) / spread_t) * 1e6 if len(resid) > 2 and spread_t > 0 else None
        report[str(int(node))] = {
            "offset_us": float(intercept),
            "drift_ppm": float(slope * 1e6),
            "drift_ppm_stderr": stderr,  # a short collection pins the drift down poorly: read it with this
            "spread_us": float(1.4826 * np.median(np.abs(resid - np.median(resid)))) if len(resid) else None,
            "launches": int(ok.sum()),
            "reference": reference,
        }
    return report, correction


def coupling(g: LaunchGrid) -> dict[str, Any]:
    """Within each node (one clock): do ends coincide while starts spread? Measured on the barrier kernel when
    present (a pure barrier), else on the target kernel."""
    start, end = (g.barrier_start, g.barrier_end) if g.has_barrier else (g.start, g.end)
    kernel = "barrier kernel" if g.has_barrier else "target kernel"
    starts, ends, correlations = [], [], []
    for node in np.unique(g.nodes):
        cols = g.nodes == node
        if cols.sum() < 2:
            continue
        s, e = start[:, cols], end[:, cols]
        ok = np.isfinite(s).all(axis=1) & np.isfinite(e).all(axis=1)
        starts += list(np.ptp(s[ok], axis=1))
        ends += list(np.ptp(e[ok], axis=1))
        if cols.sum() >= 3:
            correlations += list(_row_correlations(s[ok], e[ok] - s[ok]))
    if not starts:
        return {"state": "unknown", "reason": "no node has two ranks with data in the same launch", "kernel": kernel}
    start_med, end_med = float(np.median(starts)), float(np.median(ends))
    corr = [c for c in correlations if np.isfinite(c)]
    corr_med = float(np.median(corr)) if corr else None
    if start_med < 1.0:
        state, why = "unknown", "starts within a node do not spread (median < 1 us): coupling cannot be seen"
    elif end_med <= 0.5 * start_med:
        state, why = "coupled", "ends coincide within a node while starts spread: ranks wait for each other"
    elif corr_med is not None and corr_med <= -0.5:
        state, why = "coupled", f"within a node the later a rank starts, the shorter it runs (median correlation {corr_med:.2f}): ranks wait for each other"
    elif end_med >= 0.9 * start_med and (corr_med is None or corr_med > -0.2):
        state, why = "not_coupled", "ends spread as much as starts and durations do not shrink with later starts: ranks run independently"
    else:
        state, why = "unknown", "neither clearly coupled nor independent"
    return {
        "state": state,
        "reason": why,
        "kernel": kernel,
        "start_spread_us_median": start_med,
        "end_spread_us_median": end_med,
        "start_duration_correlation_median": corr_med,
    }


def _row_correlations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``a`` with the same row of ``b`` (NaN where a row is constant); vectorised:
    thousands of launches x nodes."""
    da = a - a.mean(axis=1, keepdims=True)
    db = b - b.mean(axis=1, keepdims=True)
    norm = np.sqrt((da**2).sum(axis=1) * (db**2).sum(axis=1))
    with np.errstate(all="ignore"):
        return np.where(norm > 0, (da * db).sum(axis=1) / norm, np.nan)


def _counts(winners: np.ndarray, values: np.ndarray) -> dict[int, int]:
    found, counts = np.unique(winners, return_counts=True)
    return {int(v): int(c) for v, c in zip(found, counts) if int(v) in set(values.tolist())}


def _late_arrivals(g: LaunchGrid, gaps: np.ndarray, alpha: float, late_min_us: float) -> list[dict[str, Any]]:
    """Causes of kind late_arrival, from the host gaps of complete launches (``[launch, rank]``).

    A rank is late in a launch when its gap exceeds the launch's shortest gap by more than max(late_min_us, 5 robust
    sigmas of the on-time half of all such deviations). A node is named when all its ranks are late together in at
    least 2 launches; a rank when its late launches are more than chance would give among all late events, or when
    it arrives last more often than chance (both binomial tails below ``alpha``)."""
    n, world = len(gaps), len(g.ranks)
    if not n:
        return []
    deviation = gaps - gaps.min(axis=1, keepdims=True)
    on_time = deviation[deviation <= np.median(deviation)]
    sigma = 1.4826 * float(np.median(np.abs(on_time - np.median(on_time))))
    threshold = max(late_min_us, 5.0 * sigma)
    late = deviation > threshold
    causes, covered = [], set()
    for node in np.unique(g.nodes):
        cols = g.nodes == node
        if cols.sum() < 2 or cols.sum() == world:
            continue
        together = late[:, cols].all(axis=1)
        if together.sum() >= 2:
            members = g.ranks[cols]
            lateness = float(np.median(deviation[together][:, cols]))
            causes.append(
                {
                    "evidence": "late_arrival",
                    "node": int(node),
                    "ranks": members.tolist(),
                    "rank": None,
                    "fraction": float(together.mean()),
                    "late_us_median": lateness,
                }
            )
            covered |= set(members.tolist())
    events = int(late.sum())
    last = g.ranks[np.argmax(gaps, axis=1)]
    for j, rank in enumerate(g.ranks.tolist()):
        if rank in covered:
            continue
        k = int(late[:, j].sum())
        if k >= 2 and binomial_tail(k, events, 1 / world) < alpha:
            chosen = late[:, j]
        elif stands_out(int((last == rank).sum()), n, 1 / world, alpha):
            chosen = last == rank
        else:
            continue
        causes.append(
            {
                "evidence": "late_arrival",
                "node": None,
                "ranks": [rank],
                "rank": rank,
                "fraction": float(chosen.mean()),
                "late_us_median": float(np.median(deviation[chosen, j])),
            }
        )
    return causes


def awaited(g: LaunchGrid, correction: np.ndarray, couple: Mapping[str, Any], waits: Mapping[str, float]) -> dict[str, Any]:
    """Name what the group waits for: ``{rank, ranks, node, evidence, fraction, causes, explanation}``."""
    alpha, own_min, spread_min, late_min = waits["alpha"], waits["own_work_min_us"], waits["in_kernel_min_fraction"], waits["late_min_us"]
    causes: list[dict[str, Any]] = []
    end = g.end - correction
    coupled = couple["state"] == "coupled"
    # Who arrives late by the host's own doing: the longest gap since its previous launch ended (no clock needed).
    # A rank that arrives last only because the previous launch kept it waiting is not late.
    gaps = host_gaps(g)
    gaps = gaps[g.complete(gaps)]
    where = "at the barrier kernel" if g.has_barrier else "at the kernel's entry barrier"
    late = _late_arrivals(g, gaps, alpha, late_min) if coupled else []
    for cause in late:
        cause["where"] = where
    causes += late
    # Who ends last by itself: ends (corrected) when coupled, durations when not.
    done = g.complete(end)
    ends = end[done] if coupled else g.duration[done]
    n = len(ends)
    if n and len(g.ranks) > 1:
        order = np.sort(ends, axis=1)
        last = g.ranks[np.argmax(ends, axis=1)]
        lead = order[:, -1] - order[:, -2]
        for rank, k in sorted(_counts(last, g.ranks).items()):
            rank_lead = float(np.median(lead[last == rank]))
            if stands_out(k, n, 1 / len(g.ranks), alpha) and rank_lead > own_min:
                causes.append({"evidence": "own_work", "rank": rank, "ranks": [rank], "node": None, "fraction": k / n, "lead_us_median": rank_lead})
    # The group ends far apart (arrival lateness is absorbed before the kernel): ranks wait inside the kernel for a
    # peer's data. It may come with a late arrival: causes co-occur and each is listed.
    if coupled and n and not any(c["evidence"] == "own_work" for c in causes):
        spread = np.ptp(ends, axis=1)
        duration = float(np.nanmedian(g.duration))
        wide = spread > spread_min * duration
        if wide.mean() >= 0.5:
            lagging = ends - ends.min(axis=1, keepdims=True) > 0.5 * spread[:, None]
            waiting = g.ranks[lagging[wide].mean(axis=0) >= 0.5].tolist()
            causes.append(
                {
                    "evidence": "in_kernel",
                    "rank": None,
                    "ranks": [],
                    "waiting_ranks": waiting,
                    "node": None,
                    "fraction": float(wide.mean()),
                    "end_spread_us_median": float(np.median(spread)),
                }
            )
    if not causes:
        answer = {"rank": None, "ranks": [], "node": None, "evidence": "none", "fraction": None}
        explanation = "no rank or node stands out: nobody arrives late or ends late by itself more often than chance"
    else:
        main = max(causes, key=lambda c: c["fraction"])
        answer = {k: main.get(k) for k in ("rank", "ranks", "node", "evidence", "fraction")}
        explanation = "; ".join(describe(c) for c in causes)
    return {**answer, "causes": causes, "explanation": explanation, "launches_compared": int(max(len(gaps), n))}


def describe(cause: Mapping[str, Any]) -> str:
    pct = f"{100 * cause['fraction']:.0f}% of launches"
    if cause["evidence"] == "late_arrival":
        who = f"node {cause['node']} (ranks {cause['ranks'][0]}-{cause['ranks'][-1]})" if cause["node"] is not None else f"rank {cause['rank']}"
        return f"the group waits for {who}, which arrives {cause['late_us_median']:.0f} us late {cause.get('where', '')} (host side) in {pct}"
    if cause["evidence"] == "own_work":
        return f"rank {cause['rank']} ends last by itself (median {cause['lead_us_median']:.1f} us after the next rank) in {pct}: its own work, not a wait"
    return (
        f"the ranks' ends spread by {cause['end_spread_us_median']:.0f} us (median) in {pct}: ranks "
        f"{cause['waiting_ranks']} wait inside the kernel for a peer's data; PMU or DebugClock must name the rank"
    )


def kernel_entry_waits(g: LaunchGrid, correction: np.ndarray) -> np.ndarray:
    """``[launch, rank]``: the wait at the kernel's entry barrier, the launch's last clock-corrected start minus the
    rank's own (NaN where the rank has no launch)."""
    start = g.start - correction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a launch no rank has: NaN
        return np.nanmax(start, axis=1, keepdims=True) - start


def entry_waits(g: LaunchGrid, correction: np.ndarray) -> dict[str, Any]:
    """Per rank: the median wait in the barrier kernel (its duration) and at the kernel's entry (over launches every
    rank has)."""
    entry = kernel_entry_waits(g, correction)
    entry = entry[g.complete(entry)]
    per_rank = {}
    for j, rank in enumerate(g.ranks.tolist()):
        b = g.barrier_wait[:, j][np.isfinite(g.barrier_wait[:, j])]
        e = entry[:, j]
        sync = float(np.median(b)) if len(b) else None
        kernel = float(np.median(e)) if len(e) else None
        per_rank[str(rank)] = {"median": sync if sync is not None else kernel, "sync_barrier_median": sync, "kernel_entry_median": kernel}
    return {
        "per_rank": per_rank,
        "definition": "median per rank: the barrier kernel's duration (synchronize_start) when it is there, else the wait at the kernel's "
        "entry barrier (last clock-corrected start of the launch minus the rank's own); both listed",
    }


def binned_grid(values: np.ndarray, rows: np.ndarray, columns: np.ndarray, max_rows: int = 128, max_columns: int = 200) -> dict[str, Any]:
    """A ``[row, column]`` matrix for a heat map that stays readable at thousands of ranks: rows (ranks) and columns
    are grouped into at most ``max_rows`` / ``max_columns`` consecutive bins, each cell the max of its bin (NaN-aware)."""
    values = np.asarray(values, dtype=float)

    def edges(n: int, limit: int) -> np.ndarray:
        return np.linspace(0, n, min(n, limit) + 1).round().astype(int)

    r_edges, c_edges = edges(values.shape[0], max_rows), edges(values.shape[1], max_columns)
    out = np.full((len(r_edges) - 1, len(c_edges) - 1), np.nan)
    if out.size:  # every bin holds at least one row and column (edges step by >= 1), as reduceat needs
        # fmax ignores NaN as nanmax does, over whole bins at once (a nanmax per cell took ~0.3 s at 256 ranks x
        # 2,000 launches); a cell without a finite value ends non-finite and is shown empty either way.
        out = np.fmax.reduceat(np.fmax.reduceat(values, r_edges[:-1], axis=0), c_edges[:-1], axis=1)

    def labels(names: np.ndarray, e: np.ndarray) -> list[str]:
        return [str(names[a]) if b - a == 1 else f"{names[a]}-{names[b - 1]}" for a, b in zip(e[:-1], e[1:])]

    return {
        "rows": labels(np.asarray(rows), r_edges),
        "columns": labels(np.asarray(columns), c_edges),
        "values": [[None if not np.isfinite(v) else round(float(v), 3) for v in row] for row in out],
        "aggregation": "max over the ranks and columns of each bin" if len(r_edges) - 1 < values.shape[0] or len(c_edges) - 1 < values.shape[1] else "none",
    }


def entry_wait_grid(g: LaunchGrid, correction: np.ndarray) -> dict[str, Any]:
    """rank x launch of the entry wait: the barrier kernel's duration, else the wait at the kernel's entry."""
    if g.has_barrier:
        wait, which = g.barrier_wait, "barrier kernel duration"
    else:
        wait, which = kernel_entry_waits(g, correction), "kernel entry wait (clock-corrected starts)"
    return {**binned_grid(wait.T, g.ranks, g.launches), "what": which, "unit": "us"}


def analyse(g: LaunchGrid, waits: Mapping[str, float], missing_ranks: list[int]) -> dict[str, Any]:
    """node_clock, coupling, entry_wait_us and straggler of the timeline's stats, and the entry-wait heat map."""
    clocks, correction = node_clocks(g)
    couple = coupling(g)
    strag = awaited(g, correction, couple, waits)
    if missing_ranks:
        strag["coverage_note"] = f"{name_ranks(missing_ranks).capitalize()} without data: the awaited rank may be among them"
    return {
        "node_clock": clocks,
        "coupling": couple,
        "entry_wait_us": entry_waits(g, correction),
        "straggler": strag,
        "entry_wait_heatmap": entry_wait_grid(g, correction),
    }
