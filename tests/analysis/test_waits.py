"""analysis.waits on hand-built launch tables (independent of the simulator): clocks, coupling, the awaited. The
account is read as the timeline stage writes it, in report/cause_text's words (tests/unit/test_cause_text.py tests
the words alone)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from dispatchprof.analysis import waits
from dispatchprof.analysis.waits import (
    coupling,
    followers,
    grid,
    host_gaps,
    node_clocks,
    stands_out,
)
from dispatchprof.report.cause_text import in_words

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _defaults import timeline_settings  # noqa: E402

SETTINGS, DEFAULT_BOOT = timeline_settings()  # the schema's defaults, as the benchmarks analyse with them
BOOT = {**DEFAULT_BOOT, "resamples": 300}  # fewer, for speed: enough for the CIs these hand-built tables test
RPN = 4


def analyse(g, settings, missing, boot):
    """The account as stages/timeline.timeline_stats writes it: the analysis's facts, in report/cause_text's words."""
    return in_words(waits.analyse(g, settings, missing, boot), settings)


def table(
    world=8,
    launches=30,
    late=None,
    late_us=0.0,
    offset_us=(0.0, 0.0),
    drift_ppm=(0.0, 0.0),
    work=None,
    barrier=True,
    seed=1,
    skew_us=0.0,
    truth=None,
    release_noise_us=0.0,
    sync=True,
):
    """A coupled collective written by hand: every launch the ranks arrive after their previous end plus a host gap
    (+ late_us for ``late``, or ``late={rank: (us, probability)}``), the barrier releases at the last arrival + 3 us
    (``skew_us`` later on the other nodes), the kernel starts 1.5 us later and runs ``work[rank]`` us after an entry
    barrier; node clocks read offset + drift. ``truth`` (a list) receives per launch the true arrivals and ends."""
    rng = np.random.default_rng(seed)
    work = work or {}
    lates = late if isinstance(late, dict) else ({} if late is None else {late: (late_us, 1.0)})
    prev_end = np.zeros(world)
    rows = []
    for i in range(launches):
        arrive = prev_end + 25.0 + rng.uniform(0, 4, world)
        draws = rng.random(world)
        for r, (us, p) in lates.items():
            if draws[r] < p:
                arrive[r] += us
        release = arrive.max() + 3.0
        last_node = int(np.argmax(arrive)) // RPN
        released = release + skew_us * (np.arange(world) // RPN != last_node)
        if release_noise_us:
            released = released + rng.uniform(0, release_noise_us, world)
        start = released + 1.5 + rng.uniform(0, 0.2, world)
        if not sync:  # no barrier kernel: the target starts on arrival, its entry barrier absorbs the lateness
            start = arrive.copy()
        entry = start.max() + 2.0
        end = entry + np.array([work.get(r, 1000.0) for r in range(world)]) + rng.uniform(0, 3, world)
        for r in range(world):
            node = r // RPN

            def clock(t, node=node):
                return (t + offset_us[node] + drift_ppm[node] * 1e-6 * t) * 1000

            row = {"rank": r, "launch": i, "start_ns": clock(start[r]), "dur_ns": clock(end[r]) - clock(start[r])}
            row["barrier_start_ns"] = clock(arrive[r]) if barrier else np.nan
            row["barrier_dur_ns"] = clock(released[r]) - clock(arrive[r]) if barrier else np.nan
            rows.append(row)
        if truth is not None:
            truth.append({"arrive": arrive.copy(), "end": end.copy()})
        prev_end = end + 8.0
    columns = {
        k: np.array([row[k] for row in rows], dtype=float)
        for k in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")
    }
    return grid(np.array([row["rank"] for row in rows]), np.array([row["launch"] for row in rows]), columns, RPN)


def test_a_node_clock_offset_and_drift_are_estimated_from_the_barrier_ends():
    g = table(offset_us=(0.0, 5000.0), drift_ppm=(0.0, 200.0), launches=60)
    clocks, correction = node_clocks(g)
    assert clocks["1"]["offset_us"] == pytest.approx(5000.0, abs=1.0)
    assert clocks["1"]["drift_ppm"] == pytest.approx(200.0, abs=3 * clocks["1"]["drift_ppm_stderr"] + 20)
    assert np.all(correction[:, :RPN] == 0)


def test_coupling_is_seen_in_the_barrier_and_independent_ranks_are_not_coupled():
    assert coupling(table())["state"] == "coupled"
    independent = table()
    independent.barrier_start[:] = np.nan
    independent.barrier_end[:] = np.nan
    rng = np.random.default_rng(0)
    independent.start[:] = (
        rng.uniform(0, 100, independent.start.shape) + np.arange(len(independent.start))[:, None] * 5000
    )
    independent.end[:] = independent.start + rng.uniform(900, 1100, independent.start.shape)
    assert coupling(independent)["state"] == "not_coupled"


def true_cost(launches=30, **removed_and_kept) -> float:
    """The period cost of what ``removed`` holds, from the hand-built events: the same draws with and without it, the
    last end of the last launch compared, per launch."""
    removed = removed_and_kept.pop("removed")
    with_it, without = [], []
    table(launches=launches, truth=with_it, **removed_and_kept)
    table(launches=launches, truth=without, **{**removed_and_kept, **removed})
    return (with_it[-1]["end"].max() - without[-1]["end"].max()) / launches


def test_the_late_rank_is_named_with_its_cost_and_the_ranks_that_wait_for_it_are_not():
    result = analyse(table(late=6, late_us=80.0), SETTINGS, [], BOOT)
    strag = result["straggler"]
    assert (strag["evidence"], strag["rank"], strag["node"]) == ("late_arrival", 6, None) and strag["fraction"] > 0.9
    truth = true_cost(late=6, late_us=80.0, removed={"late": None})
    assert strag["cost_us_per_launch"] == pytest.approx(truth, rel=0.05)
    lo, hi = strag["cost_ci_us"]
    assert lo <= strag["cost_us_per_launch"] <= hi and lo > 0
    assert strag["cost_timed_us_per_launch"] == pytest.approx(
        0.0, abs=0.5
    )  # before the entry barrier: the timed scope pays nothing
    assert strag["wait_caused_us_per_launch"] > 5 * strag["cost_us_per_launch"]  # seven ranks waited for it
    assert 0 < strag["cost_share"] <= 1
    assert 6 not in result["straggler"]["waiting"]["ranks"] and set(result["straggler"]["waiting"]["ranks"]) == {
        0,
        1,
        2,
        3,
        4,
        5,
        7,
    }
    assert result["straggler"]["waiting"]["compared"] == 7 and result["straggler"]["waiting"]["causes_left_out"] == []
    assert (
        result["entry_wait_us"]["per_rank"]["6"]["sync_barrier_median"]
        < 5.0
        < result["entry_wait_us"]["per_rank"]["0"]["sync_barrier_median"]
    )


def test_causes_are_ranked_by_cost_not_by_frequency():
    """The acceptance case: rank 2 is 8 us late in 90% of launches, rank 5 120 us late in 15%: rank 5 heads the
    answer with its cost; rank 2, if named at all, comes below it with a smaller cost."""
    late = {2: (8.0, 0.9), 5: (120.0, 0.15)}
    strag = analyse(table(late=late, launches=200), {**SETTINGS, "late_min_us": 5.0}, [], BOOT)["straggler"]
    assert (strag["evidence"], strag["rank"]) == ("late_arrival", 5)
    truth5 = true_cost(launches=200, late=late, removed={"late": {2: (8.0, 0.9)}})
    assert strag["cost_us_per_launch"] == pytest.approx(truth5, rel=0.1)
    assert strag["fraction"] == pytest.approx(0.15, abs=0.06)
    costs = [c["cost_us_per_launch"] for c in strag["causes"]]
    assert costs == sorted(costs, reverse=True)
    for c in strag["causes"][1:]:
        assert c["rank"] != 5 and c["cost_us_per_launch"] < strag["cost_us_per_launch"]
    assert (
        f"in {100 * strag['fraction']:.0f}% of launches: it costs {strag['cost_us_per_launch']:.1f} us per launch"
        in strag["explanation"]
    )


def test_a_rank_that_returns_late_because_it_waited_is_not_late_itself():
    """Rank 3 ends every launch 200 us late by its own work: it then arrives last at the next barrier, but its host
    gap is normal: it is named for its own work, never as a late arrival, and the carried lateness is counted once."""
    strag = analyse(table(work={3: 1200.0}), SETTINGS, [], BOOT)["straggler"]
    assert strag["evidence"] == "own_work" and strag["rank"] == 3
    assert not any(c["evidence"] == "late_arrival" for c in strag["causes"])
    assert np.nanmax(host_gaps(table(work={3: 1200.0}))[:, 3]) < 40.0
    truth = true_cost(work={3: 1200.0}, removed={"work": {}})
    assert strag["cost_us_per_launch"] == pytest.approx(truth, rel=0.1)
    assert strag["cost_timed_us_per_launch"] == pytest.approx(200.0, abs=5.0)  # its lead over the next end


def test_nothing_stands_out_without_a_cause_and_missing_ranks_are_mentioned():
    result = analyse(table(offset_us=(0.0, 3000.0)), SETTINGS, [9], BOOT)
    assert result["straggler"]["evidence"] == "none" and result["straggler"]["rank"] is None
    assert "Rank 9 without data" in result["straggler"]["coverage_note"]
    assert all(
        c["cost_us_per_launch"] < SETTINGS["min_cost_us"] or c["cost_ci_us"][0] <= 0
        for c in result["straggler"]["unnamed"]
    )
    # in sentences: what is not named, then what the timeline cannot see, each its own
    assert result["straggler"]["explanation"].startswith(
        "no rank or node stands out: no cause costs the group more than 1 us per launch (timeline.waits.min_cost_us). "
    )
    assert ". A slowdown in every launch that moves every rank's end alike" in result["straggler"]["explanation"]


def test_a_late_node_is_one_cause_and_its_ranks_are_not_named_apart():
    strag = analyse(table(late={r: (60.0, 1.0) for r in range(4, 8)}), SETTINGS, [], BOOT)["straggler"]
    assert (strag["evidence"], strag["node"], strag["ranks"]) == ("late_arrival", 1, [4, 5, 6, 7])
    assert not any(c["rank"] in (4, 5, 6, 7) for c in strag["causes"])
    truth = true_cost(late={r: (60.0, 1.0) for r in range(4, 8)}, removed={"late": None})
    assert strag["cost_us_per_launch"] == pytest.approx(truth, rel=0.1)


def test_a_node_that_ends_late_together_is_no_blame_and_a_late_rank_behind_it_costs_nothing():
    """Node 1's ranks end 300 us after node 0's; rank 1 arrives 80 us late, but node 1 arrives later still (it
    returns 300 us late): removing rank 1's lateness would give nothing back."""
    result = analyse(table(late=1, late_us=80.0, work={r: 1300.0 for r in range(4, 8)}), SETTINGS, [], BOOT)
    strag = result["straggler"]
    assert (strag["evidence"], strag["node"], strag["ranks"]) == ("late_ending_node", 1, [4, 5, 6, 7]) and strag[
        "rank"
    ] is None
    assert (
        "not established" in strag["explanation"]
        and "DebugClock" in strag["explanation"]
        and "PMU" in strag["explanation"]
    )
    assert strag["cost_timed_us_per_launch"] == pytest.approx(300.0, abs=5.0)
    assert not any(c["evidence"] == "own_work" for c in strag["causes"])  # late-ending ranks, no claim about why
    assert not any(c["rank"] == 1 for c in strag["causes"])
    late1 = [c for c in strag["unnamed"] if c["rank"] == 1]
    assert not late1 or late1[0]["cost_us_per_launch"] < SETTINGS["min_cost_us"]
    assert not set(strag["waiting"]["ranks"]) & {4, 5, 6, 7}


