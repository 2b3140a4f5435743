"""The role link of the answer on the simulated cluster (2 nodes x 8 ranks): a slower LocalWindowCopy on rank 6,
with DebugClock run beside the PMU (debugclock.when: always). One collected run shared by the assertions; the
truth is the PMU replay's events (sim_truth.json's per-rank, per-role busy time), never the knob."""

import json
import re
from html import unescape
from statistics import median

import pytest

from conftest import base_overlay, copy_workflow

FAULTS = {"slow_role": {"rank": 6, "role": "LocalWindowCopy", "factor": 1.3}}


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    wf = copy_workflow(tmp_path_factory.mktemp("roles") / "wf")
    result = wf.snakemake(overlay=base_overlay(sim=FAULTS, debugclock={"when": "always", "format": "akl"}), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return wf


def read(wf, path):
    return json.loads((wf.root / "results/baseline" / path).read_text())


def test_the_pmu_names_the_rank_and_role_whose_busy_time_the_events_raised_most(collected):
    replay = read(collected, "pmu/run/latency/sim_truth.json")["replays"][0]["ranks"]
    roles = replay[0]["roles"]
    # what happened: per role, each rank's busy time against the role's median over ranks
    ratio = {
        (r["rank"], role): r["roles"][role]["busy_us_max"] / median(x["roles"][role]["busy_us_max"] for x in replay)
        for r in replay
        for role in roles
    }
    true_rank, true_role = max(ratio, key=ratio.get)
    busy = read(collected, "report/summary.json")["pmu"]["busiest"]
    assert (busy["rank"], busy["role"], busy["every_role_pattern"]) == (true_rank, true_role, "same_us")
    assert busy["ranked_by"] == "nonscalar_us_high"

    # per core and launch, what the events added to rank 6's cores (every role alike): within the PMU's range
    # (largest pipe .. pipes summed, as pipes overlap)
    def excess(role):
        per = {r["rank"]: median(c["busy_us"] for c in r["cores"] if c["role"] == role) for r in replay}
        return per[true_rank] - median(v for k, v in per.items() if k != true_rank)

    true_us = median(excess(role) for role in roles if role != "LocalWindowCopy")
    assert busy["excess_us_per_launch_low"] <= true_us <= busy["excess_us_per_launch"]


def test_the_answer_has_the_role_with_its_cost_debugclock_beside_the_pmu_and_the_wait_work_heat_maps(collected):
    html = (collected.root / "results/baseline/report/report.html").read_text()
    answer = unescape(re.sub("<[^>]+>", "", re.search(r"<dl class=\"evidence\">(.*?)</dl>", html, re.S).group(1)))
    assert "waiting excluded" not in answer and "the scalar pipe included" in answer
    assert (
        "every role of rank 6 is busier than the same role on the other ranks by about the same time" in answer
        and "LocalWindowCopy" in answer
    )
    assert re.search(
        r"The role's excess on its vector and MTE pipes \(its scalar "
        r"work not counted\)(, | is )\d+\.\d to \d+\.\d us per launch",
        answer,
    )
    assert "DebugClock also ran (a DEBUG_CLOCK_ON build)" in answer  # PMU ok, and DebugClock is still in the answer
    assert "Wait slots per rank and role" in html and "Work slots per rank and role" in html
    lw = read(collected, "report/summary.json")["debugclock"]["local_window_copy"]["per_rank"]
    assert set(lw) == {str(r) for r in range(16)} and all(v["peers_spread_us"] is not None for v in lw.values())
