"""Controlled A/B comparison of two experiments: one factor changed, same inputs, precision still correct.

The verdict is decided by the median of the per-iteration max (kernel scope) and the bootstrap 95% CI of its
difference (B - A): improved when the whole CI is below 0, regressed when above, else no significant change.
P95, full-API latency and per-rank medians are shown beside it, each with its own CI. The comparison job turns
these numbers into rows of the latency layer (analysis/compare_layers.py), whose answers (improved / regressed /
unchanged / inconclusive, Holm-corrected over every row) replace this module's verdict in comparison.json.

Repeats: iterations within one run are not independent of the run (placement, thermal state, routing, clocks), so
the CIs come from a hierarchical bootstrap: resample the repeats of a side with replacement, then the iterations
within each resampled repeat, pool, take the statistic. The flat CI (all iterations pooled, resampled as if
independent) is kept beside it for reference. The variance of the per-iteration maxima is split into between-repeat
and within-repeat parts (one-way random effects, method of moments); when the between part exceeds
BETWEEN_REPEAT_WARN of the total on a side, the comparison warns: the repeats, not the iterations, set the
uncertainty, and more repeats (not more iterations) narrow it.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dispatchprof.analysis.latency import percentile, select_measured
from dispatchprof.analysis.order_stats import sorted_percentile

IGNORED = ("experiment", "_experiment", "_repeat")
# Share of the total variance of the per-iteration maxima above which the between-repeat part is said to dominate.
BETWEEN_REPEAT_WARN = 0.5
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


# Factors two sides must share to be compared at all (issue 59, item 6): what was measured (the shape's dimensions,
# the cluster's size, the kernel) and with what (the toolchain: a simulated side against a measured one). The data's
# seed and routing (shape.seed, shape.route) may differ: a warning, "inputs differ".
REFUSING = ("shape.", "cluster.nodes", "cluster.ranks_per_node", "toolchain", "kernel.name")
NOT_REFUSING = ("shape.seed", "shape.route")


def refused_factors(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The factors of REFUSING in which the sides differ. A key only one side recorded (a recorded side without
    config.json, an older run) is not said to differ: ``unchecked_factors`` names it."""
    fa, fb = flatten(a), flatten(b)
    return sorted(k for k in set(fa) & set(fb) if k.startswith(REFUSING) and k not in NOT_REFUSING and fa[k] != fb[k])