def test_without_a_pure_barrier_ends_are_not_compared_across_nodes():
    result = analyse(table(work={r: 1300.0 for r in range(4, 8)}, barrier=False), SETTINGS, [], BOOT)
    strag = result["straggler"]
    assert not any(c["evidence"] == "late_ending_node" for c in strag["causes"])
    assert any("not established" in n and "synchronize_start" in n for n in strag["notes"])
    # a rank that ends last by 40 us (less than the 80 us rank 6 is late): listed with its lead over its own node's
    # ranks, not named (it compares ends across nodes); a late arrival is still named without the barrier kernel
    both = analyse(table(late=6, late_us=80.0, work={3: 1040.0}, barrier=False, sync=False), SETTINGS, [], BOOT)[
        "straggler"
    ]
    assert [(c["evidence"], c["rank"]) for c in both["causes"]] == [("late_arrival", 6)] and "entry barrier" in both[
        "explanation"
    ]
    assert any(
        c["evidence"] == "own_work" and c["rank"] == 3 and "not established" in c["not_named"] for c in both["unnamed"]
    )


def test_without_a_pure_barrier_a_late_arrivals_cost_across_nodes_is_given_as_a_bound_it_keeps():
    # node 1's clock is 2.5 ms ahead and no barrier kernel ran: the clocks come from the target's ends, so the saving is
    # an estimate on them; what holds whatever the clocks is that removing a 60 us delay gives back at most 60 us
    late = {r: (60.0, 1.0) for r in range(4, 8)}
    kw = {"late": late, "barrier": False, "sync": False, "offset_us": (0.0, 2500.0), "launches": 60}
    strag = analyse(table(**kw), SETTINGS, [], BOOT)["straggler"]
    assert (strag["evidence"], strag["node"]) == ("late_arrival", 1)
    lo, hi = strag["cost_bound_us"]
    truth = true_cost(**kw, removed={"late": None})
    assert lo == 0.0 and truth <= hi and strag["cost_us_per_launch"] <= hi
    # the host gaps' excess in every launch but the first (no host gap there): 60 us, plus up to 4 us of host jitter
    # (its latest rank's)
    assert strag["fraction"] == pytest.approx(59 / 60) and 60.0 * strag["fraction"] <= hi <= 64.0 * strag["fraction"]
    assert (
        f"costs at most {hi:.1f} us per launch" in strag["explanation"] and "synchronize_start" in strag["explanation"]
    )
    # its share of the excess and the waiting it caused compare the same arrivals: not established either
    assert (
        strag["cost_share"] is None
        and strag["wait_caused_us_per_launch"] is None
        and strag["causes"][0]["cost_share"] is None
    )
    # with the barrier kernel the saving is established: a number, no bound
    synced = analyse(table(late=late, offset_us=(0.0, 2500.0), launches=60), SETTINGS, [], BOOT)["straggler"]
    assert synced["node"] == 1 and synced["cost_bound_us"] is None and "at most" not in synced["explanation"]
    assert 0 < synced["cost_share"] <= 1 and synced["wait_caused_us_per_launch"] > 0
    # one node: one clock, nothing to fit, no bound either
    alone = analyse(table(world=4, late={1: (60.0, 1.0)}, barrier=False, sync=False), SETTINGS, [], BOOT)["straggler"]
    assert alone["rank"] == 1 and alone["cost_bound_us"] is None


