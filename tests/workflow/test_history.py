"""Every run remembered: A/A runs of one series land in the history store and are never flagged; a run whose rank
11 sends slower is `regressed`, explained by rank 11's cause, and with fail_on: [regression] the run exits 1.
Truth is from the events: the simulator's record of which rank's role worked longer (sim_truth.json)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import base_overlay

pytestmark = pytest.mark.xdist_group("history")

AA = 5


def verdict(copy, experiment: str) -> dict:
    return json.loads((copy.root / "results" / experiment / "history" / "history.json").read_text())


def top_cause(copy, experiment: str) -> dict:
    """The costliest root cause in the simulator's record of the timeline's launches (what happened)."""
    truth = next((copy.root / "results" / experiment / "timeline").glob("**/sim_truth.json"))
    return json.loads(truth.read_text())["root_causes"][0]


def test_aa_series_then_a_slow_rank(workflow_copy):
    history = {"series": "demo"}
    aa = {f"aa{i}": {"sim": {"noise_seed": 11 + i}} for i in range(AA)}
    first = workflow_copy.snakemake("--until", "history", overlay=base_overlay(history=history, experiments=aa))
    assert first.returncode == 0, first.stderr[-3000:]
    for name in aa:
        got = verdict(workflow_copy, name)
        assert got["state"] == "ok" and got["verdict"] in ("unchanged", "inconclusive"), (name, got["reason"])
    store = pd.read_parquet(workflow_copy.root / "results" / "history" / "demo")  # pandas alone reads the store
    assert store["run_id"].nunique() == AA and set(store["toolchain"]) == {"sim"}

    slow = base_overlay(
        history=history,
        experiment="slow",
        sim={"slow_role": {"rank": 11, "role": "URMASendToken", "factor": 1.5}},
        fail_on=["failed", "timeout", "invalid", "unreadable", "regression"],
    )
    second = workflow_copy.snakemake("--until", "history", overlay=slow)
    out = second.stdout + second.stderr
    got = verdict(workflow_copy, "slow")
    assert got["verdict"] == "regressed", got
    assert second.returncode == 1 and "slow/history is regressed" in out, out[-3000:]
    assert "Traceback" not in out
    truth = json.loads(
        next((workflow_copy.root / "results" / "slow" / "timeline").glob("**/sim_truth.json")).read_text()
    )
    assert "11" in json.dumps(truth.get("slow_role") or truth)  # the simulator slowed rank 11's sends
    moved = [m for m in got["metrics"] if m["verdict"] == "regressed"]
    explained = [e["metric"] for m in moved for e in m.get("explained_by", [])]
    # the timeline sees ranks 0-7 and 11 end late together (a sender's receivers wait for it); PMU names the sender
    pmu = [e for e in explained if e.startswith("pmu.rank")]
    assert pmu and pmu[0] == "pmu.rank11.URMASendToken.busy_us", (moved, explained)

    # a re-analysis of the same collection replaces its record: the series does not grow
    again = workflow_copy.snakemake("--until", "history", "-R", "history", overlay=slow)
    assert again.returncode == 1
    assert pd.read_parquet(workflow_copy.root / "results" / "history" / "demo")["run_id"].nunique() == AA + 1

    # the faulty run is left out of the reference by the user; a late host on rank 11 is a cause that appears
    history["exclude"] = {got["run_id"]: "slow_role injected"}
    late = base_overlay(history=history, experiment="late", sim={"late_rank": 11, "late_us": 30.0, "late_prob": 1.0})
    assert workflow_copy.snakemake("--until", "history", overlay=late).returncode == 0
    got = verdict(workflow_copy, "late")
    assert top_cause(workflow_copy, "late")["ranks"] == [11]
    regressed = [m for m in got["metrics"] if m["verdict"] == "regressed"]
    named = [m["metric"] for m in regressed] + [e["metric"] for m in regressed for e in m.get("explained_by", [])[:1]]
    assert got["verdict"] == "regressed" and "cause.late_arrival.rank11" in named, got["metrics"]

    # a faster sender improves the run, and the send role's busy time explains it
    history["exclude"][got["run_id"]] = "late_rank injected"
    fast = base_overlay(history=history, experiment="fast", sim={"role_speedup": {"URMASendToken": 0.85}})
    assert workflow_copy.snakemake("--until", "history", overlay=fast).returncode == 0
    got = verdict(workflow_copy, "fast")
    assert got["verdict"] == "improved", got["metrics"]
    explained = [e["metric"] for m in got["metrics"] if m["verdict"] == "improved" for e in m.get("explained_by", [])]
    assert explained and all("URMASendToken" in e for e in explained[:3]), explained
