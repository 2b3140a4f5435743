"""The regression gate: the newest run of a series against the comparable runs before it, one metric at a time.

Per metric (docs/history.md has the reasoning and the sources):
- the reference is the runs since the last change point of the earlier series (ruptures' PELT on the l2 cost, its
  penalty 2 sigma^2 log n with sigma the robust spread of successive differences), or since
  ``history.reference_since``;
- fewer than ``min_runs`` reference runs: ``inconclusive``, naming how many more are needed;
- otherwise the newest value is tested against the reference by a t prediction interval: the noise is the
  run-to-run spread of the reference (sample standard deviation), widened by the newest run's own CI, with
  Welch-Satterthwaite degrees of freedom;
- the p values of all gated metrics are Holm-corrected (family-wise alpha ``history.alpha``);
- a change is called only when it is significant after Holm and at least ``history.min_change`` of the metric's
  reference (a floor under the noise: a run-to-run spread of 0.01% would otherwise flag a 0.05% change);
- ``smallest_visible`` is the change that would have been called: the larger of the noise threshold and the floor.
The run's verdict is the worst of its gated metrics': regressed, improved, inconclusive (the kernel-scope headline
could not be decided), unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from dispatchprof.analysis.tdist import t_quantile, t_two_sided  # scipy.special: scipy.stats costs the job ~1 s

HEADLINE = "latency.kernel.median"


@dataclass(frozen=True)
class GateSettings:
    alpha: float = 0.01
    min_runs: int = 5
    min_change: float = 0.01
    reference_since: str | None = None
    exclude: tuple[str, ...] = ()
    window: int = 100  # the most recent comparable runs the gate looks at (conbench: the last 100)


def change_points(values: Sequence[float], min_size: int = 5) -> list[int]:
    """Indices where a new segment starts (0 excluded), by PELT with a noise-scaled BIC penalty. A segment holds at
    least ``min_size`` runs (history.min_runs): a shorter one could not be a reference, and on 5 A/A runs a
    2-run segment is found by chance."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 * min_size:
        return []
    sigma = 1.4826 * np.median(np.abs(np.diff(x) - np.median(np.diff(x)))) / math.sqrt(2)
    if not np.isfinite(sigma) or sigma <= 0:
        sigma = float(np.std(x)) or 1.0
    import ruptures

    # KernelCPD with the linear kernel is PELT on the l2 cost, in ruptures' C code (its Python Pelt: 0.3 s on 100 runs)
    detector = ruptures.KernelCPD(kernel="linear", min_size=min_size, jump=1).fit(x.reshape(-1, 1))
    ends = detector.predict(pen=2 * sigma**2 * math.log(len(x)))
    return [int(e) for e in ends[:-1]]


def decide(reference: np.ndarray, newest: float, newest_se: float, better: str, floor: float) -> dict[str, Any]:
    """One metric's test before the correction across metrics: the change, its p value and the noise threshold."""
    n = len(reference)
    mean = float(np.mean(reference))
    spread = float(np.std(reference, ddof=1)) if n > 1 else 0.0
    between, own = spread**2 * (1 + 1 / n), newest_se**2
    scale = math.sqrt(between + own)
    # Welch-Satterthwaite: the reference's spread has n - 1 degrees of freedom, the newest run's CI (a bootstrap over
    # its launches) is taken as known; a reference of one value (a cause absent from every earlier run) leaves the
    # newest run's own CI, and the normal tail
    df = (n - 1) * (1 + own / between) ** 2 if between > 0 else math.inf
    change = newest - mean
    if scale > 0:
        p = t_two_sided(change / scale, max(df, 1)) if not math.isnan(change) else math.nan  # as scipy.stats
    else:
        p = 0.0 if change != 0 else 1.0
    worse = change > 0 if better == "lower" else change < 0
    return {
        "reference": mean,
        "newest": newest,
        "change": change,
        "p": p,
        "scale": scale,
        "worse": worse,
        "floor": floor,
        "spread": spread,
        "runs": n,
        "df": df if math.isfinite(df) else None,  # None: the normal tail (JSON has no infinity)
    }


