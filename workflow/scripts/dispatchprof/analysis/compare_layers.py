"""The A/B comparison in every layer both sides have: one row per metric, each with A, B, B - A, a 95% CI and one
of four answers (issue 59).

One mechanism: a ``Row`` per metric, and one function per layer that turns the two sides' tables into rows
(``latency_rows``, ``cost_rows``, ``links_rows``, ``pmu_rows``, ``pcsampling_rows``, ``debugclock_rows``,
``precision_rows``). A layer one side lacks is one row "not comparable: <why>", never dropped or zero. ``decide``
then gives every tested row its answer:

- ``improved`` / ``regressed``: the difference survives Holm's step-down correction at ``ALPHA`` over every tested
  row of the comparison (so an A/A comparison of many rows flags none in at least 1 - ALPHA of runs, whatever the
  rows' correlation); the direction says which (``better``: lower or higher is better);
- ``changed``: the same for a quantity with no better direction (a pipe ratio);
- ``unchanged``: not flagged, and the (unadjusted) 95% CI lies inside the row's equivalence margin;
- ``inconclusive``: neither; the row's note says what would decide it.

Rows also answer ``appeared`` / ``gone`` (a cost cause on one side only), ``pass`` / ``fail`` (precision) and
``not comparable``. p-values: Welch's t over the units of a side (launches, ranks or repeats, never cores alone: the
cores of one launch share its time) where there are units, else a normal approximation from the CI's width.

The equivalence margin of a row is ``max(MARGIN_FLOOR * |A|, measured noise)``: the noise is the spread between the
units (repeats for latency; launches for PMU and DebugClock; ranks for PC sampling). MARGIN_FLOOR (1%) is
criterion's noise floor: below it a change is not called a change even with perfect measurements.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from dispatchprof.analysis.tdist import t_quantile, t_two_sided, z_quantile, z_two_sided

LAYERS = ("precision", "latency", "cost", "links", "pmu", "pcsampling", "debugclock")
ANSWERS = ("improved", "regressed", "unchanged", "inconclusive")
FLAGGED = ("improved", "regressed", "changed", "appeared", "gone")
ALPHA = 0.05  # family-wise error rate of one comparison (Holm over its tested rows)
MARGIN_FLOOR = 0.01  # of A's value: the smallest change a row ever calls a change (criterion's 1% noise floor)
MIN_UNITS = 4  # benchstat's minimum per side to detect a difference at 0.05: what a one-unit side is told to reach
POWER_Z = z_quantile(1 - ALPHA / 2) + z_quantile(0.8)  # 80% power at ALPHA (two-sided)
PMU_METRICS = {
    "busy_us": ("busy_us_high", "us", "lower"),
    "aiv_icache_miss_rate": ("aiv_icache_miss_rate", "", "lower"),
}
SINGULAR = {"launches": "launch", "ranks": "rank", "repeats": "repeat", "units": "unit"}
HOT_LINES = 5  # PC sampling: the hot lines whose share moved most


@dataclass
class Row:
    """One metric of one layer on both sides. ``p``, ``margin``, ``better`` and ``hint`` feed ``decide``."""

    layer: str
    metric: str
    unit: str
    a: float | str | None = None
    b: float | str | None = None
    difference: float | None = None
    ci95: tuple[float, float] | None = None
    verdict: str | None = None
    role: str | None = None
    note: str | None = None
    better: str | None = "lower"
    p: float | None = None
    margin: float | None = None
    hint: str | None = None
    units: tuple[int, int] | None = None

    @property
    def key(self) -> str:
        """How an expectation names the row: layer.[role.]metric (``pmu.URMASendToken.aiv_icache_miss_rate``)."""
        return ".".join(p for p in (self.layer, self.role, self.metric) if p)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("hint",)}
        out["ci95"] = list(self.ci95) if self.ci95 is not None else None
        out["units"] = list(self.units) if self.units is not None else None
        out["key"] = self.key
        return {k: v for k, v in out.items() if v is not None or k in ("a", "b", "difference", "ci95")}


@dataclass
class Side:
    """What one side of a comparison has, per layer (one entry per repeat), and why it lacks the others."""

    label: str
    latency: list[pd.DataFrame] = field(default_factory=list)
    baseline: list[dict[str, Any]] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    pmu: list[pd.DataFrame] = field(default_factory=list)
    pcsampling: list[dict[str, Any]] = field(default_factory=list)
    debugclock: list[pd.DataFrame] = field(default_factory=list)
    precision: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)


def not_comparable(layer: str, why: str, metric: str = "") -> Row:
    return Row(layer, metric, "", verdict="not comparable", note=f"not comparable: {why}", better=None)


# ---- statistics shared by the layers ------------------------------------------------------------------------------


def welch(layer: str, metric: str, unit: str, a: Sequence[float], b: Sequence[float], **kw: Any) -> Row:
    """A row from the units of each side: A and B their means, CI and p from Welch's t (a side with fewer than 2
    units: no CI, and the hint says how many would decide)."""
    xa, xb = (np.asarray([v for v in s if v is not None and np.isfinite(v)], dtype=float) for s in (a, b))
    what = kw.pop("what", "units")
    row = Row(layer, metric, unit, units=(len(xa), len(xb)), **kw)
    if not len(xa) or not len(xb):
        return replace(
            row, verdict="not comparable", note=f"not comparable: no {what} on {'A' if not len(xa) else 'B'}"
        )
    ma, mb = float(xa.mean()), float(xb.mean())
    row = replace(row, a=ma, b=mb, difference=mb - ma)
    if len(xa) < 2 or len(xb) < 2:
        return replace(
            row,
            hint=f"one {SINGULAR.get(what, what)} on a side: its spread is not measured; at least {MIN_UNITS} {what} per side would decide",
        )
    va, vb = xa.var(ddof=1) / len(xa), xb.var(ddof=1) / len(xb)
    se = math.sqrt(va + vb)
    noise = math.sqrt((xa.var(ddof=1) + xb.var(ddof=1)) / 2)
    margin = max(MARGIN_FLOOR * abs(ma), noise)
    if se == 0:
        return replace(row, ci95=(mb - ma, mb - ma), p=1.0 if mb == ma else 0.0, margin=margin)
    df = (va + vb) ** 2 / (va**2 / (len(xa) - 1) + vb**2 / (len(xb) - 1))
    t = t_quantile(0.975, round(df, 2))
    d = mb - ma
    return replace(
        row,
        ci95=(d - t * se, d + t * se),
        p=t_two_sided(d / se, df),
        margin=margin,
        hint=needed_units(d, noise, what),
    )


def needed_units(difference: float, noise: float, what: str) -> str | None:
    """How many units per side would detect a difference this size at ALPHA with 80% power (normal approximation)."""
    if not difference or not noise:
        return None
    n = math.ceil(2 * (POWER_Z * noise / abs(difference)) ** 2)
    return f"about {max(n, 2)} {what} per side would decide a difference of this size (80% power)"


def from_ci(row: Row) -> Row:
    """p of a row that has a difference and a 95% CI but no units: normal approximation from the CI's width."""
    if row.ci95 is None or row.difference is None:
        return row
    se = (row.ci95[1] - row.ci95[0]) / (2 * z_quantile(0.975))
    p = 1.0 if se <= 0 and not row.difference else 0.0 if se <= 0 else z_two_sided(row.difference / se)
    return replace(row, p=p)


