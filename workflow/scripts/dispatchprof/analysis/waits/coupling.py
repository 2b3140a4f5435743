"""Coupling: within a node (one clock) do the ends coincide while the starts spread? Then ranks wait for each other."""

from __future__ import annotations

from typing import Any

import numpy as np

from dispatchprof.analysis.waits.table import LaunchGrid


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
        state, why = (
            "coupled",
            "within a node the later a rank starts, the shorter it runs "
            f"(median correlation {corr_med:.2f}): ranks wait for each other",
        )
    elif end_med >= 0.9 * start_med and (corr_med is None or corr_med > -0.2):
        state, why = (
            "not_coupled",
            "ends spread as much as starts and durations do not shrink with later starts: ranks run independently",
        )
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