def test_the_barriers_release_skew_across_nodes_is_fitted_and_kept_out_of_the_arrivals():
    # the last arrival changes node from launch to launch: that is what tells the skew from the offset
    g = table(skew_us=1.2, offset_us=(0.0, 2500.0), launches=60)
    clocks, _ = node_clocks(g)
    assert clocks["1"]["release_skew_us"] == pytest.approx(1.2, abs=0.2)
    assert clocks["1"]["offset_us"] == pytest.approx(2500.0, abs=0.3)


def test_a_drift_that_the_data_cannot_pin_down_is_unresolved_and_a_large_one_implausible():
    # 2 ppm over ten launches of ~1 ms moves the clock by 0.02 us, under the release's 0.5 us noise
    clocks, _ = node_clocks(table(launches=10, drift_ppm=(0.0, 2.0), release_noise_us=0.5))
    assert clocks["1"]["drift_ppm_stderr"] >= abs(clocks["1"]["drift_ppm_fitted"])
    assert clocks["1"]["drift_state"] == "unresolved" and clocks["1"]["drift_ppm"] is None
    clocks, _ = node_clocks(table(launches=200, drift_ppm=(0.0, 50.0), release_noise_us=0.5))
    assert clocks["1"]["drift_state"] == "resolved" and clocks["1"]["drift_ppm"] == pytest.approx(50.0, abs=5.0)
    fast = table(launches=60, drift_ppm=(0.0, 400.0))
    assert node_clocks(fast)[0]["1"]["drift_state"] == "implausible"


