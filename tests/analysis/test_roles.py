import math

import pandas as pd
import pytest

from conftest import FIXTURES
from dispatchprof.analysis.roles import (
    launches_per_rank,
    longest_cores,
    ordering,
    per_core,
    role_statistics,
    role_statistics_by_launch,
)
from dispatchprof.formats.msopprof import discover, kernel_runs, metric_files, read_metric_csv

ROLES = [{"name": "Stage", "count": 2}, {"name": "Send", "count": 1}, {"name": "Sum", "count": 1}]


def long_table(rank, times, misses, order=None):
    """Vector cores of one rank: (block, vector k) in a scrambled file order."""
    cores = [(0, 0), (0, 1), (1, 0), (1, 1)]
    rows = []
    for block, k in order or cores:
        i = cores.index((block, k))
        for metric, value in (
            ("aiv_time(us)", times[i]),
            ("aiv_icache_miss_rate", misses[i]),
            ("aic_time(us)", math.nan),
        ):
            rows.append(
                {
                    "rank": rank,
                    "node": 0,
                    "device": rank,
                    "block_id": block,
                    "sub_block_id": f"vector{k}",
                    "core_kind": "vector",
                    "core_index": k,
                    "metric": metric,
                    "value": value,
                }
            )
    return pd.DataFrame(rows)


def test_aiv_index_orders_by_block_then_vector_sub_block_whatever_the_file_order():
    frame = long_table(0, [10, 11, 30, 5], [0.01, 0.02, 0.2, 0.03], order=[(1, 1), (0, 1), (1, 0), (0, 0)])
    cores = per_core(frame, ROLES)
    assert cores["aiv_index"].tolist() == [0, 1, 2, 3]
    assert cores["role"].tolist() == ["Stage", "Stage", "Send", "Sum"]
    assert cores["aiv_time_us"].tolist() == [10, 11, 30, 5]


def test_role_statistics_pool_every_rank_and_keep_not_provided_as_none():
    frame = pd.concat(
        [
            long_table(0, [10, 12, 30, 5], [0.01, 0.03, 0.2, math.nan]),
            long_table(1, [14, 16, 40, 6], [0.02, 0.04, 0.4, math.nan]),
        ]
    )
    cores = per_core(frame, ROLES)
    stats = role_statistics(cores)
    assert (
        stats["Stage"]["cores"] == 4
        and stats["Stage"]["aiv_time_us_median"] == 13.0
        and stats["Stage"]["aiv_time_us_spread"] == 6.0
    )
    assert stats["Send"]["aiv_icache_miss_rate_max"] == pytest.approx(0.4)
    assert stats["Sum"]["aiv_icache_miss_rate_median"] is None  # NA everywhere: not provided, not 0
    assert stats["Stage"]["aiv_vec_ratio_median"] is None
    assert ordering(stats, "aiv_time_us_median") == ["Send", "Stage", "Sum"]
    assert ordering(stats, "aiv_icache_miss_rate_median") == ["Send", "Stage", "Sum"]
    assert longest_cores(cores, 1)[0] == {
        "rank": 1,
        "launch": 0,
        "aiv_index": 2,
        "role": "Send",
        "aiv_time_us": 40.0,
        "aiv_icache_miss_rate": pytest.approx(0.4),
    }


def test_cores_beyond_the_configured_roles_are_unassigned():
    cores = per_core(long_table(0, [1, 2, 3, 4], [0, 0, 0, 0]), [{"name": "Stage", "count": 3}])
    assert cores["role"].tolist() == ["Stage", "Stage", "Stage", "unassigned"]


def pipe_table(rank, rows):
    """rows: per vector core (aiv_time, vec, scalar, mte2, mte3 times in us)."""
    out = []
    for block, (aiv, *pipes) in enumerate(rows):
        metrics = {"aiv_time(us)": aiv, "aiv_icache_miss_rate": 0.01}
        for name, t in zip(("vec", "scalar", "mte2", "mte3"), pipes):
            metrics[f"aiv_{name}_time(us)"] = t
            metrics[f"aiv_{name}_ratio"] = t / aiv
        for metric, value in metrics.items():
            out.append(
                {
                    "rank": rank,
                    "node": 0,
                    "device": rank,
                    "block_id": block,
                    "sub_block_id": "vector0",
                    "core_kind": "vector",
                    "core_index": 0,
                    "metric": metric,
                    "value": value,
                }
            )
    return pd.DataFrame(out)


