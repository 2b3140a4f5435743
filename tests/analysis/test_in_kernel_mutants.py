"""The group's wait inside the kernel (analysis/waits/in_kernel.py) against what happened in hand-built launch tables
(issue 62, item 5: the tests that kill the real survivors of ``benchmarks/mutation.py --modules
analysis/waits/in_kernel.py``).

Each expectation follows from the events written into the table (which launch a slowdown struck, by how much, which
rank ended it) and from the documented meaning of the rules: a spike is a launch more than own_min and five robust
sigmas above the typical kernel time, the robust sigma being the MAD times the normal-consistency constant
1 / Phi^-1(3/4); whose a spike is, from one-sided binomial tails written here the slow way (math.comb).
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
import pytest
from launch_grids import COLUMNS, Shape, simulate
from test_timeline_properties import SETTINGS

from dispatchprof.analysis import waits
from dispatchprof.analysis.waits import Account
from dispatchprof.analysis.waits.in_kernel import in_kernel, is_group_wait, owns_its_spikes, transient

ALPHA = float(SETTINGS["alpha"])
OWN_MIN = float(SETTINGS["own_work_min_us"])
NORMAL_CONSISTENCY = 1 / statistics.NormalDist().inv_cdf(0.75)  # MAD x this = sigma, for normal data (1.4826)
BOOT = {"resamples": 300, "seed": 0}


def launches(kernel_us: np.ndarray, last: np.ndarray, world: int) -> Account:
    """Rows as the cost account reads them: the group's kernel time per launch (``kernel_us``) and the rank that ends
    it last (``last``: its end 0, every other rank's 1 us earlier)."""
    kernel = np.asarray(kernel_us, float)
    rows = len(kernel)
    end = np.full((rows, world), -1.0)
    end[np.arange(rows), np.asarray(last, int)] = 0.0
    return Account(
        arrival=np.zeros((rows, world)),
        end=end,
        gap_excess=np.zeros((rows, world)),
        follows=np.ones(rows, bool),
        arrival_how="hand-built",
        end_how="hand-built",
        ends_across_nodes=True,
        body=end + kernel[:, None],
        kernel=kernel,
    )


def normal_kernel_times(n: int, centre: float, sd: float, seed: int = 0) -> np.ndarray:
    """n typical launches whose kernel times spread as a normal of ``sd`` around ``centre``: its quantiles at
    (i + 1/2) / n, shuffled (so the sample's median and MAD are the normal's, with no draw's luck)."""
    normal = statistics.NormalDist(centre, sd)
    values = np.array([normal.inv_cdf((i + 0.5) / n) for i in range(n)])
    return np.random.default_rng(seed).permutation(values)


# ---- transient: which launches are spikes, and by how much -----------------------------------------------------------


@pytest.mark.parametrize("sd", [2.0, 3.0])
def test_a_spike_of_five_and_a_half_sigmas_is_flagged_by_its_excess_and_one_of_four_and_a_half_is_not(sd):
    """Typical launches of 270 us spread as a normal of ``sd``; launch 300 takes 5.5 sigmas longer, launch 700
    4.5 sigmas. The robust sigma (MAD x 1.4826) is the normal's sigma, so only launch 300 is more than 5 sigmas above
    the typical launch (and above own_min): flagged, by its excess over the typical kernel time; 0 elsewhere."""
    kernel = normal_kernel_times(1001, 270.0, sd)
    median = float(np.median(kernel))
    kernel[300], kernel[700] = median + 5.5 * sd, median + 4.5 * sd
    assert 4.5 * sd > OWN_MIN  # own_min decides neither
    spike, above = transient(launches(kernel, np.zeros(1001), 8), OWN_MIN)
    assert np.flatnonzero(spike).tolist() == [300]
    assert above[300] == pytest.approx(5.5 * sd, rel=0.01)
    assert (above[~spike] == 0).all()


def test_the_robust_sigma_is_the_mad_times_the_normal_consistency_constant():
    """Kernel times of exactly three levels: 10 launches at 250 us, 10 at 248, 10 at 252 and one slower. The median is
    250 and the MAD 2 us, so the robust sigma is 2 x 1.4826 = 2.97 us: a launch 15.5 us slower (5.2 sigmas) is a spike,
    one 14.5 us slower (4.9 sigmas) is not."""
    typical = [250.0] * 10 + [248.0] * 10 + [252.0] * 10
    sigma = 2.0 * NORMAL_CONSISTENCY
    for slower, flagged in ((15.5, True), (14.5, False)):
        assert (slower > 5 * sigma) == flagged
        spike, above = transient(launches(np.array([*typical, 250.0 + slower]), np.zeros(31), 4), OWN_MIN)
        assert spike.tolist() == [False] * 30 + [flagged]
        assert above[-1] == (slower if flagged else 0.0)


def test_a_launch_must_be_more_than_own_min_slower_to_be_a_spike():
    """Typical launches all 250 us (no spread: any slower launch is many sigmas above): one exactly own_min slower is
    not a spike ("more than own_min"), one 0.5 us more is, by own_min + 0.5."""
    kernel = np.array([250.0] * 20 + [250.0 + OWN_MIN, 250.0 + OWN_MIN + 0.5])
    spike, above = transient(launches(kernel, np.zeros(22), 4), OWN_MIN)
    assert spike.tolist() == [False] * 21 + [True]
    assert above.tolist() == [0.0] * 21 + [OWN_MIN + 0.5]


def test_an_account_without_launches_has_no_spike():
    spike, above = transient(launches(np.zeros(0), np.zeros(0), 4), OWN_MIN)
    assert spike.shape == above.shape == (0,) and spike.dtype == bool and above.dtype == float


# ---- in_kernel: the group's wait, launch by launch -------------------------------------------------------------------


SLOW = {40: 100.0, 90: 150.0, 170: 120.0}  # launch -> us more for every rank (link contention)


def contention(world: int = 8, rows: int = 200, ender: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Kernel times of ``rows`` typical launches (270 us, sd 2) with SLOW's launches slower, every one ended last by
    ``ender`` (a rank that ends launches anyway: its ending the slow ones says nothing about whose they are)."""
    kernel = normal_kernel_times(rows, 270.0, 2.0)
    for launch, extra in SLOW.items():
        kernel[launch] = 270.0 + extra
    return kernel, np.full(rows, ender)


def test_the_group_waits_exactly_in_the_slow_launches_by_their_excess_and_nowhere_else():
    """The slow launches are the group's (the rank that ends them ends every launch): in_kernel strikes exactly them,
    its delay there is each launch's excess over the typical 270 us and 0 in every other launch, and its facts are
    the typical kernel time and the median excess (120 us)."""
    kernel, last = contention()
    cand = in_kernel(launches(kernel, last, 8), OWN_MIN, ALPHA)
    assert cand is not None and cand.cols.size == 0 and cand.ranks == []
    assert np.flatnonzero(cand.struck).tolist() == sorted(SLOW)
    expected = np.zeros(len(kernel))
    expected[list(SLOW)] = list(SLOW.values())
    assert cand.group_delay == pytest.approx(expected, abs=0.1)
    assert cand.facts["kernel_us_median"] == pytest.approx(270.0, abs=0.1)
    assert cand.facts["above_us_median"] == pytest.approx(120.0, abs=0.1)


def test_without_a_slow_launch_the_group_waits_nowhere():
    kernel, last = normal_kernel_times(200, 270.0, 2.0), np.full(200, 5)
    cand = in_kernel(launches(kernel, last, 8), OWN_MIN, ALPHA)
    assert cand is not None and not cand.struck.any()
    assert (cand.group_delay == 0).all() and cand.facts["above_us_median"] == 0.0


def test_three_launches_are_enough_two_alike_give_the_typical_one():
    """Forty ranks; rank 0 ends all three launches (two of two typical ones: chance is 1/40 each, a tail of 1/1600,
    below alpha: it ends launches anyway); the third takes 200 us longer. The two alike are the typical launch (MAD
    0), so the third is a spike, and ending one spike of one is what rank 0's share of the typical launches predicts:
    the group's wait, struck at launch 2 by 200 us."""
    assert (1 / 40) ** 2 < ALPHA
    cand = in_kernel(launches(np.array([270.0, 270.0, 470.0]), np.zeros(3), 40), OWN_MIN, ALPHA)
    assert cand is not None and cand.struck.tolist() == [False, False, True]
    assert cand.group_delay.tolist() == [0.0, 0.0, 200.0]
    assert in_kernel(launches(np.array([270.0, 470.0]), np.zeros(2), 40), OWN_MIN, ALPHA) is None


# ---- owns_its_spikes: whose a spike is, against its definition written the slow way ----------------------------------


def tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), term by term."""
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def owners_by_definition(last: np.ndarray, spike: np.ndarray, world: int, alpha: float) -> list[bool | None]:
    """Per rank, the docstring's rule: a rank owns the spikes it ends unless it ends more typical launches than an
    exchangeable rank could by chance (tail at 1/n_ranks) and ends the spikes no more often than its share of the typical
    launches, half a launch added per rank, predicts; each tail against alpha / the number of ranks that end a spike.
    None where a tail is within 1e-9 of its level (either verdict is right there)."""
    typical = [int(np.sum((last == j) & ~spike)) for j in range(world)]
    hits = [int(np.sum((last == j) & spike)) for j in range(world)]
    n, s = sum(typical), sum(hits)
    level = alpha / max(1, sum(h > 0 for h in hits))
    verdicts: list[bool | None] = []
    for j in range(world):
        tails = [tail(typical[j], n, 1 / world)]
        tails += [tail(hits[j], s, (typical[j] + 0.5) / (n + world / 2))] if hits[j] else []
        if any(abs(t - level) < 1e-9 * level for t in tails):
            verdicts.append(None)
            continue
        verdicts.append(not tails[0] < level or (hits[j] > 0 and tails[1] < level))
    return verdicts


def end_orders(count: int = 300):
    """Random end orders: a few ranks that end most typical launches (or nobody does), few or many typical launches
    against the world (where half a launch per rank matters), spikes ended by those ranks or by others."""
    rng = np.random.default_rng(62)
    for _ in range(count):
        world, typical, spikes = int(rng.integers(2, 65)), int(rng.integers(0, 80)), int(rng.integers(1, 12))
        weights = rng.dirichlet(np.full(world, float(rng.choice([0.05, 0.3, 5.0]))))
        enders = rng.choice(world, typical, p=weights)
        hitters = rng.choice(world, spikes, p=weights if rng.random() < 0.6 else np.full(world, 1 / world))
        yield np.concatenate([enders, hitters]), np.arange(typical + spikes) >= typical, world


def test_whose_spikes_follow_the_two_binomial_tails_of_the_docstring():
    checked = 0
    for last, spike, world in end_orders():
        owns = owns_its_spikes(last, spike, world, ALPHA)
        for j, verdict in enumerate(owners_by_definition(last, spike, world, ALPHA)):
            if verdict is not None:
                assert owns[j] == verdict, (j, world, np.bincount(last[~spike], minlength=world), last[spike])
                checked += 1
    assert checked > 3000


def test_one_rank_that_ends_every_spike_is_tested_at_alpha_itself():
    """Ranks 0 and 1 of twelve end the 200 typical launches half each (each ends launches anyway); rank 0 ends all
    ten spikes. One rank tested: its tail at its share of the typical launches (100.5 / 206) is below alpha (though
    above alpha / 2): the spikes are its own work."""
    last = np.array([0, 1] * 100 + [0] * 10)
    spike = np.arange(210) >= 200
    tail_0 = tail(10, 10, 100.5 / (200 + 12 / 2))
    assert ALPHA / 2 < tail_0 < ALPHA
    assert owns_its_spikes(last, spike, 12, ALPHA)[0]


def test_in_a_large_world_a_few_typical_launches_give_a_rank_a_share_shrunk_toward_chance():
    """64 ranks, 20 typical launches, rank 3 ends ten of them (an exchangeable rank would end one in 64) and all six
    spikes. Half a launch added per rank puts its share of the typical launches at 10.5 / 52 = 0.2, not the
    10.5 / 20 it would be without them: six of six at 0.2 is far below alpha, its own work."""
    last = np.array([3] * 10 + list(range(10, 20)) + [3] * 6)
    spike = np.arange(26) >= 20
    assert tail(6, 6, 10.5 / 52) < ALPHA < tail(6, 6, 10.5 / 20)
    assert owns_its_spikes(last, spike, 64, ALPHA)[3]


def test_half_a_launch_per_rank_is_what_a_rank_that_ends_few_typical_launches_keeps():
    """64 ranks, 20 typical launches: rank 3 ends four (an exchangeable rank 0.3; a tail of 2.4e-4, below alpha: it
    ends launches anyway) and all three spikes. Its share of the typical launches is (4 + 1/2) / (20 + 64/2), and three
    spikes of three at that share is a tail of 6.5e-4, below alpha: its own work. The four it ended count, not more:
    at (5 + 1/2) / 52 the same three would be chance (1.2e-3)."""
    last = np.array([3] * 4 + list(range(10, 26)) + [3] * 3)
    spike = np.arange(23) >= 20
    assert tail(4, 20, 1 / 64) < ALPHA and tail(3, 3, 4.5 / 52) < ALPHA < tail(3, 3, 5.5 / 52)
    assert owns_its_spikes(last, spike, 64, ALPHA)[3]


# ---- the group's wait in the analysis: its cost, and the group's excess it adds to --------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_the_group_waits_cost_and_the_groups_excess_are_the_events(seed):
    """Rank 5 ends 8 us after the others in every launch; five launches of 200 take 120 us longer for every rank (link
    contention). The group's wait costs what the events give back without the contention (3 us per launch, both
    scopes), within 10%: nothing in the 195 launches it did not strike. The group's excess in the timed scope is what
    they give back without both (the ends' spread plus the slow launches), within 10%; and the group's wait is the one
    cause that is_group_wait tells from the others."""
    shape = Shape(nodes=2, ranks_per_node=4, launches=200, own_extra={5: 8.0}, seed=seed)
    shape = dataclasses.replace(shape, group_extra=dict.fromkeys((20, 60, 100, 140, 180), 120.0))
    columns, events = simulate(shape)
    _, without_contention = simulate(dataclasses.replace(shape, group_extra={}))
    _, without_both = simulate(dataclasses.replace(shape, group_extra={}, own_extra={}))
    g = waits.grid(columns["rank"], columns["launch"], {c: columns[c].astype(float) for c in COLUMNS}, 4)
    strag = waits.analyse(g, SETTINGS, [], BOOT)["straggler"]
    group = [c for c in strag["causes"] + strag["unnamed"] if is_group_wait(c)]
    assert len(group) == 1 and group[0]["evidence"] == "in_kernel" and group[0]["ranks"] == []
    assert not any(is_group_wait(c) for c in strag["unnamed"])  # the group's wait names nobody to list
    assert group[0]["cost_timed_us_per_launch"] == pytest.approx(events.timed_us(without_contention), rel=0.1)
    assert group[0]["cost_us_per_launch"] == pytest.approx(events.period_us(without_contention), rel=0.1)
    assert strag["excess"]["timed_us_per_launch"] == pytest.approx(events.timed_us(without_both), rel=0.1)


def test_a_late_ending_set_has_the_same_evidence_but_is_not_the_groups_wait():
    """Late-ending ranks are costed under the evidence in_kernel too, with their ranks and without the typical kernel
    time among their facts: is_group_wait tells them apart from the group's wait."""
    assert is_group_wait({"evidence": "in_kernel", "ranks": [], "kernel_us_median": 270.0, "above_us_median": 120.0})
    assert not is_group_wait({"evidence": "in_kernel", "ranks": [2, 5], "late_ending_ranks": [2, 5]})
    assert not is_group_wait({"evidence": "own_work", "ranks": [5], "kernel_us_median": 270.0})
