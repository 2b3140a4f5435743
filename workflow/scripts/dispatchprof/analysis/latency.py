"""Latency statistics of a collective kernel, measured on every rank.

Two different questions, never mixed up:
- "how long does one dispatch take for the whole group": per measured iteration take the max over
  ranks, then the median / P95 / mean of those maxima (with bootstrap 95% CIs);
- "how is each rank distributed": per rank median / P95 / max of its own samples.
"P95 per rank, then max" is a third statistic and is not computed here.
Percentiles use linear interpolation (numpy's default). CIs use the bootstrap percentile method with a
fixed seed, so a rerun on the same data gives the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

if TYPE_CHECKING:
    import pandas as pd  # imported where a frame is built: percentile serves jobs without pandas (the timeline merge)


@dataclass
class Selection:
    """Samples usable for per-iteration statistics, and what was left out and why."""

    measured: pd.DataFrame  # rank, iteration, us: only iterations in which every rank has a measured sample
    ranks: list[int]
    excluded_mixed_warmup: int  # iterations whose rows disagree on the warm-up label
    excluded_incomplete: int  # iterations in which some rank has no measured sample
    _wide: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def wide(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(iterations, ranks, values): the measured samples as an iteration x rank matrix, both sorted (what
        ``measured.pivot(index="iteration", columns="rank", values="us")`` holds), built once with numpy: a pivot
        of a 5M-row frame copies it several times over (issue 58 part 4)."""
        if self._wide is None:
            row, iterations = sorted_codes(self.measured["iteration"].to_numpy())
            column, ranks = sorted_codes(self.measured["rank"].to_numpy())
            values = np.full((len(iterations), len(ranks)), np.nan)
            values[row, column] = self.measured["us"].to_numpy(dtype=float)
            self._wide = (iterations, ranks, values)
        return self._wide


def sorted_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques): ``np.unique(values, return_inverse=True)`` reversed, by hashing (pandas.factorize) instead of
    a sort, whose argsort and sorted copy are two more arrays of the column's size."""
    import pandas as pd

    codes, uniques = pd.factorize(values, sort=True)
    return codes, np.asarray(uniques)


def measured_mask(frame: pd.DataFrame) -> np.ndarray:
    """The rows that count (in_average and not warm-up), as a boolean array: no copy of the frame."""
    return frame["in_average"].to_numpy(dtype=bool) & ~frame["warmup"].to_numpy(dtype=bool)


def select_measured(frame: pd.DataFrame) -> Selection:
    """``frame``: rank, iteration, us, warmup, in_average (bools). The iterations are judged on arrays (one
    factorisation of the iteration column) and the kept rows copied once, in the frame's order."""
    ranks = sorted(frame["rank"].unique().tolist())
    code, iterations = sorted_codes(frame["iteration"].to_numpy())
    warmup = frame["warmup"].to_numpy(dtype=bool)
    rows = np.bincount(code, minlength=len(iterations))
    warm_rows = np.bincount(code, weights=warmup, minlength=len(iterations))
    mixed = (warm_rows > 0) & (warm_rows < rows)
    warmup_only = warm_rows == rows
    keep = measured_mask(frame)
    rank_index = np.searchsorted(np.asarray(ranks), frame["rank"].to_numpy())
    seen = np.zeros((len(iterations), len(ranks)), dtype=bool)  # which ranks have a measured sample per iteration
    seen[code[keep], rank_index[keep]] = True
    del rank_index
    complete = (seen.sum(axis=1) == len(ranks)) & ~mixed
    incomplete = int(np.count_nonzero(~complete & ~mixed & ~warmup_only))
    keep &= complete[code]
    del code
    kept = frame.loc[keep, ["rank", "iteration", "us"]]
    return Selection(kept.reset_index(drop=True), ranks, int(mixed.sum()), incomplete)


def percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q, method="linear"))


