"""Latency statistics against values computed by hand on a small fixed table."""

import pandas as pd
import pytest

from conftest import FIXTURES
from dispatchprof.analysis.latency import bootstrap_ci, latency_statistics, select_measured
from dispatchprof.formats.latency_csv import parse_latency_csv

# 3 ranks x 5 iterations; iteration 0 is warm-up everywhere.
SAMPLES = {0: [100, 10, 12, 11, 30], 1: [100, 11, 13, 9, 10], 2: [100, 12, 11, 10, 10]}


def table(samples=SAMPLES, warmup=1):
    rows = [(r, i, float(v), i < warmup, i >= warmup) for r, vs in samples.items() for i, v in enumerate(vs)]
    return pd.DataFrame(rows, columns=["rank", "iteration", "us", "warmup", "in_average"])


def stats(frame, last_n=2):
    return latency_statistics(frame, resamples=500, seed=0, akl_last_n=last_n, tail_ci_ratio=0.1)


def test_per_iteration_max_statistics_match_hand_computation():
    # maxima of iterations 1..4: 12 (rank 2), 13 (rank 1), 11 (rank 0), 30 (rank 0) -> sorted 11, 12, 13, 30
    s = stats(table())
    p = s["per_iteration_max_us"]
    assert p["n"] == 4 and s["iterations_measured"] == 4 and s["warmup_iterations"] == 1
    assert p["median"] == pytest.approx(12.5)
    assert p["p95"] == pytest.approx(13 + 0.85 * (30 - 13))  # linear interpolation at position 2.85
    assert p["mean"] == pytest.approx(16.5)


def test_per_rank_statistics_and_slowest_fractions_match_hand_computation():
    s = stats(table())
    r0 = s["per_rank"]["0"]
    assert r0["median_us"] == pytest.approx(11.5)
    assert r0["p95_us"] == pytest.approx(12 + 0.85 * 18)
    assert r0["max_us"] == 30 and r0["n"] == 4
    assert [s["per_rank"][r]["fraction_slowest"] for r in ("0", "1", "2")] == [0.5, 0.25, 0.25]
    # rank 0 leads by 1 us (iteration 3) and 20 us (iteration 4): median 10.5; spreads 2, 2, 2, 20
    assert s["slowest_rank"] == {"rank": 0, "ranks": [0], "fraction": 0.5, "lead_us_median": 10.5}
    assert s["per_iteration_spread_us"]["median"] == pytest.approx(2.0) and s["per_iteration_spread_us"][
        "p95"
    ] == pytest.approx(2 + 0.85 * 18)


def test_a_slowest_rank_is_named_only_when_its_excess_is_its_own():
    from dispatchprof.analysis.latency import name_slowest

    s = stats(table())
    assert name_slowest(s, "kernel", 5.0)["rank"] == 0
    shared = name_slowest(s, "kernel", 15.0)
    assert shared["rank"] is None and "not its own" in shared["why"]
    event = name_slowest(s, "event", 5.0)
    assert event["rank"] is None and "waited longest" in event["why"]
    assert "legacy" in name_slowest(s, None, 5.0)["why"]
    rare = stats(table({0: [1, 9, 1, 1], 1: [1, 1, 9, 1], 2: [1, 1, 1, 9]}, warmup=0))
    assert name_slowest(rare, "kernel", 5.0)["rank"] is None


def test_p95_of_maxima_is_not_the_max_of_per_rank_p95():
    s = stats(table())
    max_of_rank_p95 = max(v["p95_us"] for v in s["per_rank"].values())
    assert max_of_rank_p95 != pytest.approx(s["per_iteration_max_us"]["p95"])


def test_ties_share_the_slowest_credit():
    s = stats(table({0: [5, 7], 1: [5, 7]}, warmup=0))
    assert s["per_rank"]["0"]["fraction_slowest"] == 0.5 and s["per_rank"]["1"]["fraction_slowest"] == 0.5


