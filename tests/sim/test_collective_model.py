"""The simulated cluster's event model: physical sanity, and every knob moving what it should and nothing else.

The model lives in the stand-in repository (workflow/sim/ascend_deepep); tests import it directly. Same seed,
same byte matrix: a knob run and a plain run draw the same noise, so "unchanged" can be exact.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"))

from ascend_deepep._account import simulate  # noqa: E402
from ascend_deepep._collective import (  # noqa: E402
    CROSS_NODE_NOTIFY_US,
    ENTRY_BARRIER_LATENCY_US,
    SYNC_BARRIER_LATENCY_US,
    Cluster,
    CollectiveModel,
    Knobs,
    launch_truth,
    pmu_cores,
    replay_truth,
)

ROW = 7168 * 2
CLUSTER = Cluster(world=16, ranks_per_node=8, num_aiv=56, num_experts=384)
SENDS = [[96 * ROW] * 16 for _ in range(16)]  # balanced routing: 96 tokens from every rank to every rank


def run(
    knobs: Knobs | None = None, launches: int = 60, sync_start: bool = True, cluster: Cluster = CLUSTER, sends=SENDS
):
    model = CollectiveModel(cluster, knobs or Knobs())
    return model, [model.launch(call, sends, sync_start) for call in range(launches)]


def per_rank(launches, attr: str) -> list[list[float]]:
    """[launch][rank] of a RankLaunch attribute, warm launches only (the first calls are cold)."""
    return [[getattr(r, attr) for r in launch.ranks] for launch in launches[10:]]


def test_a_barrier_releases_every_rank_at_the_last_arrival_plus_its_latency():
    _, launches = run()
    for launch in launches:
        last = max(launch.arrivals)
        assert launch.sync_release == pytest.approx(last + SYNC_BARRIER_LATENCY_US)
        for r in launch.ranks:
            assert r.barrier_end >= launch.sync_release and r.kernel_start > r.barrier_end
        # the entry barrier inside the kernel: no core starts its role before the last rank's kernel started
        assert launch.entry_release == pytest.approx(
            max(r.kernel_start for r in launch.ranks) + ENTRY_BARRIER_LATENCY_US
        )
        assert min(c.start_tick for r in launch.ranks for c in r.cores) >= launch.entry_release


def test_no_rank_ends_before_the_last_token_for_it_arrives_nor_before_its_peers_counts():
    _, launches = run(Knobs(slow_link=(0, 1, 3.0)))
    for launch in launches:
        for r in launch.ranks:
            assert r.kernel_end > r.last_token and r.kernel_end > r.counts_ready
            for core in r.cores:
                lwc = [p for p in core.phases if p.name == "lwc_copy"][0]
                assert lwc.start >= r.last_token


def test_pipes_are_never_busier_than_aiv_time_and_busy_plus_polling_is_aiv_time():
    model, _ = run(Knobs(slow_role=(2, "URMASendToken", 2.0)), launches=3)
    replay = model.replay(2, SENDS)
    import random

    for rl in replay.ranks:
        rows = pmu_cores(rl, model.knobs, random.Random(0))
        for core, row in zip(rl.cores, rows):
            aiv = core.end - core.start
            assert row["aiv_time_us"] == pytest.approx(aiv)
            assert all(0.0 <= row[f"{p}_ratio"] <= 1.0 for p in ("vec", "scalar", "mte2", "mte3"))
            assert core.busy_us() + core.polling_us() == pytest.approx(aiv)
            assert core.waiting_us() <= core.polling_us() + 1e-9


def test_without_knobs_ranks_are_statistically_alike():
    _, launches = run(launches=210)
    kernel = per_rank(launches, "kernel_mode_us")
    medians = [statistics.median(col) for col in zip(*kernel)]
    overall = statistics.median(medians)
    assert max(abs(m - overall) / overall for m in medians) < 0.02, medians
    longest = [max(range(16), key=lambda r: row[r]) for row in kernel]
    assert max(longest.count(r) for r in range(16)) / len(longest) < 0.3
    last = [launch.arrival_order()[-1] for launch in launches[10:]]
    assert max(last.count(r) for r in range(16)) / len(last) < 0.3


def test_a_late_rank_with_synchronize_start_shows_in_the_barrier_kernel_not_in_the_kernel():
    _, plain = run()
    _, late = run(Knobs(late_rank=5, late_us=150.0))
    for a, b in list(zip(plain, late))[10:]:  # the first (cold) calls end far apart: their next arrivals spread too
        # Only which node hears the release first changes (1.2 us): the kernel's own numbers stay put.
        assert [r.kernel_mode_us for r in a.ranks] == pytest.approx([r.kernel_mode_us for r in b.ranks], abs=5.0)
        assert [r.task_us for r in a.ranks] == pytest.approx([r.task_us for r in b.ranks], abs=5.0)
    # After a rare spike (a rank's own work 1.3-1.8x) its peers return late and arrive last at the next barrier.
    last_is_late = [b for b in late[10:] if b.arrival_order()[-1] == 5]
    assert len(last_is_late) / len(late[10:]) > 0.9
    spiked_before = {
        launch.call + 1
        for launch in late
        if max(r.work_factor for r in launch.ranks) > min(r.work_factor for r in launch.ranks)
    }
    for b in last_is_late:
        barrier = [r.barrier_us for r in b.ranks]
        assert min(range(16), key=lambda r: barrier[r]) == 5  # the late rank waits least
        others = [x for r, x in enumerate(barrier) if r != 5]
        if b.call in spiked_before:
            continue  # the spiked rank returned late by its own work: it arrives late by that too
        spread = max(plain[b.call].arrivals) - min(plain[b.call].arrivals)  # of their own arrivals, in the plain run
        assert min(others) > 150.0 - spread - 5.0  # everybody else waited for it, less that spread


def test_a_late_rank_without_synchronize_start_waits_least_in_the_entry_barrier_and_stretches_the_event_scope():
    _, plain = run(sync_start=False)
    _, late = run(Knobs(late_rank=5, late_us=150.0), sync_start=False)
    for a, b in list(zip(plain, late))[10:]:
        assert [r.kernel_mode_us for r in a.ranks] == pytest.approx([r.kernel_mode_us for r in b.ranks], abs=5.0)
        if b.arrival_order()[-1] != 5:
            continue  # after a rare spike elsewhere (see above)
        task = [r.task_us for r in b.ranks]
        assert min(range(16), key=lambda r: task[r]) == 5  # msprof: the late rank's task is the shortest
        grown = [rb.event_mode_us - ra.event_mode_us for ra, rb in zip(a.ranks, b.ranks) if rb.rank != 5]
        # the late rank's 150 us, less the entry wait each rank had anyway (the slowest peer of the plain run)
        had_anyway = max(a.entry_release - r.kernel_start for r in a.ranks)
        assert min(grown) > 150.0 - had_anyway - 5.0


def test_late_prob_makes_a_rank_late_in_that_fraction_of_launches_and_late_node_makes_a_node_late():
    model, launches = run(Knobs(late_rank=3, late_prob=0.3), launches=200)
    fraction = sum(launch.arrival_order()[-1] == 3 for launch in launches) / len(launches)
    assert 0.2 < fraction < 0.4
    cause = simulate(CLUSTER, Knobs(late_rank=3, late_prob=0.3), 200, sends=SENDS)[1]["root_causes"][0]  # by cost
    assert (
        cause["cause"] == "late_rank"
        and cause["evidence"] == "late_arrival"
        and cause["ranks"] == [3]
        and 0.2 < cause["fraction"] < 0.4
    )
    _, node_late = run(Knobs(late_node=1, late_us=100.0))
    for before, launch in zip([None, *node_late], node_late):
        if before is not None and max(r.work_factor for r in before.ranks) > min(r.work_factor for r in before.ranks):
            # a rare spike in the launch before: that rank returns late by its own work and may arrive among them
            continue
        assert set(launch.arrival_order()[-8:]) == set(range(8, 16))


def test_a_slow_sender_role_stretches_the_receivers_it_bounds_and_they_await_it():
    """Rank 3's cross-node sends become the slowest of the group; its same-node sends (faster links) do not. Its WQE
    work (1.37 MB at 6000 B/us per destination: 229 us) doubles, the wire does not; a receiver's plain last token
    already comes from its slowest sender (up to ~150 us later than the typical one), so the receivers it bounds grow
    by more than 40 us, the others by the noise (< 5 us)."""
    _, plain = run()
    _, slow = run(Knobs(slow_role=(3, "URMASendToken", 2.0)))
    pairs = list(zip(plain, slow))[10:]
    as_expected = [
        [rb.rank for ra, rb in zip(a.ranks, b.ranks) if rb.kernel_mode_us > ra.kernel_mode_us + 40]
        == [3, *range(8, 16)]
        for a, b in pairs
    ]
    assert sum(as_expected) / len(pairs) > 0.9  # not where a rare spike elsewhere already bounds the plain run
    awaited = [r.awaited_sender for _, b in pairs for r in b.ranks[8:]]
    assert awaited.count(3) / len(awaited) > 0.95


def test_a_slow_receive_side_moves_only_that_rank():
    _, plain = run()
    _, slow = run(Knobs(slow_role=(3, "LocalWindowCopy", 3.0)))
    for a, b in zip(plain, slow):
        for ra, rb in zip(a.ranks, b.ranks):
            if ra.rank == 3:
                assert rb.kernel_mode_us > ra.kernel_mode_us + 10
            else:  # only through the host: rank 3 returns later, so the next barrier releases a little later
                assert rb.kernel_mode_us == pytest.approx(ra.kernel_mode_us, abs=5.0)


def test_slow_counting_makes_every_rank_wait_in_wait_dispatch_for_that_rank():
    _, slow = run(Knobs(slow_role=(6, "CalCumSum", 20.0)), launches=15)
    for launch in slow[10:]:
        assert all(r.awaited_counts == 6 for r in launch.ranks)


def test_a_slow_link_stretches_the_ranks_that_use_it_and_names_the_senders():
    _, plain = run()
    _, slow = run(Knobs(slow_link=(0, 1, 2.0)))
    for a, b in list(zip(plain, slow))[10:]:
        for ra, rb in zip(a.ranks, b.ranks):
            assert rb.kernel_mode_us > 1.5 * ra.kernel_mode_us  # node 0 sends longer, node 1 receives later
            if rb.node == 1:
                assert rb.awaited_sender < 8


def test_a_slow_rank_slows_its_own_work_and_every_peer_that_waits_for_its_tokens():
    _, plain = run()
    model, slow = run(Knobs(slow_rank=7, slow_factor=1.15))
    awaited, grown = [], []
    for a, b in list(zip(plain, slow))[10:]:
        # its own work is 1.15x, the wire is not its work: it grows by a part of 0.15 x the work on its path, never more
        # (a part: where another sender's tokens bound its end, its own work is hidden)
        own_work = max(c.busy_us() for c in a.ranks[7].cores)
        grown.append((b.ranks[7].kernel_mode_us - a.ranks[7].kernel_mode_us) / own_work)
        assert grown[-1] < 0.15 + 5.0 / own_work
        awaited += [r.awaited_sender for r in b.ranks[8:]]
    assert statistics.median(grown) > 0.05
    # node 1 waits for rank 7's cross-node tokens far more often than chance (1/8): its sends end 0.15 x 344 us later,
    # against a spread of the others' of the same order, so not always
    assert awaited.count(7) / len(awaited) > 0.5
    top = simulate(CLUSTER, model.knobs, 60, sends=SENDS)[1]["root_causes"][0]  # by cost: before any spike's
    assert {k: top[k] for k in ("knob", "evidence", "ranks", "factor", "fraction")} == {
        "knob": "slow_rank",
        "evidence": "own_work",
        "ranks": [7],
        "factor": 1.15,
        "fraction": 1.0,
    }


def test_a_spiky_rank_is_occasionally_much_slower_only_in_its_own_work():
    _, plain = run(launches=300)
    _, spiky = run(Knobs(spiky_rank=3), launches=300)
    factors = [launch.ranks[3].work_factor / p.ranks[3].work_factor for launch, p in zip(spiky, plain)]
    spikes = [f for f in factors if f > 1.5]
    assert 0.04 < len(spikes) / len(factors) < 0.13 and all(2.0 <= f <= 3.0 for f in spikes)
    assert all(launch.ranks[5].work_factor == p.ranks[5].work_factor for launch, p in zip(spiky, plain))


def test_node_clocks_offset_and_drift_what_profilers_write_never_the_model():
    knobs = Knobs(clock_offset_us={1: 2500.0}, clock_drift_ppm={1: 100.0})
    model, launches = run(knobs)
    _, plain = run()
    assert [r.kernel_start for r in launches[5].ranks] == [r.kernel_start for r in plain[5].ranks]
    epoch = 1_700_000_000_000_000_000
    assert model.node_clock_ns(0, 1000.0, epoch) == epoch + 1_000_000
    assert model.node_clock_ns(1, 1000.0, epoch) == epoch + round((1000.0 + 2500.0 + 0.1) * 1000)
    assert Knobs().offset_us(1) == pytest.approx(1823.456) and Knobs().drift_ppm(0) == 0.0


def test_kernel_replay_has_no_host_lateness_and_is_warm():
    model, launches = run(Knobs(late_rank=5, late_us=500.0), launches=3)
    replay = model.replay(0, SENDS)
    live = launches[0]
    assert replay.replay and max(replay.arrivals) < 100.0  # the tools' set-up skew, not the 500 us host lateness
    # call 0 is cold live: its work (not the wire) is 1 + 1.5 = 2.5x; the warm replay saves at least half of that 1.5x
    work = statistics.median(max(c.busy_us() for c in r.cores) for r in replay.ranks)
    assert (
        statistics.median(r.kernel_mode_us for r in replay.ranks)
        < statistics.median(r.kernel_mode_us for r in live.ranks) - 0.5 * 1.5 * work
    )
    # aiv_time includes the entry barrier: the rank whose tool set up first waits longest in it
    first = min(range(16), key=lambda r: replay.arrivals[r])
    entry = [min(c.start_tick - c.start for c in r.cores) for r in replay.ranks]
    assert max(range(16), key=lambda r: entry[r]) == first and entry[first] > 10.0


def test_truth_records_arrival_order_waits_and_role_times():
    model, launches = run(Knobs(late_rank=9, late_us=150.0), launches=12)
    truth = launch_truth(launches[11])
    assert truth["barrier"]["last_rank"] == 9 and truth["barrier"]["arrival_order"][-1] == 9
    rank0 = truth["ranks"][0]
    assert rank0["barrier_wait_us"] > 90.0 and truth["ranks"][9]["barrier_wait_us"] < 10.0
    assert set(rank0["roles"]) == {
        "TokenCopyToBuffer",
        "URMASendToken",
        "SelfCopyToken",
        "CalCumSum",
        "LocalWindowCopy",
    }
    urma = rank0["roles"]["URMASendToken"]
    assert urma["polling_us_max"] > urma["busy_us_max"]  # URMA cores mostly wait for the link
    replay = replay_truth(model.replay(11, SENDS))
    core = replay["ranks"][0]["cores"][0]
    assert core["aiv_time_us"] == pytest.approx(core["busy_us"] + core["polling_us"], abs=0.01)


def test_a_tiling_without_a_role_is_refused():
    with pytest.raises(ValueError, match="num_aiv=2"):
        CollectiveModel(Cluster(4, 2, 2, 8), Knobs())


def test_knobs_come_from_the_environment_the_workflow_sets():
    knobs = Knobs.from_env(
        {
            "DEEPEP_SIM_SLOW_ROLE": "rank=3,role=LocalWindowCopy,factor=1.5",
            "DEEPEP_SIM_SLOW_LINK": "src_node=0,dst_node=1,factor=2.0",
            "DEEPEP_SIM_CLOCK_OFFSET_US": "1=2500.0",
            "DEEPEP_SIM_LATE_RANK": "4",
            "DEEPEP_SIM_LATE_PROB": "0.5",
            "DEEPEP_SIM_LATE_RANK2": "11",
            "DEEPEP_SIM_LATE_US2": "120",
        }
    )
    assert knobs.slow_role == (3, "LocalWindowCopy", 1.5) and knobs.slow_link == (0, 1, 2.0)
    assert (
        knobs.clock_offset_us == {1: 2500.0}
        and knobs.late_rank == 4
        and knobs.late_prob == 0.5
        and knobs.late_us == 50.0
    )
    assert (
        knobs.late_rank2 == 11 and knobs.late_us2 == 120.0 and knobs.late_prob2 == 1.0
    )  # the second knob's own defaults


def test_poll_pipe_share_is_what_a_polling_core_shows_per_pipe_and_defaults_to_two_percent_scalar():
    import random

    assert Knobs.from_env({}).poll_pipe_share == {"scalar": 0.02} == Knobs().poll_pipe_share
    shared = Knobs.from_env({"DEEPEP_SIM_POLL_PIPE_SHARE": "scalar=0.1,vec=0.05"})
    assert shared.poll_pipe_share == {"scalar": 0.1, "vec": 0.05}
    with pytest.raises(ValueError, match="POLL_PIPE_SHARE"):
        Knobs.from_env({"DEEPEP_SIM_POLL_PIPE_SHARE": "cube=0.1"})
    model, _ = run(launches=2)
    replay = model.replay(1, SENDS)
    for rl in replay.ranks[:2]:
        plain, polled = pmu_cores(rl, Knobs(), random.Random(0)), pmu_cores(rl, shared, random.Random(0))
        for core, a, b in zip(rl.cores, plain, polled):
            poll = core.polling_us() / a["aiv_time_us"]  # the share of aiv_time the core polls
            assert b["vec_ratio"] - a["vec_ratio"] == pytest.approx(0.05 * poll)
            assert b["scalar_ratio"] - a["scalar_ratio"] == pytest.approx((0.1 - 0.02) * poll)
            assert (b["mte2_ratio"], b["mte3_ratio"]) == (a["mte2_ratio"], a["mte3_ratio"])
            assert a["scalar_ratio"] * a["aiv_time_us"] == pytest.approx(
                core.pipe_us()["scalar"]
            )  # the default: 2% scalar


def test_a_collective_kernel_before_the_barrier_absorbs_host_lateness_and_a_plain_one_does_not():
    from ascend_deepep._account import msprof_view

    knobs = Knobs(late_rank=5, late_us=150.0)
    _, base = run(knobs, launches=30)
    _, plain = run(Knobs(late_rank=5, late_us=150.0, pre_kernels="plain"), launches=30)
    model, coll = run(Knobs(late_rank=5, late_us=150.0, pre_kernels="collective"), launches=30)
    for b, p, c in list(zip(base, plain, coll))[10:]:
        # the knob draws from a stream of its own: the kernel's own numbers stay put
        assert [r.work_factor for r in c.ranks] == [r.work_factor for r in b.ranks]
        assert [r.kernel_mode_us for r in c.ranks] == pytest.approx([r.kernel_mode_us for r in b.ranks], abs=5.0)
        if b.arrival_order()[-1] != 5:
            continue  # after a rare spike (see above)
        # plain: ~5 us on every rank, then cached_notify_combine still sees the late rank (its task is the shortest)
        assert all(5.0 <= r.pre_tasks[0][2] - r.pre_tasks[0][1] <= 5.5 for r in p.ranks)
        assert (
            min(range(16), key=lambda r: p.ranks[r].barrier_us) == 5 and p.first_collective == "cached_notify_combine"
        )
        # collective: the late rank's sim_notify_kernel is the shortest, and every rank leaves it together, so the
        # barrier kernel's tasks no longer show who was late (they differ by the releases' skews only)
        notify = [r.pre_tasks[0][2] - r.pre_tasks[0][1] for r in c.ranks]
        assert min(range(16), key=lambda r: notify[r]) == 5 and min(n for r, n in enumerate(notify) if r != 5) > 50.0
        barrier = [r.barrier_us for r in c.ranks]
        assert max(barrier) - min(barrier) < 2 * CROSS_NODE_NOTIFY_US + 0.3 + 0.4 + 0.3
        assert c.first_collective == "sim_notify_kernel" and c.arrival_order()[-1] == 5
    both = CollectiveModel(CLUSTER, Knobs(pre_kernels="both"))
    rows = msprof_view([both.launch(0, SENDS, True)], both.knobs, CLUSTER)
    assert [t[0] for t in rows[0]["tasks"]] == [
        "sim_layout_kernel",
        "sim_notify_kernel",
        "cached_notify_combine",
        "elastic_dispatch_kernel",
    ]
    starts = [t[1] for t in rows[0]["tasks"]]
    assert starts == sorted(starts)
    with pytest.raises(ValueError, match="PRE_KERNELS"):
        Knobs.from_env({"DEEPEP_SIM_PRE_KERNELS": "layout"})