# What one chunk of bootstrap resamples may hold: its indices and the values they gather (the percentile partitions
# those in place). A fixed 500 resamples per chunk grew with the number of iterations n: on a 5M-row CSV (n = 312,500)
# its int64 indices, the floats they gathered and the percentile's copy of them were 3.75 GB, the baseline job's whole
# peak. 64 MiB is small beside the parsed frame of a file big enough to reach it, and still ~1,100 resamples per chunk
# at n = 5,000 (the per-call overhead stays negligible).
BOOTSTRAP_CHUNK_BYTES = 64 * 2**20


def bootstrap_ci(values: np.ndarray, q: float, resamples: int, seed: int) -> list[float]:
    """95% percentile-bootstrap CI of the q-th percentile (q=50: the median), resampled in chunks of at most
    BOOTSTRAP_CHUNK_BYTES. The numbers depend on neither the chunk size nor the index dtype: ``integers`` draws each
    index from the generator's stream in turn (C order; the 32-bit halves of a 64-bit draw are buffered in the
    generator, not per call), so k rows drawn at once are the k rows drawn one by one
    (tests/analysis/test_bootstrap_chunks.py holds the former 500-resample chunks as its reference)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < 2:
        return [float("nan"), float("nan")]
    index = np.dtype(np.int32 if n <= 2**31 else np.int64)  # integers' high is exclusive: n - 1 fits
    per_chunk = max(1, BOOTSTRAP_CHUNK_BYTES // (n * (index.itemsize + values.itemsize)))
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    for start in range(0, resamples, per_chunk):
        stop = min(resamples, start + per_chunk)
        stats[start:stop] = resampled_percentiles(values, q, rng, stop - start, index)
    return [percentile(stats, 2.5), percentile(stats, 97.5)]


def resampled_percentiles(
    values: np.ndarray, q: float, rng: np.random.Generator, rows: int, index: np.dtype
) -> np.ndarray:
    """The q-th percentile of each of ``rows`` resamples of ``values``. A function of its own so that its arrays are
    freed on return: a loop's locals live on until reassigned, after the next chunk's are allocated."""
    drawn = values[rng.integers(0, len(values), size=(rows, len(values)), dtype=index)]  # the indices freed here
    return np.percentile(drawn, q, axis=1, method="linear", overwrite_input=True)  # drawn is ours to partition


def per_iteration_max(selection: Selection) -> pd.DataFrame:
    """Per measured iteration: the max over ranks, and which rank(s) it was."""
    import pandas as pd

    iterations, ranks, values = selection.wide()
    maxima = values.max(axis=1)
    names = ranks.tolist()
    return pd.DataFrame(
        {
            "iteration": iterations,
            "max_us": maxima,
            "slowest": [tuple(names[k] for k in np.flatnonzero(row == m)) for row, m in zip(values, maxima)],
        }
    )


def longest_leads(selection: Selection) -> tuple[np.ndarray, dict[int, float]]:
    """Per measured iteration the spread over ranks (max - min); per rank the median lead of its iterations as the
    single longest rank over the next one (a rank whose excess is its own leads its peers by itself)."""
    _, ranks, values = selection.wide()
    spread = values.max(axis=1) - values.min(axis=1)
    if values.shape[1] < 2:
        return spread, {}
    ordered = np.sort(values, axis=1)
    lead = ordered[:, -1] - ordered[:, -2]
    top = ranks[values.argmax(axis=1)]
    single = lead > 0  # a tie leads nobody
    return spread, {int(r): float(np.median(lead[single & (top == r)])) for r in np.unique(top[single])}


def summarize(values: np.ndarray, resamples: int, seed: int) -> dict[str, Any]:
    return {
        "median": percentile(values, 50),
        "p95": percentile(values, 95),
        "mean": float(np.mean(values)),
        "n": int(len(values)),
        "median_ci95": bootstrap_ci(values, 50, resamples, seed),
        "p95_ci95": bootstrap_ci(values, 95, resamples, seed),
    }


def rank_statistics(frame: pd.DataFrame, per_iter: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per rank over its measured samples; fraction_slowest counts ties as 1/k for each of k tied ranks."""
    keep = measured_mask(frame)
    rank = frame["rank"].to_numpy()[keep]
    us = frame["us"].to_numpy()[keep]
    del keep
    credit: dict[int, float] = {}
    for tied in per_iter["slowest"]:
        for r in tied:
            credit[r] = credit.get(r, 0.0) + 1.0 / len(tied)
    n_iter = max(len(per_iter), 1)
    out = {}
    for r in np.unique(rank):  # each rank's samples in the frame's order, as groupby("rank") gives them
        values = us[rank == r]
        out[str(int(r))] = {
            "median_us": percentile(values, 50),
            "p95_us": percentile(values, 95),
            "max_us": float(values.max()),
            "n": int(len(values)),
            "fraction_slowest": credit.get(int(r), 0.0) / n_iter,
        }
    return out