def test_ranks_that_end_late_together_in_every_launch_are_named_together_with_their_cost_and_no_blame():
    """Ranks 2 and 5 (two nodes) run 150 us longer in every launch: no launch shows either alone, and no per-launch set
    is rare. They are named as one late-ending set (the timeline cannot tell which of them keeps the other waiting),
    with their lead over the others' last as the cost, and are never among the waiting ranks."""
    work = {2: 1150.0, 5: 1150.0}
    result = analyse(table(work=work, launches=60), SETTINGS, [], BOOT)
    strag = result["straggler"]
    assert (strag["evidence"], strag["rank"], strag["node"]) == ("in_kernel", None, None) and strag["ranks"] == [2, 5]
    top = strag["causes"][0]
    assert top["late_ending_ranks"] == [2, 5] and top["persistent"] and "no claim about why" in top["explanation"]
    truth = true_cost(launches=60, work=work, removed={"work": {}})
    assert strag["cost_us_per_launch"] == pytest.approx(truth, rel=0.1)
    assert not any(c["evidence"] == "own_work" for c in strag["causes"])
    assert not {2, 5} & set(strag["waiting"]["ranks"])


def recurring_set(launches: int) -> dict:
    """Ranks 2 and 5 end 30 us late together in 11 of every 20 launches, rank 1 alone (as late) in 8 others: the
    late-ending set of most launches, and the cause the account lists for it."""
    g = table(launches=launches)
    cycle = np.arange(len(g.launches)) % 20
    pair, single = cycle < 11, (cycle >= 11) & (cycle < 19)
    g.end[np.ix_(pair, [2, 5])] += 30.0
    g.end[single, 1] += 30.0
    g.duration[:] = g.end - g.start
    strag = analyse(g, SETTINGS, [], BOOT)["straggler"]
    return next(c for c in strag["causes"] + strag["unnamed"] if c.get("persistent"))