def test_busy_time_is_a_range_between_the_largest_pipe_and_the_capped_sum():
    from dispatchprof.analysis.roles import with_busy

    cores = per_core(
        pipe_table(0, [(100, 30, 20, 40, 10), (50, 30, 20, 40, 10), (80, math.nan, math.nan, math.nan, math.nan)]),
        [{"name": "A", "count": 3}],
    )
    assert cores["busy_us_low"].tolist()[:2] == [40, 40] and cores["busy_us_high"].tolist()[:2] == [
        100,
        50,
    ]  # sum 100, capped at aiv 50
    assert cores["no_pipe_us"].tolist()[:2] == [0, 0] and math.isnan(cores["busy_us_high"][2])  # not provided, never 0
    ratio_only = with_busy(pd.DataFrame({"aiv_time_us": [200.0], "aiv_vec_ratio": [0.1], "aiv_mte2_ratio": [0.2]}))
    assert (
        ratio_only["busy_us_low"][0] == pytest.approx(40)
        and ratio_only["busy_us_high"][0] == pytest.approx(60)
        and ratio_only["no_pipe_us"][0] == pytest.approx(140)
    )


def test_the_busiest_role_is_compared_with_the_same_role_on_other_ranks_not_by_aiv_time():
    from dispatchprof.analysis.roles import busiest, role_boundaries

    roles = [{"name": "Send", "count": 2}, {"name": "Sum", "count": 1}]
    # Rank 2's Send cores are busy 30 us more than the other ranks' Send cores; rank 1's Sum core has the longest
    # aiv_time (it polled for 900 us) but is no busier than its peers.
    frames = [
        pipe_table(0, [(1000, 20, 10, 50, 40), (1000, 20, 10, 50, 40), (300, 10, 5, 1, 1)]),
        pipe_table(1, [(1000, 20, 10, 50, 40), (1000, 20, 10, 50, 40), (1200, 10, 5, 1, 1)]),
        pipe_table(2, [(1000, 30, 10, 70, 60), (1000, 30, 10, 70, 60), (300, 10, 5, 1, 1)]),
    ]
    cores = per_core(pd.concat(frames), roles)
    top = busiest(cores, 0.1)
    assert (top["rank"], top["role"], top["excess_us"]) == (2, "Send", pytest.approx(50.0))
    assert busiest(cores, 0.5) is None  # +50 us on a median of 120 us is below a 50% margin
    check = role_boundaries(cores, roles)
    assert check["configured"] == [2] and check["observed"] == [2] and check["unexpected"] == []
    assert role_boundaries(cores, [{"name": "Send", "count": 1}, {"name": "Sum", "count": 2}])["unexpected"] == [2]


LAUNCHES3 = FIXTURES / "msopprof" / "launches3"


def fixture_long_table():
    """The 3-launch OPPROF_ fixture as pmu.py builds it: every kernel run, its launch index from the <n> folder."""
    frames = []
    for opprof in discover(LAUNCHES3):
        for run in kernel_runs(opprof):
            _, long = read_metric_csv(metric_files(run.directory)["PipeUtilization"])
            frames.append(long.assign(rank=0, node=0, device=0, launch=run.n, kernel=run.kernel))
    return pd.concat(frames, ignore_index=True)


def test_every_launch_of_a_three_launch_run_is_kept_by_launch():
    # Before: per_core keyed cores without the launch, so .first() folded launches 1 and 2 into launch 0.
    cores = per_core(fixture_long_table(), ROLES)
    assert len(cores) == 12 and sorted(cores["launch"].unique()) == [0, 1, 2]
    assert (
        cores.groupby("launch")["aiv_index"].apply(list).tolist() == [[0, 1, 2, 3]] * 3
    )  # AIV order within each launch
    # The fixture's launch n runs 100 us longer than launch n-1 on every core.
    assert cores[cores["launch"] == 2]["aiv_time_us"].tolist() == [280.0, 290.0, 300.0, 310.0]
    assert launches_per_rank(cores) == {0: [0, 1, 2]}


