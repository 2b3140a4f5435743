"""Controlled A/B comparison of two experiments: one factor changed, same inputs, precision still correct.

The verdict is decided by the median of the per-iteration max (kernel scope) and the bootstrap 95% CI of its
difference (B - A): improved when the whole CI is below 0, regressed when above, else no significant change.
P95, full-API latency and per-rank medians are shown beside it, each with its own CI. With repeats, the
per-iteration maxima of every repeat of a side are pooled, and each repeat's median is listed.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dispatchprof.analysis.latency import per_iteration_max, percentile, select_measured

IGNORED = ("experiment", "_experiment", "_repeat")
INPUT_PREFIXES = ("shape.",)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in IGNORED and not prefix:
            continue
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{key}."))  # an empty mapping sets nothing
        else:
            out[f"{prefix}{key}"] = value
    return out


def factor_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    fa, fb = flatten(a), flatten(b)
    return sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))


def maxima(frame: pd.DataFrame) -> np.ndarray:
    """Per measured iteration, the max over ranks, from the tidy latency table of one scope."""
    f = frame.assign(in_average=~frame["warmup"])
    selection = select_measured(f)
    return per_iteration_max(selection)["max_us"].to_numpy() if len(selection.measured) else np.array([])


def diff_ci(a: np.ndarray, b: np.ndarray, q: float, resamples: int, seed: int) -> dict[str, Any]:
    """Difference B - A of the q-th percentile with a percentile-bootstrap 95% CI (independent resampling)."""
    if len(a) < 2 or len(b) < 2:
        return {"a": None, "b": None, "difference": None, "ci95": None, "relative": None}
    rng = np.random.default_rng(seed)
    da = np.percentile(a[rng.integers(0, len(a), size=(resamples, len(a)))], q, axis=1)
    db = np.percentile(b[rng.integers(0, len(b), size=(resamples, len(b)))], q, axis=1)
    diff = db - da
    va, vb = percentile(a, q), percentile(b, q)
    return {"a": va, "b": vb, "difference": vb - va, "ci95": [percentile(diff, 2.5), percentile(diff, 97.5)], "relative": (vb - va) / va if va else None}


def verdict(median_diff: Mapping[str, Any]) -> str:
    ci = median_diff.get("ci95")
    if not ci:
        return "not comparable"
    if ci[1] < 0:
        return "improved"
    if ci[0] > 0:
        return "regressed"
    return "no significant change"


def compare(
    a_tables: Sequence[pd.DataFrame],
    b_tables: Sequence[pd.DataFrame],
    a_config: Mapping[str, Any],
    b_config: Mapping[str, Any],
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """``*_tables``: one tidy latency table (experiment, scope, rank, iteration, warmup, us) per repeat."""

    def scope(tables: Sequence[pd.DataFrame], name: str) -> list[pd.DataFrame]:
        return [t[t["scope"] == name] for t in tables if (t["scope"] == name).any()]

    result: dict[str, Any] = {}
    for name in ("kernel", "api"):
        a_s, b_s = scope(a_tables, name), scope(b_tables, name)
        if not a_s or not b_s:
            result[name] = {"available": False, "reason": f"{name} scope missing on {'A' if not a_s else 'B'}"}
            continue
        am, bm = np.concatenate([maxima(t) for t in a_s]), np.concatenate([maxima(t) for t in b_s])
        result[name] = {
            "per_iteration_max_median": diff_ci(am, bm, 50, resamples, seed),
            "per_iteration_max_p95": diff_ci(am, bm, 95, resamples, seed + 1),
            "n": [int(len(am)), int(len(bm))],
            "repeat_medians": {"a": [percentile(maxima(t), 50) for t in a_s], "b": [percentile(maxima(t), 50) for t in b_s]},
        }
    kernel_a, kernel_b = scope(a_tables, "kernel"), scope(b_tables, "kernel")
    per_rank = {}
    if kernel_a and kernel_b:
        ka, kb = pd.concat(kernel_a), pd.concat(kernel_b)
        for rank in sorted(set(ka["rank"]) & set(kb["rank"])):
            sa = ka[(ka["rank"] == rank) & ~ka["warmup"]]["us"].to_numpy()
            sb = kb[(kb["rank"] == rank) & ~kb["warmup"]]["us"].to_numpy()
            per_rank[str(int(rank))] = diff_ci(sa, sb, 50, max(200, resamples // 5), seed + 2 + int(rank))
    result["per_rank_median"] = per_rank
    factors = factor_differences(a_config, b_config)
    warnings = []
    if len(factors) > 1:
        warnings.append(f"more than one factor differs: {', '.join(factors)}")
    inputs = [f for f in factors if f.startswith(INPUT_PREFIXES)]
    if inputs:
        warnings.append(f"inputs differ (shape, seed or routing): {', '.join(inputs)}")
    kernel = result["kernel"]
    result.update(
        factors=factors,
        warnings=warnings,
        verdict=verdict(kernel["per_iteration_max_median"]) if kernel.get("per_iteration_max_median") else "not comparable",
        rule="verdict from the median of the per-iteration max (kernel scope): improved if the 95% CI of B - A lies below 0, regressed if above, else no significant change",
    )
    return result
