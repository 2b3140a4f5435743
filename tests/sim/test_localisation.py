"""A CI-sized subset of benchmarks/localisation.py: the cost account scored against the event model's counterfactual
truth (the same draws, the cause removed), on a few faults of the matrix. The full matrix and its table are the
benchmark's (benchmarks/localisation_results.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import localisation as bench  # noqa: E402

from dispatchprof.report.cause_text import in_words  # noqa: E402

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
    # cost is then given as "at most" the lateness itself: it
    # must hold in both shapes, and the estimate stays beside it.
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


def delays(shape: bench.Shape, knobs: bench.Knobs, n: int) -> tuple[list, dict, np.ndarray, np.ndarray]:
    """The run's launches and truth, its kernel ends per analysed launch and rank (since the launch's first start), and
    per rank the median delay of its end that the knobs cause:
    the same draws without them (the events' counterfactual)."""
    launches, truth = bench.run(shape, knobs, n, True)
    base, _ = bench.run(shape, bench.Knobs(seed=knobs.seed), n, True)

    def ends(runs: list) -> np.ndarray:
        return np.array(
            [
                [r.kernel_end - min(x.kernel_start for x in lc.ranks) for r in sorted(lc.ranks, key=lambda r: r.rank)]
                for lc in runs[bench.SKIP :]
            ]
        )

    mine = ends(launches)
    return launches, truth, mine, np.median(mine - ends(base), axis=0)


def test_a_slow_rank_whose_whole_receiving_node_ends_with_it_is_named_as_its_likely_pacer():
    """The workflow's default shape (2x8, 56 AIV, 256 tokens), a x1.15 rank 14. With the links' ports shared per rank
    (sim.link_gbps) its late inter-node sends pace every rank of the other node: in the events all eight end ~33 us
    late and end 1-2 us after rank 14 itself, which almost never ends last. Nine ranks of sixteen end late: more than
    half, which a late set may be only in a node's shape (end_order.node_shaped): every rank of node 0 with rank 14,
    whose node mates end early. Named as late-ending ranks with rank 14 the likely pacer, costed within the
    benchmark's 35% goal, and no waiting rank blamed alone; the PMU's busiest rank is rank 14 too, its own work as a
    whole (every role by about the same fraction). Before the node shape the timeline named nobody here."""
    shape = bench.Shape(2, 8, num_aiv=56, num_experts=384, num_tokens=256)
    for seed in (0, 1):
        knobs = bench.Knobs(seed=seed, slow_rank=14)
        launches, truth, ends, delay = delays(shape, knobs, 100 + bench.SKIP)
        late = set(np.flatnonzero(delay > bench.SETTINGS["own_work_min_us"]).tolist())
        assert late == {*range(8), 14}, delay
        assert (np.argmax(ends, axis=1) == 14).mean() < 0.1 and (ends[:, 14] < ends[:, :8].max(axis=1)).mean() > 0.9
        true_cost = next(c["cost_us_per_launch"] for c in truth["causes"] if c["cause"] == "slow_rank")
        assert true_cost > bench.SETTINGS["min_cost_us"]
        strag = bench.waits.analyse(bench.msprof_view(launches, knobs, shape), bench.SETTINGS, [], bench.BOOT)[
            "straggler"
        ]
        top = strag["causes"][0]
        assert top["named"] and set(top["late_ending_ranks"]) == late and top["likely_pacer"] == [14], top
        assert abs(top["cost_us_per_launch"] - true_cost) < 0.35 * true_cost, (top, true_cost)
        pmu = bench.pmu_busiest(shape, knobs)
        assert pmu is not None and pmu["rank"] == 14 and pmu["every_role_pattern"] == "same_fraction", pmu


def test_a_slow_rank_and_the_receiver_that_ends_with_it_are_costed_together_not_by_the_lead_between_them():
    """3x4, a x1.15 rank 10: in the events it ends last in most launches and rank 9, a receiver on its node, ends a
    constant ~1.6 us before it launch after launch (waiting for its data to the end), so both are in the late set of
    most launches. Over five seeds the two are named as late-ending ranks that end together, only ranks the slow rank
    delays (their end later than without it by more than own_work_min_us), with no blame, and costed within the
    benchmark's 35% goal of the truth, at the benchmark's 200 analysed launches (the issue's length for a case). A
    lead over the very next end (rank 9) had costed rank 10 at about half its counterfactual truth. (Before the link
    capacities rank 9 followed in about half the launches, and was named as rank 10's follower.)"""
    shape = bench.Shape(3, 4)
    case = {c.name: c for c in bench.cases(shape)}["slow_rank"]
    own_min = bench.SETTINGS["own_work_min_us"]
    for seed in range(1, 6):
        knobs = bench.Knobs(seed=seed, **case.knobs)
        launches, truth, ends, delay = delays(shape, knobs, 200 + bench.SKIP)
        lag = ends[:, 10] - ends[:, 9]
        assert (np.argmax(ends, axis=1) == 10).mean() > 0.9, seed
        assert 1.4826 * np.median(np.abs(lag - np.median(lag))) < own_min, seed
        waited = bench.waits.analyse(bench.msprof_view(launches, knobs, shape), bench.SETTINGS, [], bench.BOOT)
        strag = in_words(waited, bench.SETTINGS)["straggler"]  # the explanation, as the timeline stage writes it
        true_cost = next(c["cost_us_per_launch"] for c in truth["causes"] if c["cause"] == "slow_rank")
        top = strag["causes"][0]
        assert top["evidence"] == "in_kernel" and top["named"], strag["causes"]
        assert {9, 10} <= set(top["late_ending_ranks"]) <= set(np.flatnonzero(delay > own_min).tolist()), (top, delay)
        assert "no claim about why" in top["explanation"]
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


def test_a_slow_local_window_copy_in_every_launch_is_named_first_with_its_event_cost():
    """Issue 45's case: the workflow's default shape, rank 3's LocalWindowCopy x1.6 in every launch (its host on time).
    It was named at 1.0 us per launch against an event truth of 1.86 (outside its CI). Rank 3 is named first, as its
    own work, with both costs within the benchmark's 35% of the events' (the same draws without the slow role), and
    the PMU beside it names rank 3's LocalWindowCopy."""
    shape = bench.Shape(2, 8, num_aiv=56, num_experts=384, num_tokens=256)
    knobs = bench.Knobs(seed=0, slow_role=(3, "LocalWindowCopy", 1.6))
    launches, truth = bench.run(shape, knobs, 120 + bench.SKIP, True)
    true = next(c for c in truth["causes"] if c["cause"] == "slow_role")
    top = bench.waits.analyse(bench.msprof_view(launches, knobs, shape), bench.SETTINGS, [], bench.BOOT)["straggler"][
        "causes"
    ][0]
    assert (top["evidence"], top["rank"], top["named"]) == ("own_work", 3, True), top
    assert abs(top["cost_us_per_launch"] - true["cost_us_per_launch"]) < 0.35 * true["cost_us_per_launch"], (top, true)
    assert (
        abs(top["cost_timed_us_per_launch"] - true["cost_timed_us_per_launch"])
        < 0.35 * true["cost_timed_us_per_launch"]
    ), (top, true)
    pmu = bench.pmu_busiest(shape, knobs)
    assert pmu is not None and (pmu["rank"], pmu["role"]) == (3, "LocalWindowCopy"), pmu
