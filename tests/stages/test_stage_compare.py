"""The comparison job between its files and its record (stages/comparison.py): a stage that is not ok, a damaged
status file or a layer that was never run is a layer "not comparable" with the reason, not a crash; the record
holds the rows, the answer, the margin and the expectations, and renders to HTML and Markdown from one model."""

import json

import numpy as np

from conftest import latency_table, write_part_status
from dispatchprof.report.comparison_page import page, picture
from dispatchprof.report.html import html_section
from dispatchprof.report.markdown import markdown_section
from dispatchprof.stages.comparison import comparison, load_side


def run_files(tmp, side, run, rng, centre, pmu_state="ok", ranks=4):
    base = tmp / "results" / run
    base.mkdir(parents=True)
    files = {}
    latency_table(rng, centre, ranks, n=30).to_parquet(base / "latency.parquet")
    files[f"{side}_latency_{run}"] = str(base / "latency.parquet")
    (base / "bstats.json").write_text(json.dumps({"bandwidth": {}}))
    files[f"{side}_baseline_stats_{run}"] = str(base / "bstats.json")
    files[f"{side}_correctness_{run}"] = str(write_part_status(base / "correctness/status.json", "correctness", "ok"))
    files[f"{side}_timeline_{run}"] = str(write_part_status(base / "timeline/status.json", "timeline", "ok"))
    causes = [{"evidence": "late_arrival", "rank": 2, "ranks": [2], "cost_us_per_launch": 9.0, "cost_ci_us": [8, 10]}]
    stats = {"causes": causes if side == "b" else [], "straggler": {"excess": {"period_us_per_launch": 5.0}}}
    (base / "tstats.json").write_text(json.dumps(stats))
    files[f"{side}_timeline_stats_{run}"] = str(base / "tstats.json")
    files[f"{side}_pmu_{run}"] = str(write_part_status(base / "pmu/status.json", "pmu", pmu_state, "no replay"))
    files[f"{side}_pmu_cores_{run}"] = str(base / "missing.parquet")
    (base / "pcsampling").mkdir()
    (base / "pcsampling/status.json").write_text("{not json")
    files[f"{side}_pcsampling_{run}"] = str(base / "pcsampling/status.json")
    files[f"{side}_pcsampling_stalls_{run}"] = str(base / "missing.json")
    return files  # no debugclock inputs: debugclock.when never


def test_layers_one_side_lacks_are_not_comparable_and_the_record_is_whole(tmp_path):
    rng = np.random.default_rng(0)
    inputs = {**run_files(tmp_path, "a", "x", rng, 1000.0), **run_files(tmp_path, "b", "y", rng, 900.0, "skipped", 3)}
    a, b = load_side("A", "a", ["x"], inputs), load_side("B", "b", ["y"], inputs)
    result = comparison(
        a,
        b,
        {"a": {}, "b": {}},
        {"resamples": 300, "seed": 0},
        {"latency.kernel.median": "down", "pmu.R.busy_us": "down"},
    )
    rows = {r["key"]: r for r in result["rows"]}
    assert rows["pmu"]["verdict"] == "not comparable" and "y: pmu is skipped (no replay)" in rows["pmu"]["note"]
    assert rows["pcsampling"]["verdict"] == "not comparable" and "unreadable" in rows["pcsampling"]["note"]
    assert "debugclock.when: never" in rows["debugclock"]["note"]
    assert rows["links"]["verdict"] == "not comparable"
    assert rows["cost.late_arrival.ranks2"]["verdict"] == "appeared"
    assert result["verdict"] == "improved" and rows["latency.kernel.median"]["verdict"] == "improved"
    assert "3 common ranks" in result["ranks"] and "rank3" not in " ".join(rows)
    assert [e["answer"] for e in result["expectations"]] == ["confirmed", "not measured"]
    assert result["answer"].startswith("precision ok on both sides; kernel improved")
    assert any("no run-to-run variance" in w for w in result["warnings"])
    svg = picture(result["rows"], result["changed"])
    record = {**result, "state": "ok", "reason": result["answer"], "a": "x", "b": "y"}
    sections = page(record, svg)
    html = "\n".join(str(html_section(s)) for s in sections)
    md = "\n".join(markdown_section(s) for s in sections)
    assert svg.startswith("<svg") and "latency.kernel.median" in svg
    for text in (html, md):
        assert text.index("Verdict") < text.index("What moved") < text.index("Every row")
        assert "appeared" in text and "not comparable" in text


def test_a_refused_comparison_renders_its_reason():
    record = {"state": "refused", "reason": "y: precision not ok", "rows": [], "a": "x", "b": "y"}
    (section,) = page(record, "")
    assert "precision not ok" in markdown_section(section)
