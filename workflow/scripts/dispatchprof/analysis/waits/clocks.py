"""Node clocks: each node's offset and drift against node 0, from a pure barrier's ends (else the target's), and the
barrier's release skew across nodes."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from dispatchprof.analysis.waits.table import LaunchGrid, last_arrival_node


DRIFT_IMPLAUSIBLE_PPM = 100.0  # crystal oscillators of hosts stay within tens of ppm: beyond this, suspect the fit


def node_clocks(g: LaunchGrid) -> tuple[dict[str, Any], np.ndarray]:
    """Each node's clock against node 0's: offset (at the first launch) and drift, fitted over the launches, from
    the medians of the reference ends per node. Returns the per-node report and the ``[launch, rank]`` correction
    (µs to subtract).

    With the barrier kernel, the fit also takes out the barrier's release skew across nodes: the release reaches the
    last arrival's node first, the other nodes ``release_skew_us`` later (per launch, which node that is follows from
    the barrier's durations alone). Without it that skew would stay in the offsets, half a skew either way. A drift
    whose standard error is at least its size is reported as unresolved; one above DRIFT_IMPLAUSIBLE_PPM is flagged.
    msprof's device time is the device counter anchored once to the host clock (docs/formats.md §1), so
    chrony or PTP on the hosts does not correct it during a collection."""
    use_barrier = g.has_barrier
    ref = g.barrier_end if use_barrier else g.end
    reference = (
        "ends of the barrier kernel (all ranks released together)"
        if use_barrier
        else "ends of the target kernel (coupled ends; weaker)"
    )
    nodes = np.unique(g.nodes)
    base = nodes[0]
    last_node = last_arrival_node(g)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN launch has no median: NaN, left out below
        t0 = np.nanmedian(ref[:, g.nodes == base], axis=1)
    correction = np.zeros_like(ref)
    report: dict[str, Any] = {}
    first = np.nanmin(t0) if np.isfinite(t0).any() else 0.0
    for node in nodes:
        cols = g.nodes == node
        if node == base:
            report[str(int(node))] = {
                "offset_us": 0.0,
                "drift_ppm": 0.0,
                "spread_us": 0.0,
                "launches": int(np.isfinite(t0).sum()),
                "reference": reference,
            }
            continue
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            tk = np.nanmedian(ref[:, cols], axis=1)
        t = t0 - first
        skew_x = (last_node == base).astype(float) - (last_node == node).astype(float)
        fit = clock_fit(tk - t0, t, skew_x, use_barrier)
        if fit is None:
            report[str(int(node))] = {
                "offset_us": None,
                "drift_ppm": None,
                "spread_us": None,
                "launches": 0,
                "reference": reference,
            }
            continue
        correction[:, cols] = fit.fitted[:, None]
        report[str(int(node))] = {**fit.report(), "reference": reference, "reference_us": float(first)}
    return report, correction


@dataclass
class ClockFit:
    """One node's clock against node 0's: ``d`` (its reference ends minus node 0's, per launch) = intercept + slope x
    ``t`` (node 0's time since the first launch) + skew x ``skew_x`` (the barrier's release skew, where fitted)."""

    intercept: float
    slope: float
    skew: float | None
    fitted: (
        np.ndarray
    )  # [launch] the offset to subtract (intercept + slope x t; the skew is the barrier's, not the clock's)
    resid: np.ndarray  # over the launches used
    spread_t: float  # the spread of t over them (sum of squares about the mean)

    def report(self) -> dict[str, Any]:
        """The offset and drift with its standard error and state; the release skew; the residuals' robust spread."""
        dof = len(self.resid) - (3 if self.skew is not None else 2)
        stderr = (
            math.sqrt(float((self.resid**2).sum()) / dof / self.spread_t) * 1e6
            if dof > 0 and self.spread_t > 0
            else None
        )
        drift = float(self.slope * 1e6)
        if stderr is None or stderr >= abs(drift):
            drift_state = "unresolved"
        elif abs(drift) > DRIFT_IMPLAUSIBLE_PPM:
            drift_state = "implausible"
        else:
            drift_state = "resolved"
        resid = self.resid
        return {
            "offset_us": float(self.intercept),
            "drift_ppm": drift if drift_state != "unresolved" else None,
            "drift_ppm_fitted": drift,
            "drift_ppm_stderr": stderr,  # a short collection pins the drift down poorly: read it with this
            "drift_state": drift_state,
            "release_skew_us": self.skew,
            "spread_us": float(1.4826 * np.median(np.abs(resid - np.median(resid)))) if len(resid) else None,
            "launches": len(resid),
            # "reference_us" (set by node_clocks): the drift is per µs of node 0's clock after it (the trace needs it)
        }


def clock_fit(d: np.ndarray, t: np.ndarray, skew_x: np.ndarray, use_barrier: bool) -> ClockFit | None:
    """Offset and drift by least squares over the launches both nodes have (three or more over a time span), with the
    barrier's release skew as a third term where it varies; else a constant offset (the median); None without any."""
    ok = np.isfinite(d) & np.isfinite(t)
    skew = None
    if ok.sum() >= 3 and np.ptp(t[ok]) > 0:
        design = [np.ones(ok.sum()), t[ok]]
        if use_barrier and ok.sum() >= 4 and np.ptp(skew_x[ok]) > 0:
            design.append(skew_x[ok])
        coef = np.linalg.lstsq(np.column_stack(design), d[ok], rcond=None)[0]
        intercept, slope = float(coef[0]), float(coef[1])
        skew = float(coef[2]) if len(coef) > 2 else None
    elif ok.any():
        slope, intercept = 0.0, float(np.median(d[ok]))
    else:
        return None
    fitted = intercept + slope * np.where(np.isfinite(t), t, 0.0)
    resid = d[ok] - fitted[ok] - (skew or 0.0) * skew_x[ok]
    return ClockFit(intercept, slope, skew, fitted, resid, float(((t[ok] - t[ok].mean()) ** 2).sum()))


def release_skew(clocks: Mapping[str, Any]) -> float:
    """The barrier's release skew across nodes (µs, >= 0), the median over the nodes' clock fits; 0 when not fitted."""
    skews = [c["release_skew_us"] for c in clocks.values() if c.get("release_skew_us") is not None]
    return max(0.0, float(np.median(skews))) if skews else 0.0