def test_a_late_set_of_most_launches_is_named_only_when_it_is_late_more_often_than_the_others_beyond_chance():
    """A majority of 25 launches (64%) against the next rank's 32% is within chance (the kernel's structure makes ranks
    end late often without a fault: 3x4 named a set in 52% of 25 launches at 47 us per launch): listed, with
    the two fractions and the test. The same rates over 400 launches are apart: named, the same set."""
    short, long = recurring_set(25), recurring_set(400)
    assert short["late_ending_ranks"] == long["late_ending_ranks"] == [2, 5]
    assert (
        not short["named"]
        and "not apart beyond chance" in short["not_named"]
        and "timeline.iterations" in short["not_named"]
    )
    assert short["stands_out"]["fraction_late"] > 0.5 and short["stands_out"]["z"] < 3.09
    assert long["named"] and "not_named" not in long and long["stands_out"]["z"] > 3.09


def test_stands_out_compares_the_least_often_late_of_the_set_with_the_most_often_late_of_the_others():
    rng = np.random.default_rng(0)

    def member(n, rates):
        return rng.random((n, len(rates))) < np.array(rates)

    every = member(25, [1.0, 1.0, 0.2, 0.2])  # late in every launch: apart even over 25 launches
    assert "not_named" not in stands_out(every, np.array([0, 1]), np.array([0, 1]), 0.001)
    chance = np.zeros((25, 4), bool)
    chance[:13, 0] = chance[:13, 1] = chance[12:21, 2] = True  # 52% and 36%: the 3x4 short run's fractions
    out = stands_out(chance, np.array([0, 1]), np.array([0, 1]), 0.001)
    assert (
        out["stands_out"]["fraction_late"] == 0.52
        and out["stands_out"]["others_fraction_late"] == 0.36
        and out["not_named"] == "chance"  # in words: tests/unit/test_cause_text.py
    )
    # a follower (column 2, late with the set) is no other: the set is compared with the rest only
    led = np.zeros((100, 4), bool)
    led[:60, 0] = led[:58, 2] = led[60:80, 3] = True
    assert "not_named" in stands_out(led, np.array([0]), np.array([0]), 0.001)
    assert "not_named" not in stands_out(led, np.array([0]), np.array([0, 2]), 0.001)


