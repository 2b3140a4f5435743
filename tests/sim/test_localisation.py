"""A CI-sized subset of benchmarks/localisation.py: the cost account scored against the event model's counterfactual
truth (the same draws, the cause removed), on a few faults of the matrix. The full matrix and its table are the
benchmark's (benchmarks/localisation_results.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import localisation as bench  # noqa: E402

SHAPE = bench.Shape(2, 8)
LAUNCHES = 120 + bench.SKIP
CASES = {c.name: c for c in bench.cases(SHAPE)}


@pytest.mark.parametrize(
    ("case", "sync"),
    [
        ("late_rank_30", True),
        ("late_node", False),
        ("slow_role_LocalWindowCopy", True),
        ("spiky_rank", True),
        ("two_causes", True),
        # slowdowns in every launch: a slow rank and a slow sender, named as the ranks that end late in most launches
        ("slow_rank", True),
        ("slow_role_URMASendToken", True),
    ],
)
def test_the_top_cause_and_its_cost_are_the_truths(case, sync):
    row = bench.score_case(SHAPE, CASES[case], seed=2, sync=sync, n=LAUNCHES)
    # the top cause among the knobs (a single built-in spike may cost more in a short run: it is not named, its CI
    # reaches zero)
    assert row["top_right_knob"], row
    assert row["cost_error"] is not None and row["cost_error"] <= 0.35, row
    assert not row["victims_blamed"] and not row["false_alarms"], row


def test_without_a_fault_nothing_is_named_that_costs_nothing():
    row = bench.score_case(SHAPE, CASES["no_fault"], seed=1, sync=True, n=LAUNCHES)
    assert not row["false_alarms"] and not row["victims_blamed"], row


def test_a_slow_rank_whose_receivers_end_after_it_is_the_core_of_the_late_ending_ranks():
    """The workflow's default shape (2x8, 56 AIV, 256 tokens): a x1.15 rank rarely ends last itself, its receivers on
    the other node end just after it, waiting for its tokens. It is named as the core of the late-ending ranks with a
    cost within the benchmark's 35% goal of its counterfactual truth, and never blamed alone as own work."""
    shape = bench.Shape(2, 8, num_aiv=56, num_experts=384, num_tokens=256)
    for seed in (0, 1):
        knobs = bench.Knobs(seed=seed, slow_rank=14)
        launches, truth = bench.run(shape, knobs, 100 + bench.SKIP, True)
        strag = bench.waits.analyse(bench.msprof_view(launches, knobs, shape), bench.SETTINGS, [], bench.BOOT)["straggler"]
        true_cost = next(c["cost_us_per_launch"] for c in truth["causes"] if c["cause"] == "slow_rank")
        assert (strag["evidence"], strag["ranks"]) == ("in_kernel", [14]), strag["causes"]
        top = strag["causes"][0]
        assert top["late_ending_ranks"] == [14] and top["with_ranks"] and 14 not in top["with_ranks"]
        assert abs(top["cost_us_per_launch"] - true_cost) <= 0.35 * true_cost, (top["cost_us_per_launch"], true_cost)
        assert not any(c["evidence"] == "own_work" and c["rank"] == 14 for c in strag["causes"])


def test_a_slow_rank_that_ends_last_itself_is_costed_by_its_own_lead_not_its_receivers():
    """3x4: the x1.15 rank 10 ends last in about half the launches, its receivers (ranks 9 and 11) just behind it,
    and the rest of the late set (ranks 7, 8) ends late by the kernel's own structure even without the fault. The
    whole set's lead over the others' last had costed it at about 3x its counterfactual truth; where it ends last, its
    own lead over the next end is its delay. Over five seeds it is named as the core of the late-ending ranks and
    never costed above its truth by more than the benchmark's 35% goal (the lead understates where the next end is a
    receiver that waited for it: benchmarks/localisation_results.md)."""
    shape = bench.Shape(3, 4)
    case = {c.name: c for c in bench.cases(shape)}["slow_rank"]
    for seed in range(1, 6):
        row = bench.score_case(shape, case, seed, sync=True, n=LAUNCHES)
        assert row["top_right_knob"], row
        (true,) = [t["period"] for t in row["truth"] if t["knob"] == "slow_rank"]
        assert 0 < row["named"][0]["cost"] <= 1.35 * true, (seed, row["named"][0], true)
        assert not row["victims_blamed"] and not row["false_alarms"], row
