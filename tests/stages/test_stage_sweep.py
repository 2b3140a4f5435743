"""The sweep job's reading of its points' files (stages/sweep.py): a point whose precision failed is listed failed
with the reason, never ranked; the timeline's top cause and the baseline's efficiency are carried; refused points
are listed with their reason; the pages hold the verdict line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from conftest import write_part_status
from dispatchprof.shell.sweep import Point
from dispatchprof.stages.sweep import html_page, markdown, sweep_record


def latency(path, centre: float, seed: int) -> str:
    rng = np.random.default_rng(seed)
    rows = [
        {"experiment": "x", "scope": scope, "rank": r, "iteration": i, "warmup": i < 2, "us": centre + rng.normal(0, 1)}
        for scope in ("kernel", "api")
        for r in range(4)
        for i in range(22)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def point_files(tmp_path, run: str, centre: float, seed: int, correctness: str = "ok", cause: bool = False) -> dict:
    base = tmp_path / run
    stats = base / "baseline" / "stats.json"
    stats.parent.mkdir(parents=True, exist_ok=True)
    stats.write_text(json.dumps({"bandwidth": {"efficiency": 0.5, "bound_us": 40.0}}))
    files = {
        f"latency_{run}": latency(base / "baseline" / "latency.parquet", centre, seed),
        f"baseline_{run}": str(write_part_status(base / "baseline" / "status.json", "baseline", "ok")),
        f"baseline_stats_{run}": str(stats),
        f"correctness_{run}": str(
            write_part_status(base / "correctness" / "status.json", "correctness", correctness, "rank 3 failed")
        ),
    }
    if cause:
        timeline = base / "timeline" / "stats.json"
        timeline.parent.mkdir(parents=True, exist_ok=True)
        timeline.write_text(json.dumps({"causes": [{"evidence": "late_host", "rank": 11}]}))
        files[f"timeline_{run}"] = str(write_part_status(base / "timeline" / "status.json", "timeline", "ok"))
        files[f"timeline_stats_{run}"] = str(timeline)
    return files


def test_points_are_read_ranked_and_a_failed_or_refused_point_is_listed_with_its_reason(tmp_path):
    points = [Point("s", n, {"k": n}) for n in (1, 2, 3, 4)]
    points[3].refused = "shape.num_experts (100) is not divisible by the 16 ranks of the cluster"
    runs = {"sweep_s_1": ["sweep_s_1"], "sweep_s_2": ["sweep_s_2"], "sweep_s_3": ["sweep_s_3"], "sweep_s_4": []}
    inputs = {
        **point_files(tmp_path, "sweep_s_1", 120, 1, cause=True),
        **point_files(tmp_path, "sweep_s_2", 100, 2, cause=True),
        **point_files(tmp_path, "sweep_s_3", 50, 3, correctness="failed"),
    }
    record = sweep_record("s", points, runs, inputs, {"resamples": 400, "seed": 0})
    assert record["schema"] == "dispatchprof.sweep/1" and record["sweep"] == "s"
    assert record["best"] == "sweep_s_2" and record["verdict"] == "best"
    failed = next(p for p in record["points"] if p["name"] == "sweep_s_3")
    assert failed["state"] == "failed" and "correctness failed (rank 3 failed)" in failed["reason"]
    best = record["points"][0]
    assert best["top_cause"] == "late_host (rank 11)" and best["efficiency"] == 0.5 and best["label"] == "k~2"
    assert record["refused"] == [{"name": "sweep_s_4", "label": "k~4", "params": {"k": 4}, "reason": points[3].refused}]
    page = markdown(record, simulated=True)
    assert page.startswith("# Sweep s") and "**best**: sweep_s_2" in page and "Refused at plan time: sweep_s_4" in page
    assert best["bound_us"] == 40.0
    page = html_page(record, simulated=False)
    assert "<strong>best</strong>" in page and page.count("<svg") == 1 and "<title>k</title>" in page
