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
        ("late_node", True),
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


@pytest.mark.parametrize("shape", [bench.Shape(2, 8), bench.Shape(3, 4)], ids=lambda s: s.label)
@pytest.mark.parametrize("case", ["late_node", "late_rank_100"])
def test_without_a_pure_barrier_a_late_arrivals_cost_is_a_bound_the_truth_keeps(shape, case):
    # Without synchronize_start the clocks come from the target's ends, and in 3x4 node 2 ends ~60 us after node 0 in
    # every launch by the kernel's own structure: the estimate on those clocks is 50-60% under there (2x8: ~1%). The
    # cost is then given as "at most" the lateness itself: it must hold in both shapes, and the estimate stays beside it.
    cases = {c.name: c for c in bench.cases(shape)}
    for seed in (1, 2):
        row = bench.score_case(shape, cases[case], seed=seed, sync=False, n=LAUNCHES)
        assert row["top_right_knob"] and row["cost_bound"] is not None, row
        assert row["bound_holds"] and row["cost_error"] is None and row["estimate_error"] is not None, row
        top_truth = max(t["period"] for t in row["truth"] if t["knob"] != "spikes")
        assert row["named"][0]["cost"] <= row["cost_bound"][1] and top_truth <= row["cost_bound"][1], row
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
        strag = bench.waits.analyse(bench.msprof_view(launches, knobs, shape), bench.SETTINGS, [], bench.BOOT)[
            "straggler"
        ]
        true_cost = next(c["cost_us_per_launch"] for c in truth["causes"] if c["cause"] == "slow_rank")
        assert (strag["evidence"], strag["ranks"]) == ("in_kernel", [14]), strag["causes"]
        top = strag["causes"][0]
        assert top["late_ending_ranks"] == [14] and top["with_ranks"] and 14 not in top["with_ranks"]
        assert abs(top["cost_us_per_launch"] - true_cost) <= 0.35 * true_cost, (top["cost_us_per_launch"], true_cost)
        assert not any(c["evidence"] == "own_work" and c["rank"] == 14 for c in strag["causes"])


def test_a_slow_rank_and_the_receiver_that_ends_with_it_are_costed_together_not_by_the_lead_between_them():
    """3x4: the x1.15 rank 10 ends last in most launches where it is late; one receiver on its node ends a constant
    2-3 us from it (waiting for rank 10's data to the end), and the rest of the late set (ranks 7, 8) ends late by the
    kernel's own structure even without the fault. The whole set's lead over the others' last had costed it at about
    3x its counterfactual truth, its lead over the very next end (that receiver) at about half. Over five seeds the two
    are named as late-ending ranks that end as one, with no blame, and costed within the benchmark's 35% goal of the
    truth, at the benchmark's 200 analysed launches (the issue's length for a case). A receiver that follows in about
    half the launches is a follower or not by the chance of which launches were drawn: at 120 launches seed 4 loses
    rank 9 that way and is costed 46% under (benchmarks/localisation_results.md, README)."""
    shape = bench.Shape(3, 4)
    case = {c.name: c for c in bench.cases(shape)}["slow_rank"]
    for seed in range(1, 6):
        knobs = bench.Knobs(seed=seed, **case.knobs)
        launches, truth = bench.run(shape, knobs, 200 + bench.SKIP, True)
        strag = bench.waits.analyse(bench.msprof_view(launches, knobs, shape), bench.SETTINGS, [], bench.BOOT)[
            "straggler"
        ]
        true_cost = next(c["cost_us_per_launch"] for c in truth["causes"] if c["cause"] == "slow_rank")
        top = strag["causes"][0]
        assert top["evidence"] == "in_kernel" and top["followers_of"] == 10, strag["causes"]
        assert 10 in top["late_ending_ranks"] and set(top["late_ending_ranks"]) <= {9, 10, 11}, top
        assert "end as one" in top["explanation"] and "no claim about why" in top["explanation"]
        assert abs(top["cost_us_per_launch"] - true_cost) <= 0.35 * true_cost, (
            seed,
            top["cost_us_per_launch"],
            true_cost,
        )
        assert not any(
            c["evidence"] == "own_work" and c["rank"] in top["late_ending_ranks"] and c["named"]
            for c in strag["causes"]
        )


def test_a_short_run_without_a_fault_names_no_late_set_that_the_kernels_structure_makes_late():
    """3x4, 25 analysed launches (the workflow's default timeline length), no fault, five seeds: the kernel's own
    structure makes ranks 7, 8, 10 and 11 end late in about 40% of launches, and over 25 launches two of them were in
    52% (seed 5: costed 47 us per launch, named as the late set of most launches; the event truth has no cause). Such a
    set is named only where it is late more often than the others beyond chance: no false alarm, and what is listed
    says why."""
    shape = bench.Shape(3, 4)
    case = {c.name: c for c in bench.cases(shape)}["no_fault"]
    for seed in range(1, 6):
        row = bench.score_case(shape, case, seed=seed, sync=True, n=25 + bench.SKIP)
        assert row["launches"] == 25 and not row["false_alarms"] and not row["victims_blamed"], row