def test_role_statistics_are_given_per_launch_and_pooled_over_launches():
    cores = per_core(fixture_long_table(), ROLES)
    by_launch = role_statistics_by_launch(cores)
    assert sorted(by_launch) == ["0", "1", "2"]
    assert [by_launch[n]["Stage"]["aiv_time_us_median"] for n in ("0", "1", "2")] == [85.0, 185.0, 285.0]
    assert by_launch["1"]["Send"]["aiv_icache_miss_rate_median"] == pytest.approx(0.022)
    pooled = role_statistics(cores)["Stage"]
    # Pooled: the median over 2 cores x 3 launches (80, 90, 180, 190, 280, 290), not launch 0's 85.
    assert pooled["aiv_time_us_median"] == 185.0 and pooled["aiv_time_us_spread"] == 210.0
    assert (pooled["cores"], pooled["launches"], pooled["samples"]) == (2, 3, 6)
    assert longest_cores(cores, 1)[0]["launch"] == 2


def test_a_cell_of_the_core_heat_map_is_the_median_over_launches():
    from dispatchprof.analysis.roles import core_grids

    cores = per_core(fixture_long_table(), ROLES)
    grid = core_grids(cores, ROLES)["busy_us"]
    launch_medians = cores.groupby("aiv_index")["busy_us_high"].median().tolist()
    assert grid["values"][0] == pytest.approx(launch_medians)


def test_another_metric_csv_is_shown_per_role_with_na_columns_listed_not_provided():
    from dispatchprof.analysis.roles import metric_set_by_role

    _, memory = read_metric_csv(FIXTURES / "msopprof" / "Memory_950.csv")  # two vector cores: blocks 0 and 1, vector0
    keys = {"rank": 0, "node": 0, "device": 0, "launch": 0, "kernel": "k"}
    # The roles come from the same cores' AIV order (PipeUtilization in the stage; any per-core CSV has the same rows).
    cores = per_core(memory.assign(**keys), [{"name": "A", "count": 1}, {"name": "B", "count": 1}])
    table = metric_set_by_role(memory.assign(**keys), cores)
    assert table["roles"]["A"]["aiv_gm_to_ub_bw(GB/s)"] == 20.0 and table["roles"]["B"]["aiv_gm_to_ub_bw(GB/s)"] == 21.0
    assert table["roles"]["B"]["GM_to_UB_bw_usage_rate(%)"] == 50.0
    assert not any(
        c.startswith("aic_") for c in table["columns"] + table["not_provided"]
    )  # NA on vector rows by design
    assert table["not_provided"] == [
        "GM_to_L1_datas(KB)",
        "GM_to_L1_bw_usage_rate(%)",
        "L0C_to_L1_datas(KB)",
        "L0C_to_L1_bw_usage_rate(%)",
        "L0C_to_GM_datas(KB)",
        "L0C_to_GM_bw_usage_rate(%)",
    ]


# -- busiest: relative excess, without the scalar pipe, against the role's measured spread ---------------------------
# Per role: (cores per rank, busy vec, scalar, mte2, mte3 in us per core); aiv_time holds a long poll besides.
SHAPES = {
    "Stage": (8, 200.0, 300.0, 1400.0, 1300.0),
    "Send": (8, 25.0, 35.0, 12.0, 10.0),
    "Sum": (4, 12.0, 30.0, 12.0, 10.0),
}


def noisy_cores(seed, ranks=16, slow=None, extra_us=None, sigma=0.02, poll=None, rank_sigma=0.0):
    """A per-core table as per_core builds it: every pipe time of a core x lognormal jitter (sigma), the rank's
    aiv_time = 6000 us of which the rest polls. slow: {(rank, role): factor} on the role's work; extra_us:
    {rank: us} added to every core's non-scalar pipes (a slower LocalWindowCopy); poll: {rank: us} of scalar spin;
    rank_sigma: a lognormal factor per rank on all its work (ranks differ as a whole: clocks, thermal state)."""
    import numpy as np

    from dispatchprof.analysis.roles import with_busy

    rng = np.random.default_rng(seed)
    rows = []
    for rank in range(ranks):
        index, whole = 0, rng.lognormal(0.0, rank_sigma) if rank_sigma else 1.0
        for role, (n, *pipes) in SHAPES.items():
            for _ in range(n):
                f = (slow or {}).get((rank, role), 1.0) * whole
                times = [p * f * rng.lognormal(0.0, sigma) for p in pipes]
                add = (extra_us or {}).get(rank, 0.0)
                times = [times[0], times[1] + (poll or {}).get(rank, 0.0), times[2] + add / 2, times[3] + add / 2]
                row = {"rank": rank, "role": role, "aiv_index": index, "launch": 0, "aiv_time_us": 6000.0}
                row.update({f"aiv_{p}_time(us)": t for p, t in zip(("vec", "scalar", "mte2", "mte3"), times)})
                rows.append(row)
                index += 1
    return with_busy(pd.DataFrame(rows))