def akl_numbers(frame: pd.DataFrame, last_n: int) -> dict[str, Any]:
    """The figures ascend-kernel-lab users know (docs/formats.md §3), labelled as such. With ``last_n`` the last
    ``last_n`` measured samples of each rank are found on arrays and only those rows become a frame (the figures
    are computed on it as on the whole selection: the same numbers)."""
    keep = measured_mask(frame)
    if last_n == 0:
        measured = frame[keep].sort_values("iteration")
        selected = measured
    else:
        rank, iteration = frame["rank"].to_numpy(), frame["iteration"].to_numpy()
        picked = []
        for r in np.unique(rank[keep]):  # a rank's rows, one rank at a time: no array of all measured rows
            rows = np.flatnonzero(keep & (rank == r))
            picked.append(rows[np.argsort(iteration[rows], kind="stable")[-last_n:]])  # each iteration once
        rows = np.concatenate(picked) if picked else np.zeros(0, dtype=np.intp)  # no measured row: no figures
        rows = rows[np.lexsort((rows, iteration[rows]))]  # by iteration, then the frame's order, as the sort gave
        selected = frame.iloc[rows][["rank", "iteration", "us"]]
    rank_means = selected.groupby("rank")["us"].mean()
    ranks = frame["rank"].nunique()
    complete = selected.groupby("iteration").filter(lambda g: g["rank"].nunique() == ranks)
    launch_max = complete.groupby("iteration")["us"].max()
    return {
        "last_n": last_n,
        "mean_of_rank_means_us": float(rank_means.mean()) if len(rank_means) else None,
        "mean_of_launch_max_us": float(launch_max.mean()) if len(launch_max) else None,
        "definition": (
            "ascend-kernel-lab convention: per rank the mean of its last N measured samples, then the unweighted mean "
            "over ranks; and the mean over complete selected launches of "
            "the max across ranks. Not the per-iteration-max median above."
        ),
    }


def name_slowest(scope: Mapping[str, Any], measurement: str | None, min_excess_us: float) -> dict[str, Any]:
    """Name the slowest rank only when its excess is its own: longest in at least half of the iterations, by more
    than ``min_excess_us`` over the next rank, in a scope that excludes the entry barrier. A kernel is a collective:
    in the event scope the longest rank is the one that waited longest, and ranks waiting inside the kernel for the
    same peer share one excess."""
    slowest = scope.get("slowest_rank")
    if not slowest:
        return {"rank": None, "why": "no per-iteration statistics"}
    rank, share, lead = slowest["rank"], 100 * slowest["fraction"], slowest.get("lead_us_median")
    tied = slowest.get("ranks") or [rank]
    if len(tied) > 1:
        return {
            "rank": None,
            "why": (
                f"ranks {', '.join(map(str, tied))} are tied for the longest "
                f"({share:.0f}% of iterations each): no single rank is named"
            ),
        }
    if measurement == "event":
        return {
            "rank": None,
            "why": (
                f"event scope includes the entry barrier: rank {rank}, longest in {share:.0f}% of "
                "iterations, is the one that waited longest (a late rank is the shortest here); not named"
            ),
        }
    if slowest["fraction"] < 0.5:
        return {
            "rank": None,
            "why": f"no rank is the longest in half the iterations (most often rank {rank}, {share:.0f}%)",
        }
    if lead is None or lead <= min_excess_us:
        return {
            "rank": None,
            "why": (
                f"rank {rank} is the longest in {share:.0f}% of iterations, but by a median of only {lead or 0:.1f} us "
                "over the next rank: the excess is shared (ranks waiting "
                "inside the kernel for the same peer), not its own"
            ),
        }
    boundary = "" if measurement == "kernel" else " (boundary unspecified: legacy CSV)"
    return {
        "rank": rank,
        "why": (
            f"rank {rank} is the longest in {share:.0f}% of iterations, by a "
            f"median of {lead:.1f} us over the next rank: its own excess{boundary}"
        ),
    }


