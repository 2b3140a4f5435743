"""A rerun tells the truth: what a job recorded on disk decides what a plain `snakemake` runs again (a damaged
intermediate, a collection a killed job took with it, a drill-down older than what it drills into), each said with
its reason, and a run with nothing to do still ends with the table of the states on disk."""

from __future__ import annotations

import shutil

import pandas as pd

from conftest import base_overlay


def test_a_plain_run_repairs_what_no_longer_holds_and_says_why(workflow_copy):
    overlay = base_overlay()
    first = workflow_copy.snakemake(overlay=overlay)
    assert first.returncode == 0, first.stderr[-3000:]
    results = workflow_copy.root / "results" / "baseline"

    again = workflow_copy.snakemake(overlay=overlay)  # nothing to do: the table all the same
    assert again.returncode == 0 and "Runs again" not in again.stderr, again.stderr[-3000:]
    assert "Stages (sim data):" in again.stdout and "(up to date: nothing needed to run)" in again.stdout

    # A truncated intermediate: its producer reruns from the raw data, which are there (nothing is collected again).
    launches = results / "timeline" / "nodes" / "nodes0-1" / "launches.parquet"
    launches.write_bytes(launches.read_bytes()[:200])
    plan = workflow_copy.snakemake("-n", overlay=overlay)
    assert (
        f"Runs again: results/baseline/timeline/nodes/nodes0-1/status.json: {launches.relative_to(workflow_copy.root)} holds 200 bytes"
        in plan.stderr
    )
    assert "rule timeline_parse:" in plan.stdout and "rule timeline_collect:" not in plan.stdout, plan.stdout[-3000:]
    repaired = workflow_copy.snakemake(overlay=overlay)
    assert repaired.returncode == 0, repaired.stderr[-3000:]
    assert len(pd.read_parquet(launches)) > 0 and workflow_copy.status("timeline")["state"] == "ok"

    # A drill-down made before the timeline was rewritten is refreshed (it is outside `all`: before, -n said nothing).
    drill = "results/baseline/timeline/ranks/rank7/detail.json"
    assert workflow_copy.snakemake(drill, overlay=overlay).returncode == 0
    part = results / "timeline" / "nodes" / "nodes0-1" / "ranks.json"
    part.write_bytes(part.read_bytes())  # rewritten, as a rerun of the timeline would
    plan = workflow_copy.snakemake("-n", overlay=overlay)
    assert (
        "Runs again: results/baseline/timeline/ranks/rank7/status.json: timeline/rank7 was made from an older "
        "results/baseline/timeline/nodes/nodes0-1/ranks.json: it runs again" in plan.stderr
    )

    # A collection whose job was killed: Snakemake deleted its outputs (raw/, run/ and its status). The report's
    # numbers have no raw data left behind them: the plain run collects again.
    for gone in ("raw", "run", "collect"):
        shutil.rmtree(results / "timeline" / gone)
    plan = workflow_copy.snakemake("-n", overlay=overlay)
    assert "Runs again: results/baseline/timeline/collect/status.json: it is gone" in plan.stderr
    assert "rule timeline_collect:" in plan.stdout