def unchecked_factors(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The factors of REFUSING that one side does not record (so ``refused_factors`` could not check them)."""
    fa, fb = flatten(a), flatten(b)
    return sorted(k for k in set(fa) ^ set(fb) if k.startswith(REFUSING) and k not in NOT_REFUSING)


def measured_by_rank(frame: pd.DataFrame) -> dict[Any, np.ndarray]:
    """Each rank's measured (not warm-up) samples, in table order: one grouping instead of a mask per rank."""
    measured = frame[~frame["warmup"].to_numpy(dtype=bool)]
    return {rank: group.to_numpy() for rank, group in measured.groupby("rank", sort=False)["us"]}


def maxima(frame: pd.DataFrame) -> np.ndarray:
    """Per measured iteration, the max over ranks, from the tidy latency table of one scope."""
    fast = grid_maxima(frame)
    return fast if fast is not None else general_maxima(frame)


def general_maxima(frame: pd.DataFrame) -> np.ndarray:
    """per_iteration_max's max_us of the measured iterations (select_measured: complete, warm-up labels agreeing)."""
    selection = select_measured(frame.assign(in_average=~frame["warmup"]))
    if not len(selection.measured):
        return np.array([])
    return selection.wide()[2].max(axis=1)


def grid_maxima(frame: pd.DataFrame) -> np.ndarray | None:
    """general_maxima of a table that is a full grid (each iteration of a contiguous range holds each rank of a
    contiguous range exactly once: what a collected run writes), from arrays in one pass: a fifth of the time.
    None for any other table (holes, repeats, other dtypes). tests/analysis/test_compare.py holds the two equal."""
    rank, it = frame["rank"].to_numpy(), frame["iteration"].to_numpy()
    if not len(rank) or rank.dtype.kind not in "iu" or it.dtype.kind not in "iu":
        return None
    r0, i0 = int(rank.min()), int(it.min())
    width, height = int(rank.max()) - r0 + 1, int(it.max()) - i0 + 1
    if width * height != len(rank):
        return None
    cell = (it - i0) * width + (rank - r0)
    if np.bincount(cell, minlength=width * height).max() != 1:
        return None
    us = np.empty(width * height)
    us[cell] = frame["us"].to_numpy(dtype=float)
    warm = np.empty(width * height, dtype=bool)
    warm[cell] = frame["warmup"].to_numpy(dtype=bool)
    measured = ~warm.reshape(height, width).any(axis=1)  # warm-up or mixed iterations are left out
    return us.reshape(height, width)[measured].max(axis=1)


def bootstrap_percentiles(
    x: np.ndarray, q: float, resamples: int, rng: np.random.Generator, ascending: bool = False
) -> np.ndarray:
    """The q-th percentile (np.percentile's linear method) of each of ``resamples`` bootstrap resamples of ``x`` (n
    draws with replacement), drawn from the resample's order statistics instead of the resample itself: O(resamples)
    after one sort, not O(resamples x n) (a 2000-sample side's 2000 resamples were 4 million values partitioned).

    Exact in distribution: a draw is sorted(x)[floor(n U)] with U uniform on (0, 1), and floor is monotone, so the
    k-th smallest of the n draws is sorted(x)[floor(n U_(k))] with U_(k) ~ Beta(k, n - k + 1), the k-th order
    statistic of n uniforms; the next one is U_(k) + (1 - U_(k)) Beta(1, n - k) (the least of the n - k uniforms
    above it). The percentile interpolates between the two as numpy does (tests/analysis/test_compare.py checks the
    distribution against resampling). ``ascending``: ``x`` is sorted already."""
    xs = np.asarray(x, dtype=float) if ascending else np.sort(np.asarray(x, dtype=float), axis=-1)
    n = xs.shape[-1]
    size = (*xs.shape[:-1], resamples)  # a 2-D x: each row's resamples (rows x resamples)
    virtual = (n - 1) * (q / 100)
    below = min(int(np.floor(virtual)), n - 1)
    weight = virtual - below
    k = below + 1  # the 1-based rank of the lower order statistic
    u_low = rng.beta(k, n - k + 1, size)
    low = np.take_along_axis(xs, np.minimum((n * u_low).astype(np.int64), n - 1), axis=-1)
    if k >= n or weight == 0:
        return low
    u_high = u_low + (1 - u_low) * rng.beta(1, n - k, size)
    high = np.take_along_axis(xs, np.minimum((n * u_high).astype(np.int64), n - 1), axis=-1)
    step = high - low
    return high - step * (1 - weight) if weight >= 0.5 else low + step * weight


def diff_ci(a: np.ndarray, b: np.ndarray, q: float, resamples: int, seed: int) -> dict[str, Any]:
    """Difference B - A of the q-th percentile with a percentile-bootstrap 95% CI (independent resampling)."""
    return _flat(a, b, q, resamples, seed)[0]


def _flat(
    a: np.ndarray, b: np.ndarray, q: float, resamples: int, seed: int
) -> tuple[dict[str, Any], np.ndarray | None, np.ndarray | None]:
    """diff_ci's record and the resampled statistics of each side (None with fewer than 2 samples on a side)."""
    if len(a) < 2 or len(b) < 2:
        return {"a": None, "b": None, "difference": None, "ci95": None, "relative": None}, None, None
    rng = np.random.default_rng(seed)
    a, b = np.sort(a), np.sort(b)  # once: the resampler and the percentiles read the sorted samples
    da = bootstrap_percentiles(a, q, resamples, rng, ascending=True)
    db = bootstrap_percentiles(b, q, resamples, rng, ascending=True)
    va, vb = sorted_percentile(a, q), sorted_percentile(b, q)  # np.percentile's, bit for bit
    record = {
        "a": va,
        "b": vb,
        "difference": vb - va,
        "ci95": ci95(db - da),
        "relative": (vb - va) / va if va else None,
    }
    return record, da, db


def ci95(values: np.ndarray) -> list[float]:
    """[2.5th, 97.5th] percentile (np.percentile's, bit for bit) of one sort of ``values``."""
    ascending = np.sort(values)
    return [sorted_percentile(ascending, 2.5), sorted_percentile(ascending, 97.5)]


def _resampled(reps: Sequence[np.ndarray], q: float, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The q-th percentile of ``resamples`` hierarchical resamples: repeats with replacement, then iterations
    with replacement within each chosen repeat, pooled."""
    k = len(reps)
    if k == 1:  # one repeat: the pooled resample is a resample of its iterations
        return bootstrap_percentiles(reps[0], q, resamples, rng)
    picks = rng.integers(0, k, size=(resamples, k))
    lengths = {len(r) for r in reps}
    if len(lengths) == 1:  # equal lengths (the usual case): one gather, no Python loop over resamples
        n = lengths.pop()
        stacked = np.stack(reps)
        pooled = np.concatenate(
            [stacked[picks[:, j][:, None], rng.integers(0, n, size=(resamples, n))] for j in range(k)], axis=1
        )
        return np.percentile(pooled, q, axis=1)
    out = np.empty(resamples)
    for i in range(resamples):
        out[i] = np.percentile(
            np.concatenate([reps[j][rng.integers(0, len(reps[j]), len(reps[j]))] for j in picks[i]]), q
        )
    return out


def hierarchical_ci(
    a_reps: Sequence[np.ndarray], b_reps: Sequence[np.ndarray], q: float, resamples: int, seed: int
) -> dict[str, Any]:
    """Difference B - A and ratio B / A of the q-th percentile of the pooled samples, with hierarchical-bootstrap
    95% CIs (see the module docstring); ``flat_ci95`` is diff_ci's CI of the same difference, for reference."""
    a_reps = [np.asarray(r, dtype=float) for r in a_reps if len(r)]
    b_reps = [np.asarray(r, dtype=float) for r in b_reps if len(r)]
    a, b = (np.concatenate(r) if r else np.array([]) for r in (a_reps, b_reps))
    flat, da, db = _flat(a, b, q, resamples, seed)
    if flat["ci95"] is None:
        return {**flat, "flat_ci95": None, "ratio": None, "ratio_ci95": None, "repeats": [len(a_reps), len(b_reps)]}
    one = len(a_reps) == len(b_reps) == 1  # the hierarchical resample is the flat one: the same draws, reused
    if not one:
        rng = np.random.default_rng(seed)
        da, db = _resampled(a_reps, q, resamples, rng), _resampled(b_reps, q, resamples, rng)
    ratio = db / da if (da > 0).all() else None
    return {
        **flat,
        "ci95": flat["ci95"] if one else ci95(db - da),
        "flat_ci95": flat["ci95"],
        "ratio": flat["b"] / flat["a"] if flat["a"] else None,
        "ratio_ci95": ci95(ratio) if ratio is not None else None,
        "repeats": [len(a_reps), len(b_reps)],
    }


def per_rank_medians(
    kernel_a: Sequence[pd.DataFrame], kernel_b: Sequence[pd.DataFrame], resamples: int, seed: int
) -> dict[str, dict[str, Any]]:
    """hierarchical_ci of each common rank's median. One repeat per side with as many samples on every rank (a
    collected run): every rank's resamples at once (``stacked_medians``); otherwise rank by rank."""
    common = set.intersection(*(set(np.unique(t["rank"].to_numpy()).tolist()) for t in [*kernel_a, *kernel_b]))
    by_rank_a, by_rank_b = ([measured_by_rank(t) for t in tables] for tables in (kernel_a, kernel_b))
    ranks = sorted(common)
    if len(by_rank_a) == len(by_rank_b) == 1 and ranks:
        stacked = stacked_medians(ranks, by_rank_a[0], by_rank_b[0], resamples, seed)
        if stacked is not None:
            return stacked
    empty = np.array([])
    return {
        str(int(rank)): hierarchical_ci(
            [m.get(rank, empty) for m in by_rank_a], [m.get(rank, empty) for m in by_rank_b], 50, resamples, seed + rank
        )
        for rank in ranks
    }


def stacked_medians(
    ranks: Sequence[int], a: Mapping[Any, np.ndarray], b: Mapping[Any, np.ndarray], resamples: int, seed: int
) -> dict[str, dict[str, Any]] | None:
    """hierarchical_ci's record (one repeat per side) of every rank's median in one draw of a (ranks x resamples)
    matrix per side; None unless every rank has the same number (2 or more) of samples on each side."""
    sides = []
    for by_rank in (a, b):
        rows = [by_rank.get(r) for r in ranks]
        if any(r is None for r in rows) or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
            return None
        sides.append(np.sort(np.stack(rows).astype(float), axis=1))
    rng = np.random.default_rng(seed)
    da, db = (bootstrap_percentiles(x, 50, resamples, rng, ascending=True) for x in sides)
    va, vb = (np.array([sorted_percentile(row, 50) for row in x]) for x in sides)
    ci = np.percentile(db - da, [2.5, 97.5], axis=1)
    positive = (da > 0).all(axis=1)
    ratio_ci = np.percentile(db / np.where(da > 0, da, 1.0), [2.5, 97.5], axis=1)
    out = {}
    for k, rank in enumerate(ranks):
        diff = [float(ci[0, k]), float(ci[1, k])]
        out[str(int(rank))] = {
            "a": float(va[k]),
            "b": float(vb[k]),
            "difference": float(vb[k] - va[k]),
            "ci95": diff,
            "relative": float((vb[k] - va[k]) / va[k]) if va[k] else None,
            "flat_ci95": diff,
            "ratio": float(vb[k] / va[k]) if va[k] else None,
            "ratio_ci95": [float(ratio_ci[0, k]), float(ratio_ci[1, k])] if positive[k] else None,
            "repeats": [1, 1],
        }
    return out


def variance_split(reps: Sequence[np.ndarray]) -> dict[str, Any]:
    """Between- and within-repeat variance of the samples (one-way random effects, method of moments; a negative
    between estimate is 0). ``between_fraction`` = between / (between + within)."""
    reps = [np.asarray(r, dtype=float) for r in reps if len(r)]
    sizes = np.array([len(r) for r in reps])
    if len(reps) < 2 or sizes.sum() <= len(reps):
        within = float(np.var(reps[0], ddof=1)) if len(reps) == 1 and len(reps[0]) > 1 else None
        return {
            "repeats": len(reps),
            "between": None,
            "within": within,
            "between_fraction": None,
            "note": "one repeat (or one sample per repeat): the between-repeat variance cannot be estimated",
        }
    total, k = sizes.sum(), len(reps)
    means = np.array([r.mean() for r in reps])
    grand = np.concatenate(reps).mean()
    msb = float((sizes * (means - grand) ** 2).sum() / (k - 1))
    msw = float(sum(((r - r.mean()) ** 2).sum() for r in reps) / (total - k))
    n0 = (total - (sizes**2).sum() / total) / (k - 1)
    between = max(0.0, (msb - msw) / n0)
    return {
        "repeats": k,
        "between": between,
        "within": msw,
        "between_fraction": between / (between + msw) if between + msw > 0 else 0.0,
        "note": (
            "variance of the per-iteration maxima (us^2): between repeats (of "
            "the repeat means, net of within-repeat noise) and within a repeat"
        ),
    }


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
    variance_warnings: list[str] = []
    scoped = {name: (scope(a_tables, name), scope(b_tables, name)) for name in ("kernel", "api")}
    for name in ("kernel", "api"):
        a_s, b_s = scoped[name]
        if not a_s or not b_s:
            result[name] = {"available": False, "reason": f"{name} scope missing on {'A' if not a_s else 'B'}"}
            continue
        ar, br = [maxima(t) for t in a_s], [maxima(t) for t in b_s]
        split = {"a": variance_split(ar), "b": variance_split(br)}
        result[name] = {
            "per_iteration_max_median": hierarchical_ci(ar, br, 50, resamples, seed),
            "per_iteration_max_p95": hierarchical_ci(ar, br, 95, resamples, seed + 1),
            "n": [int(sum(map(len, ar))), int(sum(map(len, br)))],
            "repeat_medians": {
                "a": [percentile(m, 50) for m in ar if len(m)],
                "b": [percentile(m, 50) for m in br if len(m)],
            },
            "variance": split,
        }
        for side, v in split.items():
            if v["between_fraction"] is not None and v["between_fraction"] > BETWEEN_REPEAT_WARN:
                variance_warnings.append(
                    f"{side.upper()} ({name}): between-repeat variance is {100 * v['between_fraction']:.0f}% of the "
                    f"total (> {100 * BETWEEN_REPEAT_WARN:.0f}%, between {v['between']:.2f} us^2, within "
                    f"{v['within']:.2f} us^2): the repeats differ more than iterations within a "
                    "repeat; the CI accounts for it, more repeats (not more iterations) narrow it"
                )
    kernel_a, kernel_b = scoped["kernel"]
    per_rank = per_rank_medians(kernel_a, kernel_b, max(200, resamples // 5), seed + 2) if kernel_a and kernel_b else {}
    result["per_rank_median"] = per_rank
    factors = factor_differences(a_config, b_config)
    warnings = []
    if len(factors) > 1:
        warnings.append(f"more than one factor differs: {', '.join(factors)}")
    inputs = [f for f in factors if f.startswith(INPUT_PREFIXES)]
    if inputs:
        warnings.append(f"inputs differ (shape, seed or routing): {', '.join(inputs)}")
    warnings.extend(variance_warnings)
    kernel = result["kernel"]
    result.update(
        factors=factors,
        warnings=warnings,
        verdict=verdict(kernel["per_iteration_max_median"])
        if kernel.get("per_iteration_max_median")
        else "not comparable",
        rule=(
            "verdict from the median of the per-iteration max (kernel scope): improved if the 95% CI of B - A lies "
            "below 0, regressed if above, else no significant change; CIs from a "
            "hierarchical bootstrap (repeats, then iterations within each repeat; seeded)"
        ),
        between_repeat_warn=BETWEEN_REPEAT_WARN,
    )
    return result