def _holm(pvalues: list[float], alpha: float) -> list[tuple[bool, float]]:
    """(rejected, the per-test alpha Holm used) for each p value, in the input order."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    out: list[tuple[bool, float]] = [(False, alpha)] * len(pvalues)
    still = True
    for rank, i in enumerate(order):
        level = alpha / (len(pvalues) - rank)
        still = still and pvalues[i] <= level
        out[i] = (still, level)
    return out


def _verdict(test: dict[str, Any], rejected: bool, level: float) -> dict[str, Any]:
    threshold = -t_quantile(level / 2, max(test["df"] or math.inf, 1)) * test["scale"]
    smallest = max(threshold, test["floor"])
    big = abs(test["change"]) >= test["floor"]
    if rejected and big:
        verdict = "regressed" if test["worse"] else "improved"
    elif abs(test["change"]) < smallest:
        verdict = "unchanged"
    else:
        verdict = "inconclusive"
    return {**test, "verdict": verdict, "smallest_visible": smallest, "alpha": level}


def _comparable_runs(runs: pd.DataFrame, newest: str) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Of ``runs`` (one row per run), those comparable with ``newest`` (same kernel, shape, cluster, toolchain,
    chip), and the others with the first key that differs."""
    import json

    mine = json.loads(runs.loc[newest, "comparable"])
    others = []
    for run, text in runs["comparable"].items():
        theirs = json.loads(text)
        differing = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        if differing:
            key = differing[0]
            others.append({"run_id": run, "differs_in": key, "newest": mine.get(key), "theirs": theirs.get(key)})
    return runs.drop(index=[o["run_id"] for o in others]), others


def _kept_runs(runs: pd.DataFrame, settings: GateSettings, newest: str) -> list[str]:
    """Run ids in time order: excluded runs and runs before reference_since left out, at most ``window`` earlier
    runs, the newest always kept, last."""
    order = runs["recorded_at"].sort_values(kind="stable")
    ids = list(order.index)
    keep = [r for r in ids if r == newest or r not in settings.exclude]
    since = settings.reference_since
    if since:
        start = ids.index(since) if since in ids else None
        keep = [r for r in keep if r == newest or (order[r] >= since if start is None else ids.index(r) >= start)]
    return [r for r in keep if r != newest][-settings.window :] + [newest]