def test_a_tie_at_the_top_fraction_names_both_ranks_and_neither_is_called_slow_by_itself():
    from dispatchprof.analysis.latency import name_slowest

    # ranks 0 and 1 alternate as the longest, by 8 us each time: both longest in half the iterations
    s = stats(table({0: [9, 1, 9, 1], 1: [1, 9, 1, 9], 2: [1, 1, 1, 1]}, warmup=0))
    assert (
        s["slowest_rank"]["ranks"] == [0, 1]
        and s["slowest_rank"]["rank"] is None
        and s["slowest_rank"]["fraction"] == 0.5
    )
    named = name_slowest(s, "kernel", 5.0)
    assert named["rank"] is None and "ranks 0, 1" in named["why"] and "tied" in named["why"]


def test_ascend_kernel_lab_numbers_follow_its_convention():
    akl = stats(table(), last_n=2)["akl"]
    assert akl["mean_of_rank_means_us"] == pytest.approx((20.5 + 9.5 + 10) / 3)
    assert akl["mean_of_launch_max_us"] == pytest.approx((11 + 30) / 2)


def test_legacy_sample_gives_akl_experiment_value_and_leaves_out_the_mixed_iteration():
    frame = parse_latency_csv(FIXTURES / "deepep" / "dispatch_latency_legacy.csv").frame
    s = stats(frame, last_n=5)
    assert s["akl"]["mean_of_rank_means_us"] == pytest.approx(20.0)  # the value AKL's own test expects
    assert s["excluded_mixed_warmup"] == 1 and any("mixed warm-up" in w for w in s["warnings"])
    assert s["per_iteration_max_us"]["n"] == 1 and s["per_iteration_max_us"]["median"] == 40.0


def test_incomplete_iterations_are_left_out_and_counted():
    frame = table()
    frame = frame[~((frame["rank"] == 2) & (frame["iteration"] == 4))]
    selection = select_measured(frame)
    assert selection.excluded_incomplete == 1 and sorted(selection.measured["iteration"].unique()) == [1, 2, 3]


def test_bootstrap_is_reproducible_and_brackets_the_estimate():
    values = pd.Series(range(100), dtype=float).to_numpy()
    first = bootstrap_ci(values, 50, 1000, seed=7)
    assert first == bootstrap_ci(values, 50, 1000, seed=7)
    assert first[0] <= 49.5 <= first[1]
    assert first != bootstrap_ci(values, 50, 1000, seed=8)


def test_a_wide_p95_interval_produces_the_tail_hint():
    s = stats(table())
    assert s["tail_hint"] and "raise baseline.iterations" in s["tail_hint"]


def test_the_api_scope_names_its_clock_when_it_is_not_wall_time(tmp_path):
    from dispatchprof.analysis.baseline import API_SCOPE, api_boundary

    assert api_boundary(None) == API_SCOPE and api_boundary(tmp_path) == API_SCOPE
    (tmp_path / "api").mkdir()
    clock = tmp_path / "api" / "clock.json"
    clock.write_text('{"clock": "time.perf_counter", "wall_time": true}')
    assert api_boundary(tmp_path) == API_SCOPE
    clock.write_text('{"clock": "ascend_deepep.elastic:host_clock", "wall_time": false}')
    assert api_boundary(tmp_path).endswith(
        "timed on ascend_deepep.elastic:host_clock (DISPATCHPROF_HOST_CLOCK), a modelled host path, not wall time"
    )
    clock.write_bytes(b"\xff\x00garbage")
    assert "clock unknown" in api_boundary(tmp_path) and str(clock) in api_boundary(tmp_path)


def test_the_akl_figures_of_a_frame_without_measured_rows_are_none():
    # the per-rank selection of the last N rows (issue 58 part 4) must not fail on nothing to select
    import pandas as pd

    from dispatchprof.analysis.latency import akl_numbers

    frame = pd.DataFrame(
        {"rank": [0, 1], "iteration": [0, 0], "us": [1.0, 2.0], "warmup": [True, True], "in_average": [False, False]}
    )
    for last_n in (0, 5):
        akl = akl_numbers(frame, last_n)
        assert akl["mean_of_rank_means_us"] is None and akl["mean_of_launch_max_us"] is None
