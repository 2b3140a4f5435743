import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.compare import (
    bootstrap_percentiles,
    compare,
    diff_ci,
    factor_differences,
    general_maxima,
    grid_maxima,
    hierarchical_ci,
    maxima,
    per_rank_medians,
    verdict,
)


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


def offset_runs(rng, centre, offsets, n=60):
    return [rng.normal(centre + off, 1.0, n) for off in offsets]


def test_repeats_that_differ_by_offsets_widen_the_ci_and_warn():
    from dispatchprof.analysis.compare import BETWEEN_REPEAT_WARN, hierarchical_ci, variance_split

    rng = np.random.default_rng(3)
    a = offset_runs(rng, 100, [0, 8, -8, 4])
    b = offset_runs(rng, 97, [-6, 6, 0, 3])
    d = hierarchical_ci(a, b, 50, 1000, 0)
    flat = diff_ci(np.concatenate(a), np.concatenate(b), 50, 1000, 0)
    assert d["flat_ci95"] == flat["ci95"]
    assert d["ci95"][1] - d["ci95"][0] > 2 * (
        flat["ci95"][1] - flat["ci95"][0]
    )  # repeats, not iterations, set the width
    assert d["ratio_ci95"][0] < d["ratio"] < d["ratio_ci95"][1]
    split = variance_split(a)
    assert split["between_fraction"] > BETWEEN_REPEAT_WARN and split["between"] > split["within"] > 0
    result = compare([table({0: x, 1: x - 1}) for x in a], [table({0: x, 1: x - 1}) for x in b], {}, {}, 500, 0)
    assert any("between-repeat variance" in w and "A (kernel)" in w for w in result["warnings"])
    assert result["kernel"]["variance"]["a"]["between_fraction"] > BETWEEN_REPEAT_WARN


def test_identical_or_same_distribution_repeats_do_not_warn():
    from dispatchprof.analysis.compare import variance_split

    rng = np.random.default_rng(4)
    one_a, one_b = rng.normal(100, 1, 60), rng.normal(97, 1, 60)
    result = compare([table({0: one_a})] * 3, [table({0: one_b})] * 3, {}, {}, 500, 0)
    assert not any("between-repeat" in w for w in result["warnings"])
    split = variance_split([one_a] * 3)
    assert split["between"] == 0 and split["within"] > 0 and split["between_fraction"] == 0
    # same-distribution repeats (independent draws, no offsets) do not warn either
    fresh = compare(
        [table({0: rng.normal(100, 1, 60)}) for _ in range(3)],
        [table({0: rng.normal(97, 1, 60)}) for _ in range(3)],
        {},
        {},
        500,
        0,
    )
    assert not any("between-repeat" in w for w in fresh["warnings"]) and fresh["verdict"] == "improved"


def test_one_repeat_cannot_split_the_variance_and_says_so():
    from dispatchprof.analysis.compare import variance_split

    split = variance_split([np.arange(10.0)])
    assert split["between"] is None and "one repeat" in split["note"]


def test_the_hierarchical_bootstrap_is_seeded():
    from dispatchprof.analysis.compare import hierarchical_ci

    rng = np.random.default_rng(5)
    a, b = offset_runs(rng, 100, [0, 3]), offset_runs(rng, 99, [1, -1, 2], n=40)  # unequal repeat counts and lengths
    assert hierarchical_ci(a, b, 50, 300, 7) == hierarchical_ci(a, b, 50, 300, 7)


def test_the_comparison_page_shows_the_variance_split_and_both_cis():
    rng = np.random.default_rng(6)
    result = compare(
        [table({0: x}) for x in offset_runs(rng, 100, [0, 9])],
        [table({0: x}) for x in offset_runs(rng, 95, [0, -9])],
        {},
        {},
        300,
        0,
    )
    from dispatchprof.report.comparison_page import latency_detail_section
    from dispatchprof.report.html import html_section

    page = str(html_section(latency_detail_section(result)))
    assert "between share" in page and "flat CI" in page and "B / A" in page
    assert f"{100 * result['kernel']['variance']['a']['between_fraction']:.0f}%" in page


