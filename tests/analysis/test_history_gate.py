"""The regression gate on series drawn from a stated noise model (not the simulator): false alarms of A/A series,
a 5% step found at the run it starts, and degenerate histories that end in a verdict, never a crash."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.history import GateSettings, change_points, gate

COMPARABLE = json.dumps({"kernel": "elastic_dispatch_kernel", "ranks": 16})


def rows_of(series: dict[str, list[float]], kinds: dict[str, str] | None = None, better: str = "lower") -> pd.DataFrame:
    """A store's rows: one run per index, metric -> values (NaN = the metric absent from that run)."""
    kinds = kinds or {}
    out = []
    n = len(next(iter(series.values())))
    for i in range(n):
        for metric, values in series.items():
            if np.isnan(values[i]):
                continue
            kind = kinds.get(metric, "metric")
            out.append(
                {
                    "run_id": f"r{i:03d}",
                    "series": "s",
                    "recorded_at": f"2026-12-{1 + i // 24:02d}T{i % 24:02d}:00:00",
                    "toolchain": "test",
                    "comparable": COMPARABLE,
                    "identity": "{}",
                    "kind": kind,
                    "metric": metric,
                    "value": values[i],
                    "ci_low": np.nan,
                    "ci_high": np.nan,
                    "better": "" if kind == "layer" else better,
                }
            )
    return pd.DataFrame(out)


def newest_verdict(values: list[float], **kw) -> dict:
    rows = rows_of({"latency.kernel.median": values})
    return gate(rows, f"r{len(values) - 1:03d}", GateSettings(**kw))


def test_aa_series_rarely_flags():
    """30 runs of an A/A series (normal noise, 0.5% run-to-run): each run judged against those before it."""
    false = []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        values = list(1000 + 5 * rng.standard_normal(30))
        flagged = sum(newest_verdict(values[: i + 1])["verdict"] in ("regressed", "improved") for i in range(5, 30))
        false.append(flagged)
    assert max(false) <= 2, false
    assert sum(false) <= 5, false


def test_five_percent_step_found_at_its_run():
    found = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        values = list(1000 + 5 * rng.standard_normal(30))
        values[20:] = [v * 1.05 for v in values[20:]]
        first = newest_verdict(values[:21])
        later = newest_verdict(values)
        found += first["verdict"] == "regressed" and "r020" in later["change_points"]
    assert found >= 9


def test_too_few_runs_is_inconclusive_naming_how_many():
    result = newest_verdict([1000.0, 1001.0, 1300.0])
    metric = result["metrics"][0]
    assert result["verdict"] == "inconclusive"
    assert "3 more comparable runs needed" in metric["why"]


def test_improvement_and_direction_of_higher_is_better():
    values = [0.80, 0.801, 0.799, 0.800, 0.802, 0.798, 0.85]
    rows = rows_of({"links.efficiency": values, "latency.kernel.median": [1000.0] * 6 + [1000.5]}, better="higher")
    result = gate(rows, "r006", GateSettings())
    eff = next(m for m in result["metrics"] if m["metric"] == "links.efficiency")
    assert eff["verdict"] == "improved"


def test_a_cause_that_appears_regresses_and_explains():
    n = 9
    kernel = [1000.0 + d for d in (0.4, -0.3, 0.1, 0.2, -0.1, 0.0, 0.3, -0.2)] + [1040.0]
    cause = [np.nan] * 8 + [40.0]
    send = [140.0 + d for d in (0.3, -0.2, 0.1, 0.0, -0.1, 0.2, -0.3, 0.1)] + [210.0]
    rows = rows_of(
        {"latency.kernel.median": kernel, "cause.own_work.rank11": cause, "pmu.URMASendToken.busy_us": send},
        kinds={"cause.own_work.rank11": "cause", "pmu.URMASendToken.busy_us": "layer"},
    )
    result = gate(rows, f"r{n - 1:03d}", GateSettings())
    assert result["verdict"] == "regressed"
    head = next(m for m in result["metrics"] if m["metric"] == "latency.kernel.median")
    names = [e["metric"] for e in head["explained_by"]]
    assert names[0] == "cause.own_work.rank11"
    assert "pmu.URMASendToken.busy_us" in names
    cause_row = next(m for m in result["metrics"] if m["metric"] == "cause.own_work.rank11")
    assert cause_row["verdict"] == "regressed"


