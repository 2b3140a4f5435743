"""A sweep on the simulator (issue 61 acceptance): three speed-ups of URMASendToken, each point an experiment measured
by its baseline, ranked in results/sweep/send/sweep.json. The expected order is the event model's: each point's
median over its measured launches of the slowest rank's kernel time in sim_truth.json, never the knob values."""

from __future__ import annotations

import json
import re
from statistics import median

import pytest

from conftest import base_overlay

SPEEDUPS = [1.2, 0.8, 1.0]
ROLES_32 = [
    {"name": "TokenCopyToBuffer", "count": 10},
    {"name": "URMASendToken", "count": 10},
    {"name": "SelfCopyToken", "count": 4},
    {"name": "CalCumSum", "count": 8},
]
AIV_ROWS = [{"shape.num_aiv": 32, "kernel.roles": ROLES_32}, {"shape.num_aiv": 56}]


def overlay() -> dict:
    return base_overlay(
        sweep={
            "send": {"axes": {"sim.role_speedup.URMASendToken": SPEEDUPS}},
            "aiv": {"rows": AIV_ROWS},
        }
    )


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from conftest import copy_workflow

    wf = copy_workflow(tmp_path_factory.mktemp("sweep") / "wf")
    planned = wf.snakemake("-n", "--until", "sweep", overlay=overlay())
    result = wf.snakemake("--until", "sweep", overlay=overlay(), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    wf.result = result
    return wf, planned


def truth_kernel_us(root, run: str) -> float:
    """The event model's kernel time of a run: per measured launch the slowest rank's kernel, the median of those."""
    truth = json.loads((root / "results" / run / "baseline" / "run" / "latency" / "sim_truth.json").read_text())
    measured = set(truth["measured_calls"])
    launches = [launch for launch in truth["launches"] if launch["call"] in measured]
    return median(max(r["kernel_end_us"] - r["kernel_start_us"] for r in launch["ranks"]) for launch in launches)


def test_the_dry_run_lists_every_point(swept):
    _, planned = swept
    out = planned.stdout + planned.stderr
    assert planned.returncode == 0, out[-2000:]
    for point in ("send_1", "send_2", "send_3", "aiv_1", "aiv_2"):
        assert f"results/sweep_{point}/baseline/collect/status.json" in out
    assert re.search(r"^baseline_collect\s+5$", out, re.M) and re.search(r"^sweep\s+2$", out, re.M), out[-2000:]
    assert not re.search(r"^(timeline_collect|pmu_collect)\s", out, re.M)  # only the stages the sweep needs


def test_the_fastest_point_by_the_events_is_best_and_told_apart_from_every_other(swept):
    wf, _ = swept
    record = json.loads((wf.root / "results" / "sweep" / "send" / "sweep.json").read_text())
    truth = {f"sweep_send_{n}": truth_kernel_us(wf.root, f"sweep_send_{n}") for n in (1, 2, 3)}
    expected = sorted(truth, key=truth.get)
    assert [p["name"] for p in record["points"]] == expected, (truth, record["points"])
    assert record["best"] == expected[0] and record["runner_up"] == expected[1]
    best = next(p for p in record["points"] if p["name"] == record["best"])
    assert best["params"] == {"sim.role_speedup.URMASendToken": 0.8}  # the knob agrees with the events here
    assert record["verdict"] == "best", record["reason"]
    assert all(c["separated"] and c["ci95"][0] > 0 for c in record["comparisons"]), record["comparisons"]
    assert record["difference_ci95"][0] > 0 and record["tied_with"] == []
    for p in record["points"]:
        assert p["state"] == "ok" and p["repeats"] == 1 and p["note"] == "1 repeat: its CI is within-run only"
        assert p["ci95"][0] <= p["median_us"] <= p["ci95"][1] and p["p95_us"] >= p["median_us"]
        assert p["efficiency"] is not None and 0 < p["efficiency"] <= 1
        assert p["label"] == f"sim__role_speedup__URMASendToken~{p['params']['sim.role_speedup.URMASendToken']}"
    markdown = (wf.root / "results" / "sweep" / "send" / "sweep.md").read_text()
    assert "**best**" in markdown and "SIMULATED DATA" in markdown
    page = (wf.root / "results" / "sweep" / "send" / "sweep.html").read_text()
    assert page.count("<svg") == 1 and "<title>sim.role_speedup.URMASendToken</title>" in page  # latency vs the axis
    assert all(p["bound_us"] is not None and p["bound_us"] < p["median_us"] for p in record["points"])


def test_the_end_of_run_table_lists_the_points_by_their_stages_and_the_sweep_by_its_verdict(swept):
    wf, _ = swept
    out = wf.result.stdout + wf.result.stderr
    # the reason column wraps at the width of the terminal: the name may end its line
    assert re.search(r"^sweep send\s+sweep\s+best\s+sweep_send_2\b", out, re.M), out[-3000:]
    assert re.search(r"^sweep_send_1\s+baseline\s+ok", out, re.M)
    assert not re.search(r"^sweep_send_\d\s+(pmu|report)\s", out, re.M)  # not a sweep's stages: not listed
    assert "Sweep send: results/sweep/send/sweep.html" in out and "report.html does not exist" not in out


def test_a_rows_sweep_of_num_aiv_with_its_roles_is_ranked_as_the_events_order_it(swept):
    wf, _ = swept
    record = json.loads((wf.root / "results" / "sweep" / "aiv" / "sweep.json").read_text())
    truth = {f"sweep_aiv_{n}": truth_kernel_us(wf.root, f"sweep_aiv_{n}") for n in (1, 2)}
    assert [p["name"] for p in record["points"]] == sorted(truth, key=truth.get), (truth, record["points"])
    assert all(p["state"] == "ok" for p in record["points"]) and record["verdict"] in ("best", "tied")
    assert {p["params"]["shape.num_aiv"] for p in record["points"]} == {32, 56}


def test_an_impossible_point_is_refused_by_the_dry_run_and_the_others_are_planned(workflow_copy):
    sweep = {"mixed": {"rows": [{"shape.num_experts": 100}, {"shape.num_tokens": 128}]}}
    planned = workflow_copy.snakemake("-n", overlay=base_overlay(sweep=sweep))
    out = planned.stdout + planned.stderr
    assert planned.returncode == 0, out[-2000:]
    assert "Note: sweep mixed: point 1 (sweep_mixed_1: shape__num_experts~100) refused: shape.num_experts (100)" in out
    assert "Note: sweep mixed: the other 1 of 2 points run" in out
    assert "results/sweep_mixed_2/baseline/collect/status.json" in out and "results/sweep_mixed_1/" not in out


def test_a_sweep_with_the_timeline_plans_it_for_every_point_and_ranks_on_it(workflow_copy):
    sweep = {"t": {"axes": {"shape.num_tokens": [128, 256]}, "stages": ["baseline", "timeline"]}}
    planned = workflow_copy.snakemake("-n", overlay=base_overlay(sweep=sweep))
    out = planned.stdout + planned.stderr
    assert planned.returncode == 0, out[-2000:]
    assert re.search(r"^timeline\s+2$", out, re.M) and not re.search(r"^pmu_collect\s", out, re.M), out[-2000:]
    sweep_job = out[out.index("rule sweep:") :].split("\n\n")[0]
    assert (
        "results/sweep_t_1/timeline/stats.json" in sweep_job and "results/sweep_t_2/timeline/status.json" in sweep_job
    )


def test_no_point_left_refuses_the_configuration_before_anything_runs(workflow_copy):
    planned = workflow_copy.snakemake("-n", overlay=base_overlay(sweep={"n": {"axes": {"cluster.nodes": [1, 4]}}}))
    out = planned.stdout + planned.stderr
    assert planned.returncode == 1 and "Configuration refused; nothing was run" in out, out[-2000:]
    assert "sweep.n: no point is left to run" in out and "cluster.nodes cannot vary per experiment" in out
