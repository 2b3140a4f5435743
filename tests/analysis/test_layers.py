"""Each layer's figure for a cause, and which one the cause's row carries (analysis/layers.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.layers import LEAD_ONLY, best_figure, layer_figures


def cause(
    evidence: str, cost: float, rank: int | None = None, node: int | None = None, ranks: list[int] | None = None, **more
) -> dict:
    return {
        "evidence": evidence,
        "rank": rank,
        "node": node,
        "ranks": ranks or ([] if rank is None else [rank]),
        "cost_us_per_launch": cost,
        **more,
    }


NODE1_SENDS = {
    "busiest_node": {
        "node": 1,
        "ranks": list(range(8, 16)),
        "role": "URMASendToken",
        "phase": "send_complete",
        "excess_us": 978.5,
    }
}
RANK11_URMA = {
    "rank": 11,
    "role": "URMASendToken",
    "excess_us": 70.0,
    "excess_us_per_launch": 88.0,
    "excess_us_per_launch_low": 58.8,
}


def test_a_late_ending_node_takes_debugclocks_larger_slot_excess_of_the_same_node():
    late_node = cause("late_ending_node", 17.0, node=1, ranks=list(range(8, 16)))
    figures = layer_figures(late_node, None, NODE1_SENDS)
    assert [f.layer for f in figures] == ["timeline", "DebugClock"]
    best = best_figure(late_node, figures)
    assert best.layer == "DebugClock" and best.us_per_launch == 978.5


def test_a_late_ending_set_on_the_node_takes_debugclocks_figure_through_its_ranks():
    late_set = cause("in_kernel", 211.0, ranks=[9, 10])
    best = best_figure(late_set, layer_figures(late_set, None, NODE1_SENDS))
    assert best.layer == "DebugClock"


def test_another_nodes_slot_excess_is_not_this_causes_figure():
    late_node = cause("late_ending_node", 17.0, node=0, ranks=list(range(8)))
    figures = layer_figures(late_node, None, NODE1_SENDS)
    assert [f.layer for f in figures] == ["timeline"]
    assert best_figure(late_node, figures).layer == "timeline"


def test_own_work_keeps_the_timelines_group_saving_even_beside_a_larger_lower_layer():
    # its lead over the next end is what the group waits for it: a
    # lower layer's larger excess is the role's, not the group's
    own = cause("own_work", 32.3, rank=11)
    figures = layer_figures(own, RANK11_URMA, {"busiest": {"rank": 11, "role": "URMASendToken", "excess_us": 500.0}})
    assert [f.layer for f in figures] == ["timeline", "DebugClock", "PMU"]
    assert best_figure(own, figures).layer == "timeline"


def test_the_pmu_gives_its_range_beside_but_never_replaces_the_timeline():
    late_set = cause("in_kernel", 32.3, ranks=[11, 12])
    figures = layer_figures(late_set, RANK11_URMA, None)
    pmu = figures[-1]
    assert (pmu.layer, pmu.us_per_launch, pmu.low_us) == ("PMU", 88.0, 58.8)
    assert "if that role is on the critical path" in pmu.measures
    assert best_figure(late_set, figures).layer == "timeline"


def test_a_bound_stays_the_timelines_statement():
    bounded = cause("late_ending_node", 17.0, node=1, ranks=list(range(8, 16)), cost_bound_us=[0.0, 40.0])
    assert best_figure(bounded, layer_figures(bounded, None, NODE1_SENDS)).layer == "timeline"


def test_a_smaller_slot_excess_leaves_the_timelines_figure():
    late_node = cause("late_ending_node", 2000.0, node=1, ranks=list(range(8, 16)))
    assert best_figure(late_node, layer_figures(late_node, None, NODE1_SENDS)).layer == "timeline"


EVIDENCE = st.sampled_from(["own_work", "late_arrival", *sorted(LEAD_ONLY)])
COST = st.floats(0, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    evidence=EVIDENCE,
    cost=COST,
    rank=st.one_of(st.none(), st.integers(0, 63)),
    node=st.one_of(st.none(), st.integers(0, 7)),
    ranks=st.lists(st.integers(0, 63), max_size=8),
    dc_excess=st.one_of(st.none(), COST),
    dc_node=st.integers(0, 7),
    pmu_rank=st.one_of(st.none(), st.integers(0, 63)),
    pmu_high=COST,
    pmu_low=st.one_of(st.none(), COST),
)
def test_the_best_figure_is_one_of_the_layers_that_saw_the_cause(
    evidence, cost, rank, node, ranks, dc_excess, dc_node, pmu_rank, pmu_high, pmu_low
):
    c = cause(evidence, cost, rank=rank, node=node, ranks=ranks)
    dc = (
        None
        if dc_excess is None
        else {"busiest_node": {"node": dc_node, "ranks": [], "role": "URMASendToken", "excess_us": dc_excess}}
    )
    pmu = (
        None
        if pmu_rank is None
        else {"rank": pmu_rank, "role": "CalCumSum", "excess_us": pmu_high, "excess_us_per_launch_low": pmu_low}
    )
    figures = layer_figures(c, pmu, dc)
    best = best_figure(c, figures)
    assert figures[0].layer == "timeline" and figures[0].us_per_launch == cost
    assert best in figures and best.layer != "PMU"
    # never a smaller figure than the timeline's group saving, and a lower layer only for a lead-only cause
    assert best.us_per_launch >= cost
    assert best.layer == "timeline" or evidence in LEAD_ONLY
    for f in figures:
        assert f.low_us is None or f.low_us < f.us_per_launch