def test_not_comparable_runs_are_named_with_the_key():
    rows = rows_of({"latency.kernel.median": [1000.0] * 7})
    rows.loc[rows["run_id"] == "r002", "comparable"] = json.dumps({"kernel": "elastic_dispatch_kernel", "ranks": 32})
    result = gate(rows, "r006", GateSettings())
    assert result["not_comparable"] == [{"run_id": "r002", "differs_in": "ranks", "newest": 16, "theirs": 32}]
    assert result["compared_runs"] == 5


def test_excluded_run_and_reference_since():
    values = [1000.0, 1001.0, 999.0, 1200.0, 1000.5, 999.5, 1000.2, 1000.1, 999.8, 1000.0]
    kept = newest_verdict(values, exclude=("r003",))
    assert kept["compared_runs"] == 8
    since = newest_verdict(values, reference_since="r005")
    assert since["compared_runs"] == 4
    assert since["verdict"] == "inconclusive"


def test_change_points_of_a_flat_series_are_none():
    assert change_points([5.0] * 10) == []
    assert change_points([1.0, 2.0]) == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))), min_size=1, max_size=15),
    st.sampled_from(["lower", "higher"]),
)
def test_any_series_ends_in_a_verdict(values, better):
    rows = rows_of(
        {"latency.kernel.median": values, "cause.x.rank0": values}, kinds={"cause.x.rank0": "cause"}, better=better
    )
    if rows.empty:
        return
    newest = rows["run_id"].iloc[-1]
    result = gate(rows, newest, GateSettings())
    assert result["verdict"] in ("regressed", "improved", "unchanged", "inconclusive")
    for metric in result["metrics"]:
        assert metric["verdict"] in ("regressed", "improved", "unchanged", "inconclusive")


def test_explained_by_takes_the_reference_since_the_change_point_and_the_floor():
    """Hand-built table: a busy time that stepped up 4 runs ago (the reference starts there), a per-rank latency that
    moved (recorded, not an explanation), a 2 us wobble (under the 1% floor of a 1000 us kernel) and a cause."""
    from dispatchprof.analysis.history import explained_by

    runs = [f"r{i}" for i in range(8)]
    table = pd.DataFrame(
        {
            "latency.kernel.median": [1000.0] * 7 + [1100.0],
            "pmu.rank3.Send.busy_us": [100.0, 100.0, 100.0, 100.0, 200.0, 201.0, 199.0, 260.0],
            "pmu.rank4.Send.busy_us": [50.0, 50.5, 49.5, 50.0, 50.2, 49.8, 50.1, 52.0],
            "pmu.Send.icache_miss": [0.02, 0.021, 0.019, 0.02, 0.02, 0.021, 0.019, 0.03],
            "latency.rank3.median": [1000.0] * 7 + [1100.0],
            "cause.own_work.rank3": [0.0] * 7 + [40.0],
        },
        index=runs,
    )
    kinds = ["metric", "layer", "layer", "layer", "layer", "cause"]
    info = pd.DataFrame({"kind": kinds, "better": ["lower", "", "", "", "", "lower"]}, index=table.columns)
    moved = explained_by(table, info, "latency.kernel.median", "r4", 0.01, 1000.0)
    names = [m["metric"] for m in moved]
    assert names == ["cause.own_work.rank3", "pmu.rank3.Send.busy_us", "pmu.Send.icache_miss"]
    busy = moved[1]
    assert busy["reference"] == 200.0 and busy["change"] == 60.0  # against the runs since r4, the newest left out
    # over every run, the step before r4 is noise 3 spreads wide: the busy time no longer stands out
    whole = explained_by(table, info, "latency.kernel.median", None, 0.01, 1000.0)
    assert [m["metric"] for m in whole] == ["cause.own_work.rank3", "pmu.Send.icache_miss"]
    assert explained_by(table.iloc[:1], info, "latency.kernel.median", None, 0.01, 1000.0) == []