def test_a_rank_in_the_late_set_of_most_launches_is_its_own_work_where_it_ends_last():
    """Rank 6 runs 60 us longer in every launch, and in 30% of them rank 1 ends 6-10 us before it: there the largest
    gap is before rank 1 (a late set of two), yet rank 6 is in the late set of most launches, so its lead over the
    next end (more than own_work_min_us) counts there too."""
    rng = np.random.default_rng(3)
    g = table(work={6: 1060.0}, launches=80)
    close = rng.random(len(g.launches)) < 0.3
    g.end[close, 1] = g.end[close, 6] - 6.0 - rng.uniform(0, 4, close.sum())
    g.duration[:] = g.end - g.start
    strag = analyse(g, SETTINGS, [], BOOT)["straggler"]
    assert (strag["evidence"], strag["rank"]) == ("own_work", 6)
    assert strag["fraction"] > 0.9  # every launch where it ends last by more than own_work_min_us


def test_a_rank_whose_end_moves_with_a_slow_ranks_is_late_with_it_and_neither_is_blamed():
    """Rank 6 runs 60 us longer in every launch and rank 7, waiting for its data to the end, ends 2 us (+- 0.2) before
    it every time. Rank 6's lead over the very next end is 2 us, below own_work_min_us: a lead over a rank whose end
    moves with its own is no lead. The two end as one: late-ending ranks, with no claim about which keeps the other
    waiting (the lag is the same either way), costed at the 60 us their removal gives back, less the others' end
    jitter (0-3 us); neither is named as its own work."""
    rng = np.random.default_rng(5)
    g = table(work={6: 1060.0}, launches=80)
    g.end[:, 7] = g.end[:, 6] - 2.0 - rng.normal(0, 0.2, len(g.launches))
    g.duration[:] = g.end - g.start
    strag = analyse(g, SETTINGS, [], BOOT)["straggler"]
    assert (strag["evidence"], strag["ranks"]) == ("in_kernel", [6, 7]), strag["causes"]
    top = strag["causes"][0]
    assert "no claim about why" in top["explanation"]
    assert top["cost_timed_us_per_launch"] == pytest.approx(60.0, abs=4.0)
    assert not any(c["evidence"] == "own_work" and c["rank"] in (6, 7) and c["named"] for c in strag["causes"])