def exact(layer: str, metric: str, unit: str, a: float | None, b: float | None, **kw: Any) -> Row:
    """A row of a quantity without noise (bytes, a bound from bytes and peaks): equal or not, no test."""
    row = Row(layer, metric, unit, a=a, b=b, **kw)
    if a is None or b is None:
        return replace(row, verdict="not comparable", note=f"not comparable: no value on {'A' if a is None else 'B'}")
    d = float(b) - float(a)
    verdict = "unchanged" if d == 0 else direction(d, row.better)
    return replace(row, difference=d, ci95=(d, d), verdict=verdict, note=row.note or "exact: no noise")


def direction(difference: float, better: str | None) -> str:
    if better is None:
        return "changed"
    return "improved" if (difference < 0) == (better == "lower") else "regressed"


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down: the i-th smallest p (0-based) is rejected when it and every smaller one is at most
    alpha / (m - i). Controls the family-wise error rate at alpha under any dependence between the rows."""
    order = np.argsort(p_values, kind="stable")
    rejected = [False] * len(p_values)
    for i, idx in enumerate(order):
        if p_values[idx] > alpha / (len(p_values) - i):
            break
        rejected[idx] = True
    return rejected


def decide(rows: Sequence[Row], alpha: float = ALPHA) -> list[Row]:
    """Every row without an answer gets one (module docstring); the answered ones are kept as they are."""
    tested = [i for i, r in enumerate(rows) if r.verdict is None and r.p is not None]
    flagged = dict(zip(tested, holm([rows[i].p for i in tested], alpha))) if tested else {}
    out = []
    for i, r in enumerate(rows):
        if r.verdict is not None:
            out.append(r)
        elif flagged.get(i):
            out.append(replace(r, verdict=direction(r.difference or 0.0, r.better)))
        elif r.ci95 is not None and r.margin is not None and -r.margin <= r.ci95[0] and r.ci95[1] <= r.margin:
            out.append(replace(r, verdict="unchanged"))
        else:
            why = r.hint or ("no CI" if r.ci95 is None else "the CI reaches beyond the equivalence margin")
            out.append(replace(r, verdict="inconclusive", note="; ".join(n for n in (r.note, why) if n)))
    return out


# ---- the layers ---------------------------------------------------------------------------------------------------


def precision_rows(a: Side, b: Side) -> list[Row]:
    """Pass or fail per side (the comparison is refused before this when one side failed)."""
    lacking = [f"{s.label}: {s.missing['precision']}" for s in (a, b) if "precision" in s.missing]
    if lacking:  # a recorded side without its correctness status
        return [not_comparable("precision", "; ".join(lacking), "pass")]
    states = [s.precision[0] if s.precision and len(set(s.precision)) == 1 else ",".join(s.precision) for s in (a, b)]
    if "disabled" in states:
        return [not_comparable("precision", "precision was not checked (analyze mode)", "pass")]
    verdict = "pass" if states == ["ok", "ok"] else "fail"
    return [Row("precision", "pass", "", a=states[0], b=states[1], verdict=verdict, better=None)]


def latency_rows(result: Mapping[str, Any]) -> list[Row]:
    """Today's numbers (analysis/compare.py's result) as rows: each scope's median and P95 of the per-iteration max,
    the kernel scope's per-rank medians."""
    rows = []
    for scope in ("kernel", "api"):
        s = result.get(scope) or {}
        if not s.get("per_iteration_max_median"):
            rows.append(not_comparable("latency", s.get("reason", f"{scope} scope missing"), f"{scope}.median"))
            continue
        noise = repeat_noise(s.get("repeat_medians", {}))
        for stat, key in (("median", "per_iteration_max_median"), ("p95", "per_iteration_max_p95")):
            rows.append(latency_row(f"{scope}.{stat}", s[key], noise))
    for rank, d in (result.get("per_rank_median") or {}).items():
        rows.append(latency_row(f"kernel.rank{rank}.median", d, None))
    return rows