def _ordered_table(rows: pd.DataFrame, keep: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """run x metric values of the ``keep`` runs in their order; a cause absent from a run costs it nothing there.
    Also each metric's kind and direction."""
    kept = rows[rows["run_id"].isin(keep)].drop_duplicates(["run_id", "metric"])
    table = kept.pivot(index="run_id", columns="metric", values="value").reindex(keep)
    info = kept.drop_duplicates("metric").set_index("metric")[["kind", "better"]]
    causes = [m for m in table.columns if info.loc[m, "kind"] == "cause"]
    table[causes] = table[causes].fillna(0.0)
    return table, info


def _newest_se(rows: pd.DataFrame, newest: str) -> dict[str, float]:
    mine = rows[rows["run_id"] == newest]
    width = (mine["ci_high"] - mine["ci_low"]).fillna(0.0).clip(lower=0.0)
    return dict(zip(mine["metric"], (width / 3.92).astype(float)))


def _test_metric(
    column: pd.Series, kind: str, better: str, se: float, headline_ref: float, settings: GateSettings
) -> dict[str, Any]:
    earlier = column.iloc[:-1].dropna()
    values = earlier.to_numpy(dtype=float)
    cuts = change_points(values, settings.min_runs)
    reference = values[cuts[-1] :] if cuts else values
    segment = {
        "change_points": [str(i) for i in earlier.index[cuts]],
        "since": earlier.index[cuts[-1]] if cuts else None,
    }
    newest = float(column.iloc[-1]) if pd.notna(column.iloc[-1]) else 0.0
    if len(reference) < settings.min_runs:
        more = settings.min_runs - len(reference)
        return {
            "verdict": "inconclusive",
            "newest": newest,
            "runs": int(len(reference)),
            "why": f"{more} more comparable run{'s' * (more != 1)} needed (history.min_runs {settings.min_runs})",
            **segment,
        }
    # a cause's cost (often 0 before it appeared) and a zero-mean metric take the kernel latency as their scale
    own = float(np.mean(reference))
    floor = settings.min_change * abs(headline_ref if kind == "cause" or own == 0 else own)
    return {**decide(reference, newest, se, better, floor), **segment}


def gate(rows: pd.DataFrame, newest: str, settings: GateSettings) -> dict[str, Any]:
    """The newest run's verdict over the comparable series in ``rows`` (the store's metric and cause rows)."""
    if not (rows["run_id"] == newest).any():
        return {"verdict": "inconclusive", "why": f"run {newest} is not in the history", "metrics": []}
    runs = rows.drop_duplicates("run_id").set_index("run_id")[["recorded_at", "comparable"]]
    same, others = _comparable_runs(runs, newest)
    keep = _kept_runs(same, settings, newest)
    table, info = _ordered_table(rows, keep)
    se = _newest_se(rows, newest)
    headline = table[HEADLINE].iloc[:-1].dropna() if HEADLINE in table else pd.Series(dtype=float)
    headline_ref = float(headline.mean()) if len(headline) else float(table.get(HEADLINE, pd.Series([1.0])).iloc[-1])
    gated = [m for m in table.columns if info.loc[m, "better"] in ("lower", "higher")]
    tests = {
        m: _test_metric(table[m], info.loc[m, "kind"], info.loc[m, "better"], se.get(m, 0.0), headline_ref, settings)
        for m in gated
    }
    decided = [m for m, t in tests.items() if "p" in t]
    for m, (rejected, level) in zip(decided, _holm([tests[m]["p"] for m in decided], settings.alpha)):
        tests[m] = _verdict(tests[m], rejected, level)
    metrics = [{"metric": m, "kind": info.loc[m, "kind"], **tests[m]} for m in gated]
    for entry in metrics:
        if entry["verdict"] in ("regressed", "improved"):
            entry["explained_by"] = explained_by(
                table, info, entry["metric"], entry.get("since"), settings.min_change, headline_ref
            )
    return {
        "verdict": run_verdict(metrics),
        "compared_runs": int(len(table) - 1),
        "not_comparable": others,
        "change_points": sorted({c for m in metrics for c in m.get("change_points", [])}),
        "metrics": metrics,
        "trend": trend(rows, keep, runs),
    }


def _number(value: Any) -> float | None:
    return float(value) if value is not None and pd.notna(value) else None


def trend(rows: pd.DataFrame, keep: list[str], runs: pd.DataFrame) -> dict[str, Any]:
    """The kernel-scope headline of the compared runs in time order, with each run's CI: the report's picture."""
    mine = rows[(rows["metric"] == HEADLINE) & rows["run_id"].isin(keep)].drop_duplicates("run_id")
    by_run = mine.set_index("run_id")
    points = [
        {
            "run_id": run,
            "recorded_at": str(runs.loc[run, "recorded_at"]),
            "value": _number(by_run.loc[run, "value"]),
            "ci_low": _number(by_run.loc[run, "ci_low"]),
            "ci_high": _number(by_run.loc[run, "ci_high"]),
        }
        for run in keep
        if run in by_run.index
    ]
    return {"metric": HEADLINE, "unit": "us", "runs": points}


def run_verdict(metrics: list[dict[str, Any]]) -> str:
    verdicts = {m["verdict"] for m in metrics}
    headline = next((m["verdict"] for m in metrics if m["metric"] == HEADLINE), "inconclusive")
    for word in ("regressed", "improved"):
        if word in verdicts:
            return word
    return "inconclusive" if headline == "inconclusive" else "unchanged"


def explained_by(
    table: pd.DataFrame, info: pd.DataFrame, metric: str, since: Any, min_change: float, kernel_us: float
) -> list[dict[str, Any]]:
    """The layers' numbers that moved with ``metric``: causes first, then the rest, the largest move first; a
    number moves when the newest run is more than 3 run-to-run spreads from its reference mean and by at least the
    gate's floor (history.min_change of the kernel median ``kernel_us`` for a time; of its own reference for a
    rate), so that a 5 us wobble of a busy time is not named beside a 140 us move."""
    start = list(table.index).index(since) if since in table.index else 0
    reference = table.iloc[start:-1]
    moved = []
    for other in table.columns:
        # per-rank latencies are recorded, not explanations: in a coupled kernel every rank's end moves together
        explains = info.loc[other, "kind"] == "cause" or (
            info.loc[other, "kind"] == "layer" and not other.startswith("latency.")
        )
        if other == metric or not explains or not len(reference):
            continue
        values = reference[other].dropna()
        newest = table[other].iloc[-1]
        if pd.isna(newest) or not len(values):
            continue
        change = float(newest - values.mean())
        spread = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        timed = other.endswith("_us") or info.loc[other, "kind"] == "cause"
        floor = min_change * abs(kernel_us if timed else values.mean())
        if abs(change) > max(3 * spread, floor, 1e-12):
            moved.append(
                {
                    "metric": other,
                    "kind": info.loc[other, "kind"],
                    "reference": float(values.mean()),
                    "newest": float(newest),
                    "change": change,
                }
            )
    moved.sort(key=lambda e: (e["kind"] != "cause", -abs(e["change"])))
    return moved[:5]