@pytest.mark.parametrize("n,q", [(2, 50), (7, 50), (8, 50), (9, 95), (40, 95), (25, 2.5), (13, 100)])
def test_order_statistic_resampling_has_the_distribution_of_resampling(n, q):
    """bootstrap_percentiles draws each resample's percentile from its order statistics: its distribution over the
    values it can take (pairs of the sample interpolated) matches resampling the sample itself."""
    rng = np.random.default_rng(n)
    x = np.round(rng.normal(100, 5, n), 3)
    resamples = 40000
    fast = bootstrap_percentiles(x, q, resamples, np.random.default_rng(1))
    slow = np.percentile(x[np.random.default_rng(2).integers(0, n, size=(resamples, n))], q, axis=1)
    grid = np.unique(np.concatenate([fast, slow]))
    ks = np.abs(np.searchsorted(np.sort(fast), grid, "right") - np.searchsorted(np.sort(slow), grid, "right")).max()
    assert ks / resamples < 0.015, ks / resamples  # two-sample KS distance: ~0.0096 at p = 0.05 for 40,000 each


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 12),
    st.sampled_from(["full", "hole", "repeat", "mixed_warmup", "shuffled"]),
    st.integers(0, 3),
    st.integers(0, 2**16),
)
def test_the_grid_fast_path_gives_the_general_maxima(ranks, iterations, damage, warm, seed):
    """maxima's fast path for a full grid equals select_measured's general path on every table, or declines."""
    rng = np.random.default_rng(seed)
    rows = [
        ("e", "kernel", r + 3, 0, i + 5, i < warm, float(rng.integers(0, 50)))
        for i in range(iterations)
        for r in range(ranks)
    ]
    if damage == "hole" and len(rows) > 1:
        rows.pop(int(rng.integers(0, len(rows))))
    elif damage == "repeat":
        rows.append(rows[int(rng.integers(0, len(rows)))])
    elif damage == "mixed_warmup" and ranks > 1 and iterations > warm:
        e, s, r, n, i, _, v = rows[warm * ranks]
        rows[warm * ranks] = (e, s, r, n, i, True, v)
    elif damage == "shuffled":
        rows = [rows[k] for k in rng.permutation(len(rows))]
    frame = pd.DataFrame(rows, columns=["experiment", "scope", "rank", "node", "iteration", "warmup", "us"])
    general = general_maxima(frame)
    fast = grid_maxima(frame)
    assert fast is None or np.array_equal(fast, general), (fast, general)
    assert np.array_equal(maxima(frame), general)
    if damage in ("full", "shuffled", "mixed_warmup"):
        assert fast is not None


def test_every_ranks_median_at_once_is_the_rank_by_rank_record():
    """per_rank_medians of one repeat per side (stacked) against hierarchical_ci rank by rank: the same keys and
    point estimates, CIs of the same resampling (other draws: within a few percent of their width)."""
    rng = np.random.default_rng(5)
    a = table({r: rng.normal(100 + r, 2, 300) for r in range(6)}, warmup=3)
    b = table({r: rng.normal(99 + r, 2, 300) for r in range(6)}, warmup=3)
    stacked = per_rank_medians([a], [b], 4000, 7)
    for rank, record in stacked.items():
        sa = a[(a["rank"] == int(rank)) & ~a["warmup"]]["us"].to_numpy()
        sb = b[(b["rank"] == int(rank)) & ~b["warmup"]]["us"].to_numpy()
        one = hierarchical_ci([sa], [sb], 50, 4000, 11)
        assert set(record) == set(one)
        assert record["a"] == one["a"] and record["b"] == one["b"] and record["difference"] == one["difference"]
        width = one["ci95"][1] - one["ci95"][0]
        assert (
            abs(record["ci95"][0] - one["ci95"][0]) < 0.1 * width
            and abs(record["ci95"][1] - one["ci95"][1]) < 0.1 * width
        )
    holes = a[~((a["rank"] == 2) & (a["iteration"] == 10))]  # unequal counts: rank by rank
    assert per_rank_medians([holes], [b], 400, 7).keys() == stacked.keys()