def latency_row(metric: str, d: Mapping[str, Any], noise: float | None) -> Row:
    if d.get("ci95") is None:
        return not_comparable("latency", "fewer than 2 iterations on a side", metric)
    margin = max(MARGIN_FLOOR * abs(d["a"]), noise or 0.0)
    reps = d.get("repeats")
    return from_ci(
        Row(
            "latency",
            metric,
            "us",
            a=d["a"],
            b=d["b"],
            difference=d["difference"],
            ci95=tuple(d["ci95"]),
            margin=margin,
            units=tuple(reps) if reps else None,
        )
    )


def repeat_noise(medians: Mapping[str, Sequence[float]]) -> float | None:
    """The spread between repeats of one side (standard deviation of the repeat medians, pooled over the sides
    with 2 or more repeats); None with one repeat per side."""
    variances = [(len(m) - 1, float(np.var(m, ddof=1))) for m in medians.values() if len(m) >= 2]
    if not variances:
        return None
    dof = sum(d for d, _ in variances)
    return math.sqrt(sum(d * v for d, v in variances) / dof)


def cause_key(cause: Mapping[str, Any]) -> tuple[str, tuple[int, ...]]:
    return str(cause.get("evidence")), tuple(
        sorted(int(r) for r in cause.get("ranks") or [cause.get("rank")] if r is not None)
    )