@pytest.mark.parametrize("seed", range(8))
def test_busiest_ranks_by_relative_excess_so_a_short_role_beats_a_long_ones_noise(seed):
    from dispatchprof.analysis.roles import busiest

    # Sum on rank 6 is 10% slower in its own work (+~6 us of 64 us busy); Stage's noise on 3,200 us reaches more
    # µs than that on some rank: the largest µs excess (the old rule) is a Stage core's noise.
    cores = noisy_cores(seed, slow={(6, "Sum"): 1.1})
    per = cores.groupby(["role", "rank"])["busy_us_high"].median()
    assert (per - per.groupby(level="role").transform("median")).idxmax()[0] == "Stage"
    top = busiest(cores, 0.0)
    assert (top["rank"], top["role"], top["every_role"]) == (6, "Sum", False)
    assert top["ranked_by"] == "nonscalar_us_high" and top["nonscalar"]["excess_ratio"] == pytest.approx(0.1, abs=0.03)
    assert top["excess_us"] > 0 and top["busy_us_high"] == pytest.approx(top["peers_median_us"] + top["excess_us"])
    assert top["excess_us_per_launch"] == pytest.approx(top["nonscalar"]["excess_us"])
    assert 0 < top["excess_us_per_launch_low"] < top["excess_us_per_launch"]  # largest pipe .. pipes summed
    assert busiest(cores, 0.2) is None  # the floor: +10% is below a 20% margin


@pytest.mark.parametrize("seed", range(8))
def test_a_rank_that_polls_longer_is_not_busiest_its_scalar_time_is_its_wait(seed):
    from dispatchprof.analysis.roles import busiest

    cores = noisy_cores(seed, poll={3: 20.0})  # rank 3 waits longer: its spin loop adds scalar time on every core
    assert busiest(cores, 0.0) is None
    assert busiest(cores.assign(nonscalar_us_high=float("nan")), 0.0)["rank"] == 3  # busy time with scalar alone would


def test_every_role_by_the_same_us_is_local_window_copy_by_the_same_fraction_the_whole_rank():
    from dispatchprof.analysis.roles import busiest

    lwc = busiest(noisy_cores(1, extra_us={6: 12.0}), 0.0)
    assert (lwc["rank"], lwc["role"], lwc["every_role"], lwc["every_role_pattern"]) == (
        6,
        "LocalWindowCopy",
        True,
        "same_us",
    )
    assert lwc["excess_us_per_launch"] == pytest.approx(12.0, rel=0.3)
    whole = busiest(noisy_cores(1, slow={(2, r): 1.3 for r in SHAPES}), 0.0)
    assert (whole["rank"], whole["every_role_pattern"]) == (2, "same_fraction") and whole["role"] in SHAPES


@pytest.mark.parametrize("ranks, rank_sigma", [(16, 0.01), (8, 0.01), (64, 0.01)])
def test_no_fault_names_nobody_over_many_seeds_even_when_whole_ranks_differ(ranks, rank_sigma):
    from dispatchprof.analysis.roles import busiest

    named = [
        seed for seed in range(30) if busiest(noisy_cores(seed, ranks=ranks, rank_sigma=rank_sigma), 0.0) is not None
    ]
    assert (
        len(named) <= 2
    )  # alpha = 0.01 per run: about 0.3 expected in 30 runs (the MAD-and-normal gate: ~6 at 16 ranks)
    # and a 10% slower role still stands out of ranks that differ by 1% as a whole
    found = [
        busiest(noisy_cores(seed, ranks=ranks, rank_sigma=rank_sigma, slow={(ranks - 1, "Sum"): 1.1}), 0.0)
        for seed in range(10)
    ]
    assert sum(f is not None and (f["rank"], f["role"]) == (ranks - 1, "Sum") for f in found) >= 8


