"""Rule history's record, built from hand-made stage outputs (not the simulator), and what the report makes of the
gate's verdict: the Answer's line, summary.json's section, the trend picture."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.history import GateSettings
from dispatchprof.report.history import sentence, summary_section
from dispatchprof.report.history_svg import trend_svg
from dispatchprof.stages.history import RunFiles, land_and_gate, record, run_id

CONFIG = {
    "toolchain": "sim",
    "kernel": {"name": "k"},
    "shape": {"hidden": 7168},
    "cluster": {"nodes": 1, "ranks_per_node": 2},
}


def latency(values: list[float]) -> pd.DataFrame:
    rows = []
    for it, v in enumerate(values):
        for rank in (0, 1):
            for scope in ("kernel", "api"):
                rows.append(
                    {
                        "experiment": "e",
                        "scope": scope,
                        "rank": rank,
                        "node": 0,
                        "iteration": it,
                        "warmup": it == 0,
                        "us": v + rank + (90 if scope == "api" else 0),
                    }
                )
    return pd.DataFrame(rows)


def files(kernel: float, cause: float | None = None, busy: float = 100.0) -> RunFiles:
    block = {"median": kernel, "p95": kernel + 5, "median_ci95": [kernel - 1, kernel + 1]}
    cost = {"cost_us_per_launch": cause, "cost_ci_us": [cause - 1, cause + 1]} if cause else {}
    causes = [{"evidence": "late_arrival", "rank": 1, **cost}] if cause else []
    cores = pd.DataFrame({"rank": [0, 0, 1], "role": ["Send", "Send", "Send"], "busy_us_high": [busy, busy + 2, 50.0]})
    return RunFiles(
        latency=latency([kernel, kernel + 1, kernel - 1]),
        baseline={
            "scopes": {
                "kernel": {"per_iteration_max_us": block, "per_rank": {"0": {"median_us": kernel}}},
                "api": {"per_iteration_max_us": {"median": kernel + 90}},
            },
            "bandwidth": {"efficiency": 0.8, "efficiency_ci95": [0.79, 0.81]},
        },
        timeline={"summary": {"excess": {"period_us_per_launch": 5.0}}, "causes": causes},
        pmu={"roles": {"Send": {"busy_us_median_high": busy}}},
        cores=cores,
        env={"nodes": [{"node": 0, "hostname": "h0", "versions": {"cann": {"version": "9.0"}}}]},
        build={"sha": "abc", "libraries": [{"path": "lib.so", "sha256": "00"}]},
    )


def test_record_holds_headlines_causes_layers_and_samples():
    rows = record(files(1000.0, cause=20.0), "demo", "2026-12-07T10:00:00+00:00", CONFIG, "e")
    by = rows.set_index("metric")
    assert by.loc["latency.kernel.median", "value"] == 1000.0 and by.loc["latency.kernel.median", "ci_low"] == 999.0
    assert by.loc["links.efficiency", "better"] == "higher"
    assert by.loc["cause.late_arrival.rank1", "kind"] == "cause"
    assert by.loc["pmu.rank0.Send.busy_us", "value"] == 101.0  # the median of the rank's cores
    samples = rows[rows["kind"] == "sample"]
    assert sorted(samples["metric"].unique()) == ["latency.api.max_us", "latency.kernel.max_us"]
    assert len(samples[samples["metric"] == "latency.kernel.max_us"]) == 2  # the two measured iterations
    assert json.loads(rows["comparable"].iloc[0])["ranks_per_node"] == 2
    assert json.loads(rows["identity"].iloc[0])["deepep_sha"] == "abc"


def test_imported_data_is_recorded_as_toolchain_none():
    rows = record(files(1000.0), "demo", "2026-12-07T10:00:00", {**CONFIG, "mode": "analyze"}, "e")
    assert set(rows["toolchain"]) == {"none"} and json.loads(rows["comparable"].iloc[0])["toolchain"] == "none"


def test_run_id_follows_the_data_not_the_analysis():
    a, b = files(1000.0), files(1000.0, cause=20.0)
    assert run_id("demo", a.latency) == run_id("demo", b.latency)
    assert run_id("demo", a.latency) != run_id("other", a.latency)
    assert run_id("demo", a.latency) != run_id("demo", files(1001.0).latency)


def test_a_series_in_a_store_regresses_and_the_report_says_why(tmp_path):
    rng = np.random.default_rng(3)
    for day in range(1, 7):
        rows = record(files(1000.0 + rng.normal(0, 0.5)), "demo", f"2026-12-0{day}T10:00:00+00:00", CONFIG, "e")
        result = land_and_gate(tmp_path, rows, GateSettings())
    assert result["verdict"] == "unchanged", result["metrics"]
    slow = record(files(1060.0, cause=55.0, busy=160.0), "demo", "2026-12-08T10:00:00+00:00", CONFIG, "e")
    result = land_and_gate(tmp_path, slow, GateSettings())
    assert result["verdict"] == "regressed"
    line = sentence({**result, "state": "ok"})
    assert line.startswith("History: against 6 comparable runs, regressed: latency.kernel.median +")
    assert "cause.late_arrival.rank1" in line
    summary = summary_section({**result, "state": "ok"})
    assert summary["verdict"] == "regressed" and summary["compared_runs"] == 6
    svg = trend_svg(result["trend"], next(m for m in result["metrics"] if m["metric"] == "latency.kernel.median"))
    assert svg.startswith("<svg") and svg.count("<circle") == 7
    assert len(list((tmp_path / "demo").iterdir())) == 7


def test_an_unwritable_store_is_a_note_and_the_gate_still_answers(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = land_and_gate(blocker, record(files(1000.0), "demo", "2026-12-07T10:00:00", CONFIG, "e"), GateSettings())
    assert result["record"] is None and "could not be written" in result["notes"][0]
    assert result["verdict"] == "inconclusive"


def test_words_for_states_without_a_gate():
    assert sentence(None) is None
    assert sentence({"state": "disabled", "reason": "history.path is null"}).startswith("History: disabled")
    assert sentence({"placeholder": True, "reason": "truncated"}).startswith("History: unreadable")
    assert summary_section({"state": "skipped"}) is None
    assert trend_svg({"runs": []}, None) == ""


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.1, 1e5), min_size=1, max_size=6), st.one_of(st.none(), st.floats(0.1, 100)))
def test_any_small_baseline_makes_a_record(values, cause):
    f = files(values[0], cause=cause)
    f = RunFiles(
        latency=latency(values), baseline=f.baseline, timeline=f.timeline, pmu=None, cores=None, env={}, build={}
    )
    rows = record(f, "demo", "2026-12-07T10:00:00", CONFIG, "e")
    assert set(rows["kind"]) <= {"metric", "cause", "layer", "sample"}
    assert rows["value"].notna().all()