def cost_rows(a: Side, b: Side) -> list[Row]:
    """Every cause of either side (matched by kind and ranks), its cost per launch on each side; appeared / gone on
    one side only; and always the group's excess over its fastest ranks."""
    rows = [
        excess_row(a, b, "period_us_per_launch", "excess.period"),
        excess_row(a, b, "timed_us_per_launch", "excess.timed"),
    ]
    ca, cb = causes_of(a), causes_of(b)
    for key in sorted(set(ca) | set(cb)):
        rows.append(cause_row(key, ca.get(key, []), cb.get(key, [])))
    return rows


def causes_of(side: Side) -> dict[tuple[str, tuple[int, ...]], list[Mapping[str, Any]]]:
    out: dict[tuple[str, tuple[int, ...]], list[Mapping[str, Any]]] = {}
    for stats in side.timeline:
        for cause in stats.get("causes") or []:
            out.setdefault(cause_key(cause), []).append(cause)
    return out


def cause_row(key: tuple[str, tuple[int, ...]], a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> Row:
    kind, ranks = key
    metric = f"{kind}.ranks{'-'.join(map(str, ranks))}"
    cost = [float(c["cost_us_per_launch"]) for c in (a or b) if c.get("cost_us_per_launch") is not None]
    mean = float(np.mean(cost)) if cost else None
    if not a or not b:
        ci = next((tuple(c["cost_ci_us"]) for c in (a or b) if c.get("cost_ci_us")), None)
        verdict = "appeared" if not a else "gone"
        where = "B" if not a else "A"
        return Row(
            "cost",
            metric,
            "us/launch",
            a=None if not a else mean,
            b=None if not b else mean,
            difference=(mean if not a else -mean) if mean is not None else None,
            ci95=(ci if not a else (-ci[1], -ci[0])) if ci else None,
            verdict=verdict,
            note=f"{kind} of rank(s) {', '.join(map(str, ranks))} on {where} only; its cost per launch on {where}",
        )
    if len(a) >= 2 and len(b) >= 2:
        return welch(
            "cost",
            metric,
            "us/launch",
            [c["cost_us_per_launch"] for c in a],
            [c["cost_us_per_launch"] for c in b],
            what="repeats",
        )
    return combined_ci("cost", metric, "us/launch", a[0], b[0], "cost_us_per_launch", "cost_ci_us")


def combined_ci(
    layer: str, metric: str, unit: str, a: Mapping[str, Any], b: Mapping[str, Any], value: str, ci: str, **kw: Any
) -> Row:
    """The difference of two one-run values, each with its own 95% CI: the sides' standard errors (from the CIs'
    widths) add in quadrature."""
    va, vb = a.get(value), b.get(value)
    if va is None or vb is None:
        return exact(layer, metric, unit, va, vb, **kw)
    d = float(vb) - float(va)
    z = z_quantile(0.975)
    ses = [(c[1] - c[0]) / (2 * z) if c else None for c in (a.get(ci), b.get(ci))]
    row = Row(layer, metric, unit, a=float(va), b=float(vb), difference=d, margin=MARGIN_FLOOR * abs(float(va)), **kw)
    if None in ses:
        return replace(row, hint="a side has no CI")
    se = math.hypot(*ses)
    return from_ci(replace(row, ci95=(d - z * se, d + z * se)))


def excess_row(a: Side, b: Side, key: str, metric: str) -> Row:
    """The group's excess over its fastest ranks (the cost account's total), per launch; mean over repeats."""
    values = [
        [s["straggler"]["excess"].get(key) for s in side.timeline if (s.get("straggler") or {}).get("excess")]
        for side in (a, b)
    ]
    if all(len(v) >= 2 for v in values):
        return welch("cost", metric, "us/launch", values[0], values[1], what="repeats")
    xa, xb = (
        float(np.mean([x for x in v if x is not None])) if any(x is not None for x in v) else None for v in values
    )
    row = Row("cost", metric, "us/launch", a=xa, b=xb, margin=MARGIN_FLOOR * abs(xa or 0.0))
    if xa is None or xb is None:
        return replace(
            row, verdict="not comparable", note="not comparable: no cost account on a side (timeline placeholder)"
        )
    return replace(row, difference=xb - xa, hint="one run per side: the excess has no CI (the causes' costs do)")


def links_rows(a: Side, b: Side) -> list[Row]:
    """Bytes per link class, the bound they set, and the group efficiency (bound / kernel median, with its CI)."""
    ba, bb = (side.baseline[0].get("bandwidth") or {} for side in (a, b))
    if not ba or not bb:
        return [not_comparable("links", f"no bandwidth account on {'A' if not ba else 'B'}")]
    rows = []
    for cls in sorted(set(ba.get("links") or {}) | set(bb.get("links") or {})):
        la, lb = (x.get("links", {}).get(cls, {}) for x in (ba, bb))
        rows.append(
            exact(
                "links",
                f"{cls}.bytes_per_launch",
                "B",
                la.get("bytes_per_launch"),
                lb.get("bytes_per_launch"),
                better=None,
            )
        )
    rows.append(exact("links", "bound_us", "us", ba.get("bound_us"), bb.get("bound_us")))
    rows.append(combined_ci("links", "efficiency", "", ba, bb, "efficiency", "efficiency_ci95", better="higher"))
    return rows


def launch_values(frame: pd.DataFrame, column: str) -> list[float]:
    """Per launch (of a repeat): the median over its cores. Launches are the unit, never cores alone."""
    if column not in frame or frame[column].isna().all():
        return []
    return frame.groupby(["_repeat", "launch"])[column].median().dropna().tolist()


def pmu_rows(a: Side, b: Side) -> list[Row]:
    """Per role: busy time (pipes active, polling's no-pipe time left out), the I-cache miss rate and each parsed
    pipe ratio; and the kernel's aiv_time (it runs until the kernel ends, so it is the kernel's row, not a role's)."""
    fa, fb = (pd.concat(side.pmu, ignore_index=True) for side in (a, b))
    rows = [
        welch(
            "pmu",
            "aiv_time_us",
            "us",
            launch_values(fa, "aiv_time_us"),
            launch_values(fb, "aiv_time_us"),
            what="launches",
        )
    ]
    ratios = sorted(c for c in set(fa.columns) & set(fb.columns) if c.startswith("aiv_") and c.endswith("_ratio"))
    metrics = {**PMU_METRICS, **{c: (c, "", None) for c in ratios}}
    for role in sorted(set(fa["role"].dropna()) | set(fb["role"].dropna())):
        ra, rb = fa[fa["role"] == role], fb[fb["role"] == role]
        for metric, (column, unit, better) in metrics.items():
            rows.append(
                welch(
                    "pmu",
                    metric,
                    unit,
                    launch_values(ra, column),
                    launch_values(rb, column),
                    role=role,
                    better=better,
                    what="launches",
                )
            )
    return rows


def pcsampling_rows(a: Side, b: Side) -> list[Row]:
    """Stall share per reason, with both denominators (all samples; not issued), ranks as units; and the hot lines
    whose share of the samples moved most (one value per side: no CI)."""
    rows = []
    for denominator in ("all_samples", "not_issue"):
        va, vb = (per_rank_shares(side, denominator) for side in (a, b))
        for reason in sorted(set(va) | set(vb)):
            better = "higher" if reason == "Active" else "lower"
            rows.append(
                welch(
                    "pcsampling",
                    f"{reason}.{denominator}",
                    "share",
                    va.get(reason, []),
                    vb.get(reason, []),
                    better=better,
                    what="ranks",
                )
            )
    return rows + hot_line_rows(a, b)


def per_rank_shares(side: Side, denominator: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for stalls in side.pcsampling:
        for rank in (stalls.get("per_rank") or {}).values():
            for reason, share in (rank.get(denominator) or {}).items():
                out.setdefault(reason, []).append(share)
    return out


def hot_line_rows(a: Side, b: Side) -> list[Row]:
    la, lb = (
        {f"{h['file']}:{h['line']}": h["share_of_samples"] for h in s.pcsampling[0].get("hot_lines") or []}
        for s in (a, b)
    )
    moved = sorted(set(la) | set(lb), key=lambda k: -abs(lb.get(k, 0.0) - la.get(k, 0.0)))[:HOT_LINES]
    return [
        Row(
            "pcsampling",
            f"hot_line.{k}",
            "share",
            a=la.get(k, 0.0),
            b=lb.get(k, 0.0),
            difference=lb.get(k, 0.0) - la.get(k, 0.0),
            better=None,
            hint="one share per side (mean over ranks): no CI; shown to see where the samples moved",
        )
        for k in moved
    ]


def debugclock_rows(a: Side, b: Side) -> list[Row]:
    """Phase time per role (DebugClock segments: per launch the median over cores), launches as units."""
    fa, fb = (pd.concat(side.debugclock, ignore_index=True) for side in (a, b))
    rows = []
    phases = sorted(
        set(map(tuple, fa[["role", "phase"]].drop_duplicates().to_numpy()))
        | set(map(tuple, fb[["role", "phase"]].drop_duplicates().to_numpy()))
    )
    for role, phase in phases:
        sa, sb = (f[(f["role"] == role) & (f["phase"] == phase)] for f in (fa, fb))
        rows.append(
            welch(
                "debugclock",
                f"{phase}_us",
                "us",
                launch_values(sa, "us"),
                launch_values(sb, "us"),
                role=role,
                what="launches",
            )
        )
    return rows


LAYER_FUNCTIONS: dict[str, Callable[[Side, Side], list[Row]]] = {
    "cost": cost_rows,
    "links": links_rows,
    "pmu": pmu_rows,
    "pcsampling": pcsampling_rows,
    "debugclock": debugclock_rows,
}
LAYER_DATA = {
    "cost": "timeline",
    "links": "baseline",
    "pmu": "pmu",
    "pcsampling": "pcsampling",
    "debugclock": "debugclock",
}


def layer_rows(layer: str, a: Side, b: Side) -> list[Row]:
    """The rows of one layer, or one "not comparable" row naming what each side lacks (a damaged table too)."""
    data = LAYER_DATA[layer]
    why = [f"{s.label}: {s.missing[data]}" for s in (a, b) if data in s.missing]
    why += [f"{s.label}: no {data} data" for s in (a, b) if data not in s.missing and not getattr(s, data)]
    if why:
        return [not_comparable(layer, "; ".join(why))]
    try:
        rows = LAYER_FUNCTIONS[layer](a, b)
    except (KeyError, ValueError, TypeError, IndexError) as exc:  # a table of another shape than expected
        return [not_comparable(layer, f"its tables could not be read ({type(exc).__name__}: {exc})")]
    return rows or [not_comparable(layer, "no metric on either side")]


def common_ranks(a: Side, b: Side) -> tuple[Side, Side, str | None]:
    """Both sides restricted to the ranks both measured (latency tables), and the sentence saying so."""
    ranks = [set().union(*(set(t["rank"].unique()) for t in s.latency)) for s in (a, b) if s.latency]
    if len(ranks) < 2 or ranks[0] == ranks[1]:
        return a, b, None
    ranks = [{int(r) for r in rs} for rs in ranks]
    common = ranks[0] & ranks[1]
    sides = tuple(restricted(s, common) for s in (a, b))
    note = (
        f"compared on the {len(common)} common ranks: A has {len(ranks[0])} ({sorted(ranks[0] - common) or 'no'} "
        f"besides), B {len(ranks[1])} ({sorted(ranks[1] - common) or 'no'} besides)"
    )
    return sides[0], sides[1], note


def restricted(side: Side, ranks: set[int]) -> Side:
    keep = {str(int(r)) for r in ranks}

    def frames(tables: list[pd.DataFrame]) -> list[pd.DataFrame]:
        return [t[t["rank"].isin(ranks)] if "rank" in t else t for t in tables]

    pcs = [
        {**s, "per_rank": {r: v for r, v in (s.get("per_rank") or {}).items() if r in keep}} for s in side.pcsampling
    ]
    return replace(
        side, latency=frames(side.latency), pmu=frames(side.pmu), debugclock=frames(side.debugclock), pcsampling=pcs
    )


def all_rows(a: Side, b: Side, latency: Mapping[str, Any]) -> list[Row]:
    """Every row of the comparison, answered (``decide``), in LAYERS order."""
    lat = latency_rows(latency)
    lacking = "; ".join(f"{s.label}: {s.missing['latency']}" for s in (a, b) if "latency" in s.missing)
    if lacking:  # a recorded side without its latency table: say which file, not only "scope missing"
        lat = [replace(r, note=f"not comparable: {lacking}") if r.verdict == "not comparable" else r for r in lat]
    rows = precision_rows(a, b) + lat
    for layer in LAYER_FUNCTIONS:
        rows += layer_rows(layer, a, b)
    return decide(rows)


# ---- the answer: the verdict line, the margin, the expectations ----------------------------------------------------

SCOPES = (
    ("latency.kernel.median", "kernel"),
    ("latency.api.median", "full API"),
    ("latency.kernel.p95", "tail (kernel P95)"),
)
EXPECTED = ("down", "up", "unchanged")


def by_key(rows: Sequence[Row]) -> dict[str, Row]:
    return {r.key: r for r in rows}


def costliest_first(rows: Sequence[Row]) -> list[Row]:
    """The rows that changed (flagged), those in microseconds first by the size of the move, then the others by
    their relative move."""

    def cost(r: Row) -> tuple[int, float]:
        d = abs(r.difference or 0.0)
        if r.unit.startswith("us"):
            return 0, -d
        base = abs(r.a) if isinstance(r.a, (int, float)) and r.a else 1.0
        return 1, -d / base

    return sorted((r for r in rows if r.verdict in FLAGGED and r.layer != "precision"), key=cost)


def answer_line(rows: Sequence[Row]) -> str:
    """One line per the guide: did precision stay correct, did the kernel scope, the full API and the tail move
    the same way."""
    keyed = by_key(rows)
    precision = keyed.get("precision.pass")
    first = (
        "precision ok on both sides"
        if precision and precision.verdict == "pass"
        else f"precision {precision.note if precision and precision.note else 'not ok'}"
    )
    parts, moves = [], set()
    for key, name in SCOPES:
        r = keyed.get(key)
        if r is None or r.verdict == "not comparable":
            parts.append(f"{name} not comparable")
            continue
        parts.append(f"{name} {r.verdict} ({r.difference:+.1f} us)")
        moves.add(r.verdict)
    same = (
        "all moved the same way"
        if len(moves) == 1 and len(parts) == len(SCOPES) and moves <= {"improved", "regressed"}
        else "they did not all move the same way"
        if moves & {"improved", "regressed"}
        else "none moved beyond its noise"
    )
    return f"{first}; {', '.join(parts)}: {same}{evidence_clause(rows)}"


EVIDENCE_NAMED = 5  # the answer line names at most this many changed rows outside the latency layer


def evidence_clause(rows: Sequence[Row]) -> str:
    """The changed rows beyond latency (the causes, roles, stalls that moved), costliest first, for the answer line."""
    moved = [r for r in costliest_first(rows) if r.layer != "latency"]
    if not moved:
        return "; no other layer moved beyond its noise"
    named = ", ".join(
        f"{r.key} {r.verdict} ({r.difference:+.4g} {r.unit})".replace(" )", ")") for r in moved[:EVIDENCE_NAMED]
    )
    more = f" and {len(moved) - EVIDENCE_NAMED} more" if len(moved) > EVIDENCE_NAMED else ""
    return f"; moved beside latency: {named}{more}"


def margin_block(rows: Sequence[Row], latency: Mapping[str, Any]) -> dict[str, Any]:
    """The smallest change the kernel median could detect with these repeats, how many repeats would halve it, and
    the equivalence margin ``unchanged`` is judged by."""
    r = by_key(rows).get("latency.kernel.median")
    if r is None or r.ci95 is None or not isinstance(r.a, float):
        return {"sentence": "no kernel-scope latency on both sides: no detectable change can be stated"}
    half = (r.ci95[1] - r.ci95[0]) / 2
    reps = list(r.units or (1, 1))
    noise = repeat_noise((latency.get("kernel") or {}).get("repeat_medians") or {})
    sentence = (
        f"changes smaller than {half:.1f} us ({100 * half / r.a:.1f}%) cannot be seen with these repeats "
        f"({reps[0]} / {reps[1]}: the half-width of the kernel median's 95% CI); about 4x the repeats "
        f"({4 * max(reps)} per side; the CI narrows as 1/sqrt(repeats)) would halve it"
    )
    one = max(reps) == 1
    if one:
        sentence += (
            "; with one repeat per side the CI holds no run-to-run variance (only the iterations of one run): "
            "a difference between runs of the same code may pass for a change"
        )
    return {
        "detectable_us": half,
        "detectable_fraction": half / r.a,
        "repeats": reps,
        "halved_by_repeats": 4 * max(reps),
        "equivalence_us": r.margin,
        "equivalence_source": "spread between repeats" if noise and noise > MARGIN_FLOOR * abs(r.a) else "floor",
        "floor_fraction": MARGIN_FLOOR,
        "run_to_run_variance": not one,
        "alpha": ALPHA,
        "correction": "Holm step-down over every tested row of the comparison (family-wise error rate alpha)",
        "sentence": sentence,
    }


def expectation(expected: str, row: Row | None) -> str:
    """confirmed / refuted / inconclusive / not measured, for a predicted direction (down, up, unchanged)."""
    if row is None or row.verdict in (None, "not comparable"):
        return "not measured"
    moved = row.verdict in ("improved", "regressed", "changed", "appeared", "gone")
    sign = "down" if (row.difference or 0.0) < 0 else "up"
    if expected == "unchanged":
        return "confirmed" if row.verdict == "unchanged" else "refuted" if moved else "inconclusive"
    if moved:
        return "confirmed" if sign == expected else "refuted"
    return "refuted" if row.verdict == "unchanged" else "inconclusive"


def expectations(expect: Mapping[str, str], rows: Sequence[Row]) -> list[dict[str, Any]]:
    keyed = by_key(rows)
    out = []
    for key, expected in expect.items():
        r = keyed.get(key)
        out.append(
            {
                "row": key,
                "expected": expected,
                "answer": expectation(expected, r),
                "verdict": r.verdict if r else None,
                "difference": r.difference if r else None,
                "ci95": list(r.ci95) if r and r.ci95 else None,
            }
        )
    return out
