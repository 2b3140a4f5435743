import numpy as np
import pandas as pd

from dispatchprof.analysis.compare import compare, diff_ci, factor_differences, verdict


def table(values_by_rank, warmup=0):
    rows = [("e", "kernel", r, 0, i, i < warmup, v) for r, vs in values_by_rank.items() for i, v in enumerate(vs)]
    return pd.DataFrame(rows, columns=["experiment", "scope", "rank", "node", "iteration", "warmup", "us"])


def test_factors_are_named_and_empty_mappings_set_nothing():
    a = {"experiment": "a", "sim": {"role_speedup": {}}, "shape": {"seed": 0}}
    b = {"experiment": "b", "sim": {"role_speedup": {"URMASendToken": 0.9}}, "shape": {"seed": 3}}
    assert factor_differences(a, b) == ["shape.seed", "sim.role_speedup.URMASendToken"]
    assert factor_differences(a, {**a, "experiment": "z"}) == []


def test_verdict_follows_the_ci_of_the_median_difference():
    assert verdict({"ci95": [-5.0, -1.0]}) == "improved"
    assert verdict({"ci95": [1.0, 5.0]}) == "regressed"
    assert verdict({"ci95": [-1.0, 1.0]}) == "no significant change"
    assert verdict({"ci95": None}) == "not comparable"


def test_a_clear_shift_is_detected_and_identical_distributions_are_not():
    rng = np.random.default_rng(1)
    a = rng.normal(100, 2, 200)
    assert diff_ci(a, a - 10, 50, 1000, 0)["ci95"][1] < 0
    same = diff_ci(a, rng.permutation(a), 50, 1000, 0)
    assert same["ci95"][0] < 0 < same["ci95"][1] and same["difference"] == 0


def test_compare_pools_repeats_and_warns_on_two_factors():
    rng = np.random.default_rng(2)
    a_runs = [table({r: rng.normal(100, 1, 40) for r in range(4)}) for _ in range(2)]
    b_runs = [table({r: rng.normal(90, 1, 40) for r in range(4)}) for _ in range(2)]
    result = compare(a_runs, b_runs, {"x": 1, "shape": {"seed": 0}}, {"x": 2, "shape": {"seed": 1}}, 500, 0)
    assert result["verdict"] == "improved"
    assert result["kernel"]["n"] == [80, 80] and len(result["kernel"]["repeat_medians"]["a"]) == 2
    assert result["warnings"][0] == "more than one factor differs: shape.seed, x"
    assert "inputs differ" in result["warnings"][1]
    assert set(result["per_rank_median"]) == {"0", "1", "2", "3"}
    assert result["api"]["available"] is False
