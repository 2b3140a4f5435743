"""The ranking of a sweep (issue 61 item 3) on hand-built tables: a clear winner, ties named, one point, failed points
listed and never ranked, and degenerate tables that end in a result or a stated reason."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.sweep import ONE_REPEAT, PointData, rank

RESAMPLES = 500


def point(name: str, centre: float, repeats: int = 3, n: int = 30, sd: float = 2.0, seed: int = 0) -> PointData:
    rng = np.random.default_rng(seed)
    return PointData(name, {"x": centre}, reps=[rng.normal(centre, sd, n) for _ in range(repeats)])


def test_a_clear_winner_is_best_against_every_other_point():
    result = rank([point("a", 120, seed=1), point("b", 100, seed=2), point("c", 110, seed=3)], RESAMPLES)
    assert result["verdict"] == "best" and result["best"] == "b" and result["runner_up"] == "c"
    assert [(p["name"], p["rank"]) for p in result["points"]] == [("b", 1), ("c", 2), ("a", 3)]
    assert result["difference_ci95"][0] > 0 and result["tied_with"] == []
    assert len(result["comparisons"]) == 2 and all(c["separated"] for c in result["comparisons"])
    assert "Holm" in result["rule"] and "k-1" in result["rule"]


def test_a_best_not_told_apart_from_one_rival_is_tied_naming_it():
    result = rank([point("a", 100, seed=1), point("b", 100.1, seed=2), point("c", 130, seed=3)], RESAMPLES)
    assert result["verdict"] == "tied"
    assert set(result["tied_with"]) == {"b", "a"} - {result["best"]}
    assert "c" not in result["tied_with"] and "not told apart from" in result["reason"]


def test_identical_points_are_tied_with_every_other():
    result = rank([point(n, 100, seed=i) for i, n in enumerate("abcd")], RESAMPLES)
    assert result["verdict"] == "tied" and len(result["tied_with"]) == 3


def test_one_point_is_not_ranked_and_says_why():
    result = rank([point("a", 100, repeats=1)], RESAMPLES)
    assert result["verdict"] == "not ranked" and result["best"] == "a" and result["runner_up"] is None
    assert "nothing to rank it against" in result["reason"]
    assert result["points"][0]["note"] == ONE_REPEAT


def test_a_failed_point_is_listed_never_ranked_even_when_its_numbers_would_win():
    failed = point("f", 50, seed=9)
    failed.state, failed.reason = "failed", "sweep_f: correctness failed (rank 3)"
    result = rank([point("a", 120, seed=1), failed, point("b", 100, seed=2)], RESAMPLES)
    assert result["best"] == "b" and result["verdict"] == "best"
    assert result["points"][-1]["name"] == "f" and result["points"][-1]["state"] == "failed"
    assert "rank" not in result["points"][-1] and result["points"][-1]["median_us"] is None
    assert all(c["point"] != "f" for c in result["comparisons"])


def test_a_point_with_fewer_than_two_launches_fails_with_the_count():
    result = rank([PointData("e", {}, reps=[np.array([1.0])]), point("a", 100)], RESAMPLES)
    empty = next(p for p in result["points"] if p["name"] == "e")
    assert empty["state"] == "failed" and "fewer than 2" in empty["reason"]
    assert result["verdict"] == "not ranked"


def test_constant_tables_are_decided_without_noise():
    same = [PointData(n, {}, reps=[np.full(10, 100.0)] * 2) for n in "ab"]
    assert rank(same, RESAMPLES)["verdict"] == "tied"
    apart = [PointData("a", {}, reps=[np.full(10, 100.0)] * 2), PointData("b", {}, reps=[np.full(10, 90.0)] * 2)]
    result = rank(apart, RESAMPLES)
    assert result["verdict"] == "best" and result["best"] == "b" and result["difference_ci95"] == [10.0, 10.0]


tables = st.lists(
    st.lists(
        st.lists(
            st.one_of(st.floats(min_value=-1e6, max_value=1e6), st.sampled_from([float("nan"), float("inf")])),
            max_size=8,
        ),
        max_size=3,
    ),
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(tables, st.lists(st.booleans(), min_size=4, max_size=4))
def test_any_table_ends_in_a_verdict_or_a_stated_reason(points, failed):
    data = [
        PointData(f"p{i}", {"i": i}, state="failed" if failed[i] else "ok", reps=[np.array(r) for r in reps])
        for i, reps in enumerate(points)
    ]
    result = rank(data, 200)
    assert result["verdict"] in ("best", "tied", "not ranked")
    assert isinstance(result["reason"], str) and result["reason"]
    ranked = [p for p in result["points"] if p["state"] == "ok"]
    assert len(result["points"]) == len(data)
    if result["verdict"] == "not ranked":
        assert len(ranked) < 2
    else:
        assert result["best"] == ranked[0]["name"] and result["runner_up"] == ranked[1]["name"]
        assert set(result["tied_with"]) <= {p["name"] for p in ranked[1:]}
        assert (result["verdict"] == "tied") == bool(result["tied_with"])
    medians = [p["median_us"] for p in ranked]
    assert medians == sorted(medians)
    for p in result["points"]:
        assert p["state"] in ("ok", "failed") and (p["state"] == "ok") == (p["median_us"] is not None)
