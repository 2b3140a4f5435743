"""The comparison's layers on hand-built tables (analysis/compare_layers.py): one function per layer, the four
answers, Holm's correction, layers one side lacks, causes on one side only, degenerate tables."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis import compare_layers as cl
from dispatchprof.analysis.tdist import t_quantile, t_two_sided

ANSWERED = {*cl.ANSWERS, "changed", "appeared", "gone", "not comparable", "pass", "fail"}


def cores(rng, busy_by_role, launches=4, ranks=2, cores_per_role=3, icache=0.02):
    """A PMU cores table: per rank, launch and core of each role, busy time around the role's value, a launch-wide
    offset shared by every core of a launch (what makes cores of one launch not independent)."""
    rows = []
    for launch in range(launches):
        shift = rng.normal(0, 2.0)
        for rank in range(ranks):
            for role, busy in busy_by_role.items():
                for core in range(cores_per_role):
                    b = busy + shift + rng.normal(0, 1.0)
                    rows.append(
                        dict(
                            rank=rank,
                            launch=launch,
                            role=role,
                            aiv_index=core,
                            busy_us_high=b,
                            aiv_time_us=1000 + shift,
                            aiv_icache_miss_rate=icache + rng.normal(0, 1e-4),
                            aiv_vec_ratio=0.1 + rng.normal(0, 1e-3),
                        )
                    )
    return pd.DataFrame(rows).assign(_repeat=0)


def side(label, **layers):
    return cl.Side(label, **layers)


def test_holm_steps_down_and_stops_at_the_first_kept():
    assert cl.holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert cl.holm([0.01, 0.02, 0.03], alpha=0.1) == [True, True, True]  # 0.01<=0.033, 0.02<=0.05, 0.03<=0.1
    assert cl.holm([]) == []


def test_holm_keeps_the_family_wise_error_of_50_null_rows():
    rng = np.random.default_rng(3)
    flagged = sum(any(cl.holm(list(rng.uniform(size=50)))) for _ in range(2000))
    assert flagged / 2000 <= 0.06  # alpha 0.05, plus sampling error of 2000 families


def test_welch_rows_of_an_aa_family_of_50_rows_flag_none_in_95_percent():
    """50 rows of 4 launches per side, no difference: after decide, no row improved/regressed in >= 95% of runs."""
    rng = np.random.default_rng(11)
    runs = 300
    alarms = 0
    for _ in range(runs):
        rows = [cl.welch("pmu", f"m{i}", "us", rng.normal(100, 2, 4), rng.normal(100, 2, 4)) for i in range(50)]
        alarms += any(r.verdict in cl.FLAGGED for r in cl.decide(rows))
    assert alarms / runs <= 0.06


def test_the_t_distribution_matches_its_tables():
    assert t_quantile(0.975, 3) == pytest.approx(3.1824, abs=1e-3)
    assert t_quantile(0.975, 30) == pytest.approx(2.0423, abs=1e-3)
    assert t_two_sided(2.0, 5) == pytest.approx(0.1019, abs=1e-3)


def test_four_answers():
    a = [100.0, 100.1, 99.9, 100.05]
    rows = cl.decide(
        [
            cl.welch("pmu", "down", "us", a, [80.0, 81.0, 79.0, 80.5]),
            cl.welch("pmu", "up", "us", a, [120.0, 121.0, 119.0, 120.5]),
            cl.welch("pmu", "same", "us", a, a[::-1]),  # the same values: a CI well inside the 1% margin
            cl.welch("pmu", "noisy", "us", a, [90.0, 130.0, 70.0, 115.0]),
        ]
    )
    assert [r.verdict for r in rows] == ["improved", "regressed", "unchanged", "inconclusive"]
    (tie,) = cl.decide([cl.welch("pmu", "tie", "us", [5.0] * 4, [5.0] * 4)])  # no spread at all: CI [0, 0]
    assert tie.verdict == "unchanged" and tie.ci95 == (0.0, 0.0)
    assert "launch" not in (rows[3].note or "") and "per side would decide" in rows[3].note


def test_direction_follows_better_and_a_directionless_move_is_changed():
    a, b = [0.5, 0.51, 0.49, 0.5], [0.6, 0.61, 0.59, 0.6]
    higher, none = cl.decide(
        [cl.welch("links", "eff", "", a, b, better="higher"), cl.welch("pmu", "r", "", a, b, better=None)]
    )
    assert higher.verdict == "improved" and none.verdict == "changed"


def test_one_unit_per_side_is_inconclusive_and_says_how_many_would_decide():
    (row,) = cl.decide([cl.welch("pmu", "busy_us", "us", [100.0], [80.0], what="launches")])
    assert row.verdict == "inconclusive" and row.ci95 is None
    assert "one launch on a side" in row.note and f"at least {cl.MIN_UNITS} launches per side" in row.note


def test_pmu_rows_resample_launches_and_only_the_changed_role_moves():
    rng = np.random.default_rng(0)
    base = {"URMASendToken": 350.0, "TokenCopyToBuffer": 320.0, "CalCumSum": 77.0}
    a = side("A", pmu=[cores(rng, base)])
    b = side("B", pmu=[cores(rng, {**base, "URMASendToken": 350.0 * 0.85})])
    rows = {r.key: r for r in cl.decide(cl.pmu_rows(a, b))}
    assert rows["pmu.URMASendToken.busy_us"].verdict == "improved"
    assert rows["pmu.URMASendToken.busy_us"].units == (4, 4)  # launches, not 4 x 2 x 3 cores
    for role in ("TokenCopyToBuffer", "CalCumSum"):
        assert rows[f"pmu.{role}.busy_us"].verdict in ("unchanged", "inconclusive")
    assert rows["pmu.aiv_time_us"].role is None  # the kernel's row, not a role's


def test_pmu_with_one_launch_per_rank_is_inconclusive():
    rng = np.random.default_rng(1)
    a, b = side("A", pmu=[cores(rng, {"X": 100.0}, launches=1)]), side("B", pmu=[cores(rng, {"X": 50.0}, launches=1)])
    row = {r.key: r for r in cl.decide(cl.pmu_rows(a, b))}["pmu.X.busy_us"]
    assert row.verdict == "inconclusive" and "at least 4 launches per side" in row.note


def cause(evidence, ranks, cost, ci):
    return {"evidence": evidence, "rank": ranks[0], "ranks": ranks, "cost_us_per_launch": cost, "cost_ci_us": ci}


def timeline(*causes, excess=10.0):
    return {
        "causes": list(causes),
        "straggler": {"excess": {"period_us_per_launch": excess, "timed_us_per_launch": 1.0}},
    }


def test_cost_rows_match_causes_by_kind_and_ranks_and_name_appeared_and_gone():
    a = side(
        "A",
        timeline=[timeline(cause("own_work", [3], 20.0, [18.0, 22.0]), cause("late_arrival", [1], 5.0, [4.0, 6.0]))],
    )
    b = side(
        "B",
        timeline=[timeline(cause("own_work", [3], 10.0, [9.0, 11.0]), cause("late_arrival", [5], 30.0, [25.0, 35.0]))],
    )
    rows = {r.key: r for r in cl.decide(cl.cost_rows(a, b))}
    assert rows["cost.own_work.ranks3"].verdict == "improved" and rows["cost.own_work.ranks3"].difference == -10.0
    appeared, gone = rows["cost.late_arrival.ranks5"], rows["cost.late_arrival.ranks1"]
    assert (
        appeared.verdict == "appeared" and appeared.b == 30.0 and appeared.a is None and appeared.ci95 == (25.0, 35.0)
    )
    assert gone.verdict == "gone" and gone.a == 5.0 and gone.difference == -5.0
    assert "cost.excess.period" in rows


def test_cost_rows_with_no_cause_on_either_side_still_give_the_excess():
    rows = cl.decide(cl.cost_rows(side("A", timeline=[timeline()]), side("B", timeline=[timeline(excess=10.0)])))
    assert [r.metric for r in rows] == ["excess.period", "excess.timed"] and all(r.verdict for r in rows)


def test_a_layer_one_side_lacks_is_one_row_not_comparable_naming_why():
    a = side("A", pcsampling=[{"per_rank": {}}])
    b = side("B", missing={"pcsampling": "x: pcsampling is skipped (no PMU)"})
    (row,) = cl.layer_rows("pcsampling", a, b)
    assert row.verdict == "not comparable" and "B: x: pcsampling is skipped (no PMU)" in row.note
    (empty,) = cl.layer_rows("debugclock", side("A"), side("B"))
    assert empty.verdict == "not comparable" and "no debugclock data" in empty.note


def test_a_damaged_table_is_not_comparable_not_a_crash():
    broken = pd.DataFrame({"rank": [0], "launch": [0]}).assign(_repeat=0)  # no role column
    (row,) = cl.layer_rows("pmu", side("A", pmu=[broken]), side("B", pmu=[broken]))
    assert row.verdict == "not comparable" and "could not be read" in row.note


def test_links_bytes_are_exact_and_efficiency_has_a_ci():
    bw = {
        "links": {"inter_node": {"bytes_per_launch": 100}},
        "bound_us": 50.0,
        "efficiency": 0.5,
        "efficiency_ci95": [0.49, 0.51],
    }
    bw2 = {**bw, "efficiency": 0.6, "efficiency_ci95": [0.59, 0.61]}
    rows = {
        r.key: r
        for r in cl.decide(
            cl.links_rows(side("A", baseline=[{"bandwidth": bw}]), side("B", baseline=[{"bandwidth": bw2}]))
        )
    }
    assert (
        rows["links.inter_node.bytes_per_launch"].verdict == "unchanged"
        and rows["links.bound_us"].verdict == "unchanged"
    )
    assert rows["links.efficiency"].verdict == "improved"


def test_pcsampling_ranks_are_units_with_both_denominators():
    def stalls(ibuf):
        return {
            "per_rank": {
                str(r): {
                    "all_samples": {"IBuf_Empty": ibuf + 0.001 * r},
                    "not_issue": {"IBuf_Empty": 2 * ibuf + 0.001 * r},
                }
                for r in range(8)
            },
            "hot_lines": [{"file": "k.cpp", "line": 3, "share_of_samples": ibuf}],
        }

    rows = {
        r.key: r
        for r in cl.decide(
            cl.pcsampling_rows(side("A", pcsampling=[stalls(0.1)]), side("B", pcsampling=[stalls(0.05)]))
        )
    }
    assert rows["pcsampling.IBuf_Empty.all_samples"].verdict == "improved" and rows[
        "pcsampling.IBuf_Empty.all_samples"
    ].units == (8, 8)
    assert "pcsampling.IBuf_Empty.not_issue" in rows and rows["pcsampling.hot_line.k.cpp:3"].verdict == "inconclusive"


def test_debugclock_phase_per_role():
    def seg(us):
        return pd.DataFrame(
            [
                dict(rank=r, launch=n, role="URMASendToken", phase="send_complete", us=us + n + 0.1 * r)
                for r in range(2)
                for n in range(4)
            ]
        ).assign(_repeat=0)

    (row,) = cl.decide(cl.debugclock_rows(side("A", debugclock=[seg(800.0)]), side("B", debugclock=[seg(700.0)])))
    assert row.key == "debugclock.URMASendToken.send_complete_us" and row.verdict == "improved"


def test_sides_with_different_rank_coverage_are_compared_on_the_common_ranks():
    lat = lambda ranks: pd.DataFrame({"rank": ranks, "us": 1.0})  # noqa: E731
    rng = np.random.default_rng(2)
    a = side("A", latency=[lat([0, 1, 2])], pmu=[cores(rng, {"X": 1.0}, ranks=3)])
    b = side("B", latency=[lat([0, 1])], pmu=[cores(rng, {"X": 1.0}, ranks=2)])
    a2, b2, note = cl.common_ranks(a, b)
    assert set(a2.pmu[0]["rank"]) == {0, 1} and "2 common ranks" in note and "[2] besides" in note
    assert cl.common_ranks(b, b)[2] is None


def test_expectations_are_answered_from_the_rows():
    rows = cl.decide([cl.welch("pmu", "m", "us", [10.0, 10.1, 9.9, 10.0], [5.0, 5.1, 4.9, 5.0], role="R")])
    answers = {e["row"]: e["answer"] for e in cl.expectations({"pmu.R.m": "down", "pmu.R.n": "down"}, rows)}
    assert answers == {"pmu.R.m": "confirmed", "pmu.R.n": "not measured"}
    assert cl.expectations({"pmu.R.m": "up"}, rows)[0]["answer"] == "refuted"
    assert cl.expectations({"pmu.R.m": "unchanged"}, rows)[0]["answer"] == "refuted"


def test_the_answer_line_says_precision_and_whether_the_scopes_moved_together():
    def lat(metric, d):
        return cl.Row(
            "latency", metric, "us", a=100.0, b=100.0 + d, difference=d, ci95=(d - 1, d + 1), p=1e-6, margin=1.0
        )

    rows = cl.decide(
        [
            cl.Row("precision", "pass", "", a="ok", b="ok", verdict="pass"),
            lat("kernel.median", -5),
            lat("api.median", -6),
            lat("kernel.p95", -7),
        ]
    )
    line = cl.answer_line(rows)
    assert line.startswith("precision ok on both sides") and "all moved the same way" in line
    assert line.endswith("no other layer moved beyond its noise")
    hot = cl.decide(
        [*rows, cl.welch("pmu", "aiv_icache_miss_rate", "", [0.02, 0.021, 0.019, 0.02], [0.28] * 4, role="R")]
    )
    assert cl.answer_line(hot).endswith("moved beside latency: pmu.R.aiv_icache_miss_rate regressed (+0.26)")
    assert [r.key for r in cl.costliest_first(rows)] == [
        "latency.kernel.p95",
        "latency.api.median",
        "latency.kernel.median",
    ]


values = st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=False, width=32), st.none()), max_size=6)


@settings(max_examples=150, deadline=None)
@given(values, values)
def test_degenerate_units_end_in_an_answer_or_a_stated_refusal(a, b):
    (row,) = cl.decide([cl.welch("pmu", "m", "us", a, b)])
    assert row.verdict in ANSWERED
    if row.verdict in ("not comparable", "inconclusive"):
        assert row.note


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.integers(0, 3), st.booleans())
def test_degenerate_pmu_tables_end_in_rows_with_answers(launches_a, launches_b, nan):
    rng = np.random.default_rng(0)

    def table(launches):
        t = cores(rng, {"X": 10.0}, launches=max(launches, 1))
        t = t[t["launch"] < launches]
        return t.assign(busy_us_high=np.nan) if nan else t

    rows = cl.decide(cl.layer_rows("pmu", side("A", pmu=[table(launches_a)]), side("B", pmu=[table(launches_b)])))
    assert rows and all(r.verdict in ANSWERED for r in rows)