def test_few_ranks_two_name_nobody_three_name_by_the_cores_spread_and_say_the_ranks_spread_is_not_measured():
    from dispatchprof.analysis.roles import busiest

    assert (
        busiest(noisy_cores(0, ranks=2, slow={(1, "Sum"): 2.0}), 0.0) is None
    )  # which of two is slow: not established
    three = busiest(noisy_cores(0, ranks=3, slow={(1, "Sum"): 1.5}), 0.0)
    assert (three["rank"], three["role"], three["spread_measured"]) == (1, "Sum", False)
    assert busiest(noisy_cores(0, ranks=8, slow={(1, "Sum"): 1.5}), 0.0)["spread_measured"] is True


def test_many_ranks_take_the_fast_path_with_the_same_answer():
    import numpy as np

    from dispatchprof.analysis.roles import LARGE_GROUP, _median_without, busiest

    values = np.random.default_rng(0).normal(size=11)
    assert all(
        _median_without(np.sort(values), v) == pytest.approx(float(np.median(np.delete(values, i))))
        for i, v in enumerate(values)
    )
    top = busiest(noisy_cores(3, ranks=2 * LARGE_GROUP, rank_sigma=0.01, slow={(77, "Sum"): 1.1}), 0.0)
    assert (top["rank"], top["role"], top["spread_measured"]) == (77, "Sum", True)


def waiting_cores(seed, share, victim=None, **faults):
    """noisy_cores whose ranks also wait 0-20 us longer or shorter (a victim 60 us more): the wait adds to aiv_time,
    and ``share`` of it shows on MTE2 (a polling loop that reads its flag through MTE2)."""
    import numpy as np

    from dispatchprof.analysis.roles import with_busy

    cores = noisy_cores(seed, **faults)
    rng = np.random.default_rng(500 + seed)
    wait = cores["rank"].map(
        {r: rng.uniform(0, 20) + (60.0 if r == victim else 0.0) for r in sorted(cores["rank"].unique())}
    )
    cores["aiv_time_us"] += wait
    cores["aiv_mte2_time(us)"] += share * wait
    return with_busy(cores)


@pytest.mark.parametrize("share", [0.05, 0.2])
def test_a_poll_that_shows_on_mte2_is_taken_out_by_its_slope_so_the_victim_is_never_busiest(share):
    from dispatchprof.analysis.roles import busiest

    for seed in range(5):
        assert busiest(waiting_cores(seed, share, victim=15), 0.0) is None  # it only waited, polling on MTE2
        top = busiest(waiting_cores(seed, share, slow={(14, "Sum"): 1.1}), 0.0)
        assert (top["rank"], top["role"]) == (14, "Sum") and top["poll_slope"]["Sum"] == pytest.approx(share, abs=0.03)
        lwc = busiest(waiting_cores(seed, share, victim=15, extra_us={14: 12.0}), 0.0)
        assert (lwc["rank"], lwc["role"]) == (14, "LocalWindowCopy")


def test_a_change_of_profile_inside_a_role_is_described_by_how_busy_the_cores_on_each_side_are():
    from dispatchprof.analysis.roles import role_boundaries

    # three Send cores, the last with no destination left (it only polls: 1% scalar), then one Sum core
    send, idle, cumsum = (1000, 200, 50, 20, 30), (1000, 0, 10, 0, 0), (1000, 10, 40, 150, 100)
    cores = per_core(
        pd.concat([pipe_table(r, [send, send, idle, cumsum]) for r in range(3)]),
        [{"name": "Send", "count": 3}, {"name": "Sum", "count": 1}],
    )
    check = role_boundaries(cores, [{"name": "Send", "count": 3}, {"name": "Sum", "count": 1}])
    assert check["configured"] == [3] and check["observed"] == [2, 3] and check["unexpected"] == [2]
    (d,) = check["unexpected_detail"]
    assert (d["aiv"], d["role"], d["role_aiv"]) == (2, "Send", [0, 2])
    assert d["busy_share_before"] == pytest.approx(0.30) and d["busy_share_from"] == pytest.approx(0.01)
    assert (
        "Inside Send (AIV 0-2) the profile changes at AIV 2: AIV 2 "
        "keep their pipes busy 1% of the time against 30% for AIV 0-1" in check["sentence"]
    )
    assert (
        "idle cores of the role" in check["sentence"]
        and "Check kernel.roles where that is not what the kernel does" in check["sentence"]
    )
    agree = role_boundaries(
        cores, [{"name": "Send", "count": 2}, {"name": "Idle", "count": 1}, {"name": "Sum", "count": 1}]
    )
    assert agree["unexpected"] == [] and agree["sentence"].endswith("changes at 2, 3: they agree.")
