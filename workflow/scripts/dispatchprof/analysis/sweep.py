"""The ranking of a sweep's points (issue 61 item 3), with the A/B's statistics (analysis/compare.py).

Per point: the kernel-scope median of the per-iteration max (the max over ranks of each measured launch), its 95% CI
from the hierarchical bootstrap (the point's repeats with replacement, then the launches within each chosen repeat),
and its P95. A point with one repeat has a CI from its launches only ("1 repeat: its CI is within-run only").

Over the points: ``best`` is the point of the lowest median, ``runner_up`` the next. The best is tested against every
other point j: the difference j - best of the medians with its hierarchical-bootstrap 95% CI (the A/B's resampling,
compare._resampled), and a two-sided bootstrap p from the same resamples (twice the smaller share of resampled differences on
either side of 0, (1 + count) / (1 + resamples)). ``verdict: best`` when Holm's step-down at ALPHA over these k - 1
comparisons rejects every one of them, each with j slower: the best is told apart from every other point with the
family-wise error rate of the k - 1 claims held at ALPHA. Picking the best from the same data is answered by asking
for all k - 1 rejections, not one against the runner-up. Else ``tied``, naming every point Holm did not separate from
the best. A failed point (its precision or baseline not ok, or fewer than 2 measured launches) is listed, never
ranked. Fewer than two ranked points: ``not ranked``, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from dispatchprof.analysis.compare import _resampled
from dispatchprof.analysis.compare_layers import ALPHA, holm
from dispatchprof.analysis.latency import percentile

ONE_REPEAT = "1 repeat: its CI is within-run only"


@dataclass
class PointData:
    """What the ranking reads of one point: its per-repeat per-iteration maxima (kernel scope, us) and its notes."""

    name: str
    params: dict[str, Any]
    label: str = ""
    state: str = "ok"  # ok | failed
    reason: str | None = None
    reps: list[np.ndarray] = field(default_factory=list)
    efficiency: float | None = None
    bound_us: float | None = None  # the links' bound of a launch (the baseline's bandwidth.bound_us)
    top_cause: str | None = None


def _clean(reps: Sequence[Any]) -> list[np.ndarray]:
    out = []
    for r in reps:
        a = np.asarray(r, dtype=float).ravel()
        a = a[np.isfinite(a)]
        if len(a):
            out.append(a)
    return out


def point_row(p: PointData, resamples: int, seed: int) -> dict[str, Any]:
    """The point's row of sweep.json; a point that cannot be measured becomes failed, with why."""
    reps = _clean(p.reps)
    row: dict[str, Any] = {
        "name": p.name,
        "label": p.label,
        "params": p.params,
        "state": p.state,
        "reason": p.reason,
        "repeats": len(reps),
        "n": int(sum(map(len, reps))),
        "median_us": None,
        "ci95": None,
        "p95_us": None,
        "efficiency": p.efficiency,
        "bound_us": p.bound_us,
        "top_cause": p.top_cause,
        "note": None,
    }
    if p.state == "ok" and row["n"] < 2:
        row.update(state="failed", reason=p.reason or f"{row['n']} measured launch(es): fewer than 2")
    if row["state"] != "ok":
        return row
    pooled = np.concatenate(reps)
    boot = _resampled(reps, 50, resamples, np.random.default_rng(seed))
    row.update(
        median_us=percentile(pooled, 50),
        ci95=[percentile(boot, 2.5), percentile(boot, 97.5)],
        p95_us=percentile(pooled, 95),
        note=ONE_REPEAT if len(reps) == 1 else None,
    )
    return row


def difference(best: list[np.ndarray], other: list[np.ndarray], resamples: int, seed: int) -> dict[str, Any]:
    """other - best of the pooled medians, its hierarchical-bootstrap 95% CI and the two-sided p of the same
    resampled differences (the CI and the p never disagree by coming from different draws)."""
    rng = np.random.default_rng(seed)
    diff = _resampled(other, 50, resamples, rng) - _resampled(best, 50, resamples, rng)
    tail = min(int((diff <= 0).sum()), int((diff >= 0).sum()))
    return {
        "difference_us": percentile(np.concatenate(other), 50) - percentile(np.concatenate(best), 50),
        "ci95": [percentile(diff, 2.5), percentile(diff, 97.5)],
        "p": min(1.0, 2 * (1 + tail) / (1 + resamples)),
    }


def rank(points: Sequence[PointData], resamples: int = 2000, seed: int = 0, alpha: float = ALPHA) -> dict[str, Any]:
    """sweep.json's ranking: every point's row (ranked ones by median, then failed ones), best, runner_up,
    difference_ci95 (runner-up minus best), the comparisons of the best against each other point, the verdict."""
    rows = [point_row(p, resamples, seed + i) for i, p in enumerate(points)]
    reps = {p.name: _clean(p.reps) for p in points}
    ranked = sorted((r for r in rows if r["state"] == "ok"), key=lambda r: (r["median_us"], r["name"]))
    failed = [r for r in rows if r["state"] != "ok"]
    for i, r in enumerate(ranked, 1):
        r["rank"] = i
    result: dict[str, Any] = {
        "points": ranked + failed,
        "best": None,
        "runner_up": None,
        "difference_ci95": None,
        "difference_us": None,
        "comparisons": [],
        "tied_with": [],
        "alpha": alpha,
        "rule": (
            "best: the lowest kernel median of the per-iteration max; verdict best when Holm's step-down at "
            f"alpha {alpha} over the k-1 comparisons of the best against every other point rejects each (two-sided "
            "hierarchical-bootstrap p: repeats, then launches within each repeat; seeded), else tied, naming the "
            "points not told apart; failed points are listed, never ranked"
        ),
    }
    if len(ranked) < 2:
        why = "no point was measured" if not ranked else "one point measured: nothing to rank it against"
        result.update(verdict="not ranked", reason=why, best=ranked[0]["name"] if ranked else None)
        return result
    best = ranked[0]
    for j, other in enumerate(ranked[1:], 1):
        d = difference(reps[best["name"]], reps[other["name"]], resamples, seed + 7919 * j)
        result["comparisons"].append({"point": other["name"], **d})
    rejected = holm([c["p"] for c in result["comparisons"]], alpha)
    for c, r in zip(result["comparisons"], rejected):
        c["separated"] = bool(r and c["difference_us"] is not None and c["difference_us"] > 0)
    tied = [c["point"] for c in result["comparisons"] if not c["separated"]]
    runner = result["comparisons"][0]
    result.update(
        best=best["name"],
        runner_up=ranked[1]["name"],
        difference_us=runner["difference_us"],
        difference_ci95=runner["ci95"],
        tied_with=tied,
        verdict="tied" if tied else "best",
    )
    result["reason"] = verdict_line(result, ranked)
    return result


def verdict_line(result: dict[str, Any], ranked: Sequence[dict[str, Any]]) -> str:
    best = ranked[0]
    ci = result["difference_ci95"]
    gap = (
        f"runner-up {result['runner_up']} is {result['difference_us']:+.2f} us (95% CI {ci[0]:+.2f} .. {ci[1]:+.2f})"
        if ci
        else f"runner-up {result['runner_up']}"
    )
    head = f"{best['name']} ({best['label'] or 'as configured'}) at {best['median_us']:.2f} us; {gap}"
    if result["verdict"] == "best":
        return f"{head}; told apart from every other point ({len(ranked) - 1}, Holm)"
    return f"{head}; not told apart from {', '.join(result['tied_with'])}"