def test_decide_is_the_textbook_prediction_interval_widened_by_welch():
    """Without the newest run's own CI, the test is the t prediction interval of a new value from n earlier ones
    (t = (x - mean) / (s sqrt(1 + 1/n)), n - 1 degrees of freedom); with it, Welch-Satterthwaite by hand."""
    from scipy import stats

    from dispatchprof.analysis.history import decide

    reference = np.array([10.0, 12.0, 11.0, 13.0, 9.0])  # mean 11, s = sqrt(2.5)
    plain = decide(reference, 16.0, 0.0, "lower", 0.1)
    t = 5.0 / (np.sqrt(2.5) * np.sqrt(1 + 1 / 5))
    assert plain["p"] == pytest.approx(2 * stats.t.sf(t, 4), rel=1e-12)
    assert plain["df"] == pytest.approx(4.0)
    assert (plain["reference"], plain["newest"], plain["change"], plain["runs"]) == (11.0, 16.0, 5.0, 5)
    assert plain["spread"] == pytest.approx(np.sqrt(2.5)) and plain["worse"] is True
    widened = decide(reference, 16.0, 0.5, "lower", 0.1)
    between, own = 2.5 * 1.2, 0.25
    assert widened["scale"] == pytest.approx(np.sqrt(between + own))
    assert widened["df"] == pytest.approx(4 * (1 + own / between) ** 2)
    assert widened["p"] == pytest.approx(2 * stats.t.sf(5.0 / np.sqrt(3.25), 4 * (1 + own / between) ** 2))
    assert decide(reference, 6.0, 0.0, "lower", 0.1)["worse"] is False
    assert decide(reference, 11.0, 0.0, "higher", 0.1)["worse"] is False  # no change is not worse either way
    assert decide(reference, 10.0, 0.0, "higher", 0.1)["worse"] is True
    flat = decide(np.array([5.0, 5.0, 5.0]), 5.0, 0.0, "lower", 0.1)
    assert flat["p"] == 1.0 and flat["df"] is None  # no noise, no change
    assert decide(np.array([5.0, 5.0, 5.0]), 5.5, 0.0, "lower", 0.1)["p"] == 0.0


def test_holm_levels_and_stop_in_the_input_order():
    from dispatchprof.analysis.history import _holm

    got = _holm([0.03, 0.001, 0.5, 0.02], 0.05)
    assert [r for r, _ in got] == [False, True, False, False]  # 0.02 > 0.05/3 stops the walk
    assert [lvl for _, lvl in got] == pytest.approx([0.025, 0.0125, 0.05, 0.05 / 3])
    assert [r for r, _ in _holm([0.0125, 0.05 / 3, 0.025, 0.05], 0.05)] == [True] * 4  # at the level: rejected
    assert _holm([], 0.05) == []


def test_verdict_words_at_their_boundaries():
    from dispatchprof.analysis.history import _verdict

    base = {"change": 2.0, "floor": 2.0, "scale": 1.0, "df": None, "worse": True}
    assert _verdict(base, True, 0.01)["verdict"] == "regressed"  # a change of exactly the floor is called
    assert _verdict({**base, "worse": False}, True, 0.01)["verdict"] == "improved"
    assert _verdict({**base, "change": 1.99}, True, 0.01)["verdict"] == "unchanged"
    smallest = _verdict(base, False, 0.01)["smallest_visible"]
    from scipy import stats

    assert smallest == pytest.approx(stats.norm.isf(0.005))  # normal tail without degrees of freedom
    assert _verdict({**base, "change": 2.5}, False, 0.01)["verdict"] == "unchanged"
    assert _verdict({**base, "change": 3.0}, False, 0.01)["verdict"] == "inconclusive"
    assert _verdict({**base, "df": 3.0}, False, 0.01)["smallest_visible"] == pytest.approx(stats.t.isf(0.005, 3))


def test_gate_record_after_a_step_names_since_trend_and_reference():
    rng = np.random.default_rng(7)
    values = list(1000 + 2 * rng.standard_normal(24))
    values[12:] = [v + 60 for v in values[12:]]
    rows = rows_of({"latency.kernel.median": values})
    rows.loc[rows["run_id"] == "r023", ["ci_low", "ci_high"]] = [values[-1] - 1.0, values[-1] + 1.0]
    result = gate(rows, "r023", GateSettings())
    head = result["metrics"][0]
    assert result["change_points"] == ["r012"] and head["since"] == "r012"
    assert head["runs"] == 11 and head["reference"] == pytest.approx(np.mean(values[12:23]))
    assert head["verdict"] == "unchanged" and result["verdict"] == "unchanged"
    assert result["compared_runs"] == 23 and result["not_comparable"] == []
    points = result["trend"]["runs"]
    assert [p["run_id"] for p in points] == [f"r{i:03d}" for i in range(24)]
    assert points[-1]["value"] == pytest.approx(values[-1]) and points[-1]["ci_low"] == pytest.approx(values[-1] - 1)
    assert points[0]["ci_low"] is None and points[0]["recorded_at"] == "2026-12-01T00:00:00"
    short = gate(rows, "r023", GateSettings(window=6))
    assert short["compared_runs"] == 6 and len(short["trend"]["runs"]) == 7