def latency_statistics(
    frame: pd.DataFrame, resamples: int, seed: int, akl_last_n: int, tail_ci_ratio: float
) -> dict[str, Any]:
    """All statistics of one scope (kernel or full API) as a JSON-ready dict."""
    import pandas as pd

    selection = select_measured(frame)
    per_iter = (
        per_iteration_max(selection)
        if len(selection.measured)
        else pd.DataFrame(columns=["iteration", "max_us", "slowest"])
    )
    result: dict[str, Any] = {
        "ranks": len(selection.ranks),
        "iterations_total": int(frame["iteration"].nunique()),
        "warmup_iterations": int(frame.groupby("iteration")["warmup"].all().sum()),
        "iterations_measured": int(len(per_iter)),
        "excluded_mixed_warmup": selection.excluded_mixed_warmup,
        "excluded_incomplete": selection.excluded_incomplete,
        "per_rank": rank_statistics(frame, per_iter),
        "akl": akl_numbers(frame, akl_last_n),
        "warnings": [],
    }
    if selection.excluded_mixed_warmup:
        result["warnings"].append(
            f"{selection.excluded_mixed_warmup} iteration(s) have mixed warm-up labels across ranks and were left out"
        )
    if selection.excluded_incomplete:
        result["warnings"].append(
            f"{selection.excluded_incomplete} iteration(s) lack a measured sample on some rank and were left out"
        )
    if len(per_iter) == 0:
        result["per_iteration_max_us"] = None
        result["slowest_rank"] = None
        result["warnings"].append("no iteration has a measured sample on every rank: no per-iteration statistics")
        return result
    maxima = per_iter["max_us"].to_numpy()
    result["per_iteration_max_us"] = summarize(maxima, resamples, seed)
    # A tie at the top fraction is named in full (rank None), as per-iteration ties are shared: never the lowest rank.
    best = max(v["fraction_slowest"] for v in result["per_rank"].values())
    tied = sorted(
        int(r) for r, v in result["per_rank"].items() if np.isclose(v["fraction_slowest"], best, rtol=0, atol=1e-12)
    )
    result["slowest_rank"] = {"rank": tied[0] if len(tied) == 1 else None, "ranks": tied, "fraction": best}
    spread, leads = longest_leads(selection)
    result["per_iteration_spread_us"] = {
        "median": percentile(spread, 50),
        "p95": percentile(spread, 95),
        "definition": "per iteration: max - min over ranks",
    }
    result["slowest_rank"]["lead_us_median"] = leads.get(tied[0]) if len(tied) == 1 else None
    stats = result["per_iteration_max_us"]
    lo, hi = stats["p95_ci95"]
    if stats["median"] > 0 and np.isfinite(lo) and (hi - lo) / stats["median"] > tail_ci_ratio:
        result["tail_hint"] = (
            f"the P95 CI [{lo:.1f}, {hi:.1f}] us spans {100 * (hi - lo) / stats['median']:.0f}% of the median: "
            "the tail is not stable with this many samples; raise baseline.iterations or rerun"
        )
    else:
        result["tail_hint"] = None
    return result