def test_followers_are_the_ranks_whose_lag_behind_the_core_varies_less_than_own_work_min():
    """Rank 1 waits for rank 0's data to the end, rank 2 only at times; ranks 3 and 4 end with rank 0 within a few us
    in every launch, each with its own jitter (a coupled end, no follower: their lag spreads more than their time)."""
    rng = np.random.default_rng(0)
    body = 1000.0 + rng.uniform(0, 3, (200, 5))
    body[:, 1] = body[:, 0] - 2.0 + rng.normal(0, 0.2, 200)
    body[:, 2] = body[:, 0] - 25.0 + rng.normal(0, 20.0, 200)
    end = body - body.max(axis=1, keepdims=True)
    assert followers(end, 0, 5.0).tolist() == [1]
    assert followers(end[:2], 0, 5.0).tolist() == []  # two launches say nothing about how an end moves


def test_a_late_arrival_that_costs_less_than_its_lateness_says_how_far_ahead_of_the_next_arrival_it_is():
    # rank 6 is 80 us late and rank 2 50 us: removing rank 6's lateness brings the last arrival back to rank 2, ~30 us
    kw = {"late": {6: (80.0, 1.0), 2: (50.0, 1.0)}, "launches": 40}
    strag = analyse(table(**kw), SETTINGS, [], BOOT)["straggler"]
    assert strag["rank"] == 6 and strag["cost_us_per_launch"] == pytest.approx(
        true_cost(**kw, removed={"late": {2: (50.0, 1.0)}}), rel=0.15
    )
    (top,) = [c for c in strag["causes"] if c["rank"] == 6]
    assert top["ahead_us_median"] == pytest.approx(30.0, abs=4.0)
    assert (
        f"where it arrives last, the next arrival is a median {top['ahead_us_median']:.0f} us before it"
        in strag["explanation"]
    )
    # a late rank far ahead of every other arrival costs about its lateness: nothing to explain
    alone = analyse(table(late=6, late_us=80.0), SETTINGS, [], BOOT)["straggler"]
    assert "where it arrives last" not in alone["explanation"]


def test_the_first_analysed_launch_has_a_host_gap_from_the_left_out_launch_before_it():
    """A rank 50 us late by its host in every launch, the first launch left out (a warm-up): with the left-out launch's
    end as its previous end, the first analysed launch is late like the others, and its cost counts (without it, the
    first launch has no host gap and the cost is short by one launch in n)."""
    truth: list = []
    g = table(late=3, late_us=50.0, launches=8, truth=truth)
    kept = slice(1, None)
    fields = ("launches", "start", "end", "duration", "barrier_start", "barrier_end", "barrier_wait")
    rows = {f: getattr(g, f)[kept] for f in fields}
    without = waits.LaunchGrid(ranks=g.ranks, nodes=g.nodes, **rows)
    with_previous = waits.LaunchGrid(ranks=g.ranks, nodes=g.nodes, previous_end=g.end[:-1], **rows)
    assert np.isnan(host_gaps(without)[0]).all() and np.isfinite(host_gaps(with_previous)).all()
    held = [min(50.0, np.sort(t["arrive"])[-1] - np.sort(t["arrive"])[-2]) for t in truth[1:]]
    costs = {}
    for name, grid_ in (("without", without), ("with", with_previous)):
        cause = analyse(grid_, SETTINGS, [], BOOT)["straggler"]["causes"][0]
        assert (cause["evidence"], cause["rank"]) == ("late_arrival", 3)
        costs[name] = (cause["fraction"], cause["cost_us_per_launch"])
    assert costs["with"][0] == 1.0 and costs["without"][0] == pytest.approx(6 / 7)
    assert costs["with"][1] == pytest.approx(np.mean(held), rel=0.05)
