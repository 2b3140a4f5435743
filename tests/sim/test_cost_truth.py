"""The simulator's cost truth is consistent with its own events: a cause's counterfactual saving (the same draws, the
cause removed) is what the launch's arrivals and ends say it must be, over several seeds.

Tolerances come from the model's constants: removing a cause can change which node a barrier's last arrival is on,
and the other nodes hear a release CROSS_NODE_NOTIFY_US later, twice per launch (cached_notify_combine and the entry
barrier); a release's notify (0-0.3 us), the launch gap (0-0.4 us) and the start ticks (0-0.1 us) add their ranges:
that bounds how far a launch's end (and its timed latency) can move besides the saving itself. A launch period spans
two ends, so its saving is known to twice that.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"))

from ascend_deepep._account import msprof_view, simulate  # noqa: E402
from ascend_deepep._collective import CROSS_NODE_NOTIFY_US, Cluster, CollectiveModel, Knobs  # noqa: E402

CLUSTER = Cluster(world=16, ranks_per_node=8, num_aiv=56, num_experts=384)
SEEDS = range(5)
CALLS, WARMUP = 40, 5
SENDS = [[96 * 7168 * 2] * 16 for _ in range(16)]
END_SLACK_US = 2 * CROSS_NODE_NOTIFY_US + 0.3 + 0.4 + 0.3 + 0.1  # one launch's end or timed latency (see the docstring)
PERIOD_SLACK_US = 2 * END_SLACK_US


def truth_of(knobs: Knobs, sync_start: bool = True) -> dict:
    return simulate(CLUSTER, knobs, CALLS, sync_start, warmup=WARMUP)[1]


def cause(truth: dict, name: str) -> dict:
    return next(c for c in truth["causes"] if c["cause"] == name)


def measured(truth: dict) -> list[dict]:
    calls = set(truth["measured_calls"])
    return [launch for launch in truth["launches"] if launch["call"] in calls]


def saving(launch: dict, name: str, scope: str) -> float:
    return launch["costs"].get(name, {}).get(scope) or 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_a_late_rank_saves_its_lead_over_the_next_arrival_at_most_its_lateness_and_nothing_timed(seed):
    late_us = 50.0
    truth = truth_of(Knobs(seed=seed, late_rank=5, late_us=late_us))
    expected = []
    for launch in measured(truth):
        last = launch["last_arrival"]
        # removing the lateness moves rank 5's arrival back by late_us: the barrier releases at the next arrival then
        want = min(late_us, last["lead_us"]) if last["rank"] == 5 else 0.0
        assert saving(launch, "late_rank", "period_us") == pytest.approx(want, abs=PERIOD_SLACK_US)
        # under synchronize_start the barrier kernel absorbs host lateness: the timed kernel scope does not move
        assert abs(saving(launch, "late_rank", "timed_us")) <= END_SLACK_US
        expected.append(want)
    late = cause(truth, "late_rank")
    assert late["cost_us_per_launch"] == pytest.approx(statistics.fmean(expected), abs=END_SLACK_US)
    assert late["cost_us_per_launch"] > 0.3 * late_us and abs(late["cost_timed_us_per_launch"]) < END_SLACK_US
    # the 15 others each waited for it as long as the release moved
    assert late["wait_caused_us_per_launch"] == pytest.approx(15 * late["cost_us_per_launch"], abs=15 * END_SLACK_US)
    assert truth["root_causes"][0]["cause"] == "late_rank" and late["fraction"] == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_without_synchronize_start_a_late_rank_costs_the_timed_scope_nothing_either(seed):
    # the entry barrier is inside the kernel but before the kernel-mode start tick: lateness lengthens the event scope
    truth = truth_of(Knobs(seed=seed, late_rank=5, late_us=50.0), sync_start=False)
    late = cause(truth, "late_rank")
    assert late["cost_us_per_launch"] > 15.0 and abs(late["cost_timed_us_per_launch"]) < END_SLACK_US
    for launch in measured(truth):
        if launch["last_arrival"]["rank"] == 5:
            assert launch["last_arrival"]["kernel"] == "elastic_dispatch_kernel"
            assert saving(launch, "late_rank", "period_us") == pytest.approx(
                min(50.0, launch["last_arrival"]["lead_us"]), abs=PERIOD_SLACK_US
            )


@pytest.mark.parametrize("seed", SEEDS)
def test_a_slow_role_off_the_critical_path_is_no_cause_and_on_it_is_one(seed):
    # SelfCopyToken copies the local tokens long before the cross-node ones arrive: 1.5x changes nothing at the end
    off = truth_of(Knobs(seed=seed, slow_role=(6, "SelfCopyToken", 1.5)))
    idle = cause(off, "slow_role")
    assert idle["fraction"] == 1.0 and idle["fraction_saving"] == 0.0
    assert (idle["cost_us_per_launch"], idle["cost_timed_us_per_launch"], idle["wait_caused_us_per_launch"]) == (
        0.0,
        0.0,
        0.0,
    )
    assert "slow_role" not in [c["cause"] for c in off["root_causes"]]
    # the same knob where it bounds the end: rank 6's receive side 3x is a cause, its own work
    on = truth_of(Knobs(seed=seed, slow_role=(6, "LocalWindowCopy", 3.0)))
    top = on["root_causes"][0]
    assert (top["cause"], top["evidence"], top["ranks"]) == ("slow_role", "own_work", [6])
    assert top["cost_us_per_launch"] > 5.0 and top["cost_timed_us_per_launch"] > 5.0
    assert sum(launch["last_end"]["rank"] == 6 for launch in measured(on)) / len(measured(on)) > 0.5  # chance: 1/16


@pytest.mark.parametrize("seed", SEEDS)
def test_ranks_late_together_each_cost_about_nothing_alone(seed):
    # rank 3 (node 0) and all of node 1 are late by the same 500 us, far more than their arrivals spread: removing
    # either cause leaves the others late, and saves only its lead over them, never the 500 us
    late_us = 500.0
    truth = truth_of(Knobs(seed=seed, late_rank=3, late_node=1, late_us=late_us))
    for name in ("late_rank", "late_node"):
        c = cause(truth, name)
        assert c["fraction"] == 1.0 and c["cost_us_per_launch"] < 0.1 * late_us, c
    for launch in measured(truth):
        last = launch["last_arrival"]
        want = min(late_us, last["lead_us"]) if last["rank"] == 3 else 0.0
        assert saving(launch, "late_rank", "period_us") == pytest.approx(want, abs=PERIOD_SLACK_US)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_knob_free_run_costs_only_its_spikes_where_they_struck(seed):
    launches, truth = simulate(CLUSTER, Knobs(seed=seed), 150, warmup=WARMUP)
    # the truth's spikes are the events': a rank whose work factor exceeds the warm-up factor of that call
    warm = {launch.call: min(r.work_factor for r in launch.ranks) for launch in launches}
    spiked = {
        (launch.call, r.rank) for launch in launches for r in launch.ranks if r.work_factor > warm[launch.call] * 1.2
    }
    assert all(c["cause"].startswith("spikes/") and c["knob"] is None for c in truth["causes"])
    assert {int(c["cause"].split("/")[1]) for c in truth["causes"]} == {rank for _, rank in spiked}
    for c in truth["root_causes"]:
        rank = c["ranks"][0]
        struck = {call for call, r in spiked if r == rank}
        # a spike costs in its launch and in the next one (its rank returns late and arrives last); later launches
        # differ by no more than a release's cross-node skew carried in the host clocks
        paid = {
            launch["call"]: launch["costs"][c["cause"]] for launch in truth["launches"] if c["cause"] in launch["costs"]
        }
        assert set(paid) & struck
        for call, costs in paid.items():
            if call not in struck | {s + 1 for s in struck}:
                assert abs(costs["period_us"]) <= PERIOD_SLACK_US and abs(costs["timed_us"]) <= END_SLACK_US, (
                    call,
                    costs,
                )
        assert c["evidence"] == "own_work" and c["cost_us_per_launch"] > 0.0
    assert sum(c["cost_us_per_launch"] for c in truth["causes"]) < 0.01 * statistics.fmean(
        launch["period_us"] for launch in truth["launches"][WARMUP:]
    )  # rare: 0.2% per rank and launch


def test_removing_a_cause_shifts_no_draw_and_the_truth_is_deterministic():
    knobs = Knobs(seed=7, late_rank=2, late_us=30.0, late_prob=0.4, spiky_rank=9, slow_role=(4, "CalCumSum", 2.0))
    assert truth_of(knobs) == truth_of(knobs)
    # every cause removed is the knob-free run, event for event: removal draws the same numbers
    removed = CollectiveModel(CLUSTER, knobs, without=frozenset({"late_rank", "spiky_rank", "slow_role"}))
    plain = CollectiveModel(CLUSTER, Knobs(seed=7))
    for call in range(CALLS):
        a, b = removed.launch(call, SENDS, True), plain.launch(call, SENDS, True)
        assert [r.kernel_end for r in a.ranks] == [r.kernel_end for r in b.ranks] and a.arrivals == b.arrivals
    # and a rank's spikes removed are that rank without its spikes only
    spiky = CollectiveModel(CLUSTER, Knobs(seed=0))
    calm = CollectiveModel(CLUSTER, Knobs(seed=0), without=frozenset(f"spikes/{r}" for r in range(16)))
    spikes = 0
    for call in range(200):
        a, b = spiky.launch(call, SENDS, True), calm.launch(call, SENDS, True)
        spikes += len(a.struck)
        assert not b.struck and all(rb.work_factor <= ra.work_factor for ra, rb in zip(a.ranks, b.ranks))
        assert (a.struck == frozenset()) == ([r.work_factor for r in a.ranks] == [r.work_factor for r in b.ranks])
    assert spikes > 0


def test_msprof_view_is_the_launch_on_each_nodes_clock():
    knobs = Knobs(seed=1, clock_offset_us={1: 2500.0}, clock_drift_ppm={1: 40.0})
    launches, _ = simulate(CLUSTER, knobs, 3)
    rows = msprof_view(launches, knobs, CLUSTER, epoch_ns=10**18)
    assert len(rows) == 3 * 16
    for row in rows:
        rl = launches[row["call"]].ranks[row["rank"]]
        node = CLUSTER.node(row["rank"])
        offset, drift = (2500.0, 40.0) if node == 1 else (0.0, 0.0)
        assert (row["start_ns"] - 10**18) / 1000 == pytest.approx(
            rl.kernel_start + offset + drift * 1e-6 * rl.kernel_start, abs=0.001
        )
        assert row["dur_ns"] / 1000 == pytest.approx(rl.task_us * (1 + drift * 1e-6), abs=0.002)
        assert row["barrier_dur_ns"] / 1000 == pytest.approx(rl.barrier_us * (1 + drift * 1e-6), abs=0.002)
