"""The cost account's costing and naming code against brute force and hand-computed truths (issue 45, item 5: the tests
that kill the mutants of benchmarks/mutation.py).

Every expectation here is computed from the definition, not read from today's output: a what-if saving is the row's
last value minus the last once the delay is taken off (the max recomputed over the whole row); a background is the
median of the OTHER ranks' (or nodes') costs of the same evidence, ranks without a candidate costing 0; a bootstrap CI
covers the mean and narrows as 1/sqrt(launches); the naming rules are those of timeline.waits.min_cost_us and alpha.
"""

from __future__ import annotations

import math
import statistics
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.waits import (
    Account,
    Candidate,
    Maxima,
    backgrounds,
    bootstrap_mean_ci,
    carried,
    costed,
    duration_excess,
    excess,
    stands_out,
)
from dispatchprof.analysis.waits.account import top_two
from dispatchprof.analysis.waits.costing import kind_backgrounds
from dispatchprof.analysis.waits.naming import by_cost, covered, is_named, worth_costing
from dispatchprof.analysis.waits.table import LaunchGrid

FAST = settings(max_examples=60, deadline=None)
BOOT = {"resamples": 2000, "seed": 3}


# ---- brute force: the definitions, written the slow way -------------------------------------------------------------


def brute_saving(values: np.ndarray, cols: list[int], shift: np.ndarray) -> np.ndarray:
    """Per row: the last value minus the last value once ``shift`` is taken off ``cols``."""
    moved = values.copy()
    moved[:, cols] -= shift
    return values.max(axis=1) - moved.max(axis=1)


def brute_waits_caused(values: np.ndarray, cols: list[int], shift: np.ndarray) -> np.ndarray:
    """Per row: what the ranks outside ``cols`` (and those in it the delay did not strike) wait for,
    less what they would wait for without the delay; each waits from its own value to the row's last."""
    full = np.zeros_like(values)
    full[:, cols] = shift
    out = np.zeros(len(values))
    for r in range(len(values)):
        last, new_last = values[r].max(), (values[r] - full[r]).max()
        for k in range(values.shape[1]):
            if full[r, k] <= 0:
                out[r] += (last - values[r, k]) - (max(new_last, values[r, k]) - values[r, k])
    return out


def brute_background(costs: list[float], i: int, peers: int) -> float:
    """The median of the others' costs: the other candidates', and 0 for each peer without a candidate."""
    others = costs[:i] + costs[i + 1 :] + [0.0] * max(0, peers + 1 - len(costs))
    return float(statistics.median(others)) if others else 0.0


def account_of(arrival: np.ndarray, end: np.ndarray) -> Account:
    rows, ranks = arrival.shape
    return Account(
        arrival=arrival,
        end=end,
        gap_excess=np.zeros((rows, ranks)),
        follows=np.ones(rows, bool),
        arrival_how="hand-built",
        end_how="hand-built",
        ends_across_nodes=True,
        body=end.copy(),
        kernel=np.zeros(rows),
    )


def candidate(
    evidence: str, cols: list[int], arrival_shift: np.ndarray, end_shift: np.ndarray, *, node: int | None = None, **kw
) -> Candidate:
    struck = (arrival_shift > 0).any(axis=1) | (end_shift > 0).any(axis=1)
    rank = cols[0] if node is None and len(cols) == 1 else None
    return Candidate(
        evidence=evidence,
        rank=rank,
        node=node,
        ranks=list(cols),
        cols=np.array(cols),
        arrival_shift=arrival_shift,
        end_shift=end_shift,
        struck=struck,
        **kw,
    )


# ---- Maxima, top_two, carried: the what-if savings -----------------------------------------------------------------


def random_grids(count: int = 60):
    """Small launch grids with ties on purpose (values from a few levels): [row, rank] values (0 = the row's last),
    delays >= 0 (often none) and each rank's node. At least two ranks: with one,
    nobody waits, and its saving is 0 (top_two gives the rank itself as the next)."""
    rng = np.random.default_rng(2026)
    for _ in range(count):
        rows, ranks, n_nodes = int(rng.integers(1, 13)), int(rng.integers(2, 9)), int(rng.integers(1, 5))
        values = rng.choice([0.0, -1.0, -2.5, -7.0, -30.0], (rows, ranks))
        shift = rng.choice([0.0, 0.0, 1.0, 2.5, 10.0, 40.0], (rows, ranks))
        yield values, shift, rng.integers(0, n_nodes, ranks), rng


def test_a_ranks_or_a_sets_saving_is_the_rows_last_value_recomputed_without_the_delay():
    for values, shift, nodes, rng in random_grids():
        maxima = Maxima(values, nodes)
        rank = int(rng.integers(0, values.shape[1]))
        cols = sorted(set(rng.integers(0, values.shape[1], int(rng.integers(1, values.shape[1] + 1))).tolist()))
        for chosen in ([rank], cols):
            got = maxima.saving(np.array(chosen), None, shift[:, chosen])
            np.testing.assert_allclose(got, brute_saving(values, chosen, shift[:, chosen]))
            np.testing.assert_allclose(
                maxima.waits_caused(np.array(chosen), shift[:, chosen]),
                brute_waits_caused(values, chosen, shift[:, chosen]),
            )
        for node in np.unique(nodes) if len(np.unique(nodes)) > 1 else []:  # one node: no other node waits for it
            members = list(np.flatnonzero(nodes == node))
            got = maxima.saving(np.array(members), int(node), shift[:, members])
            np.testing.assert_allclose(got, brute_saving(values, members, shift[:, members]))


def test_others_is_the_largest_value_outside_the_chosen_columns():
    for values, _, nodes, _ in random_grids():
        maxima = Maxima(values, nodes)
        for col in range(values.shape[1]):
            np.testing.assert_allclose(maxima.others(np.array([col]), None), np.delete(values, col, axis=1).max(axis=1))
        for node in np.unique(nodes):
            outside = values[:, nodes != node]
            if outside.shape[1]:
                np.testing.assert_allclose(maxima.others(np.flatnonzero(nodes == node), int(node)), outside.max(axis=1))
        assert np.all(maxima.others(np.arange(values.shape[1]), None) == -np.inf)  # nobody else ends


def test_top_two_are_the_largest_and_the_second_largest_of_each_row():
    rng = np.random.default_rng(4)
    for _ in range(40):
        values = rng.normal(0, 10, (int(rng.integers(1, 10)), int(rng.integers(1, 7))))
        top, first, second = top_two(values)
        ordered = np.sort(values, axis=1)
        np.testing.assert_array_equal(first, ordered[:, -1])
        np.testing.assert_array_equal(second, ordered[:, -2] if values.shape[1] > 1 else ordered[:, -1])
        np.testing.assert_array_equal(values[np.arange(len(values)), top], first)


def test_a_delay_removed_from_a_hand_built_launch_grid_gives_back_its_lead_over_the_next():
    """Three launches, four ranks on two nodes; rank 1 is 10 us late in launch 0 (the next is 4 us behind: it gives back
    4), 3 us late in launch 1 while rank 3 is as late (it gives back nothing), and on time in launch 2."""
    arrival = np.array([[-4.0, 0.0, -6.0, -8.0], [-5.0, 0.0, -9.0, 0.0], [0.0, -1.0, -2.0, -3.0]])
    shift = np.array([[10.0], [3.0], [0.0]])
    maxima = Maxima(arrival, np.array([0, 0, 1, 1]))
    np.testing.assert_allclose(maxima.saving(np.array([1]), None, shift), [4.0, 0.0, 0.0])
    # launch 0: ranks 0, 2, 3 wait 4, 6, 8 us for rank 1 and 0, 2, 4 us without its delay: 12 us caused
    np.testing.assert_allclose(maxima.waits_caused(np.array([1]), shift), [12.0, 0.0, 0.0])
    # node 0 (ranks 0 and 1) 3 us earlier in every launch: launch 1's last is rank 3, launch 2's rank 2 (at -2)
    np.testing.assert_allclose(maxima.saving(np.array([0, 1]), 0, np.full((3, 2), 3.0)), [3.0, 0.0, 2.0])


def test_an_end_delay_is_carried_into_the_next_launch_only_where_that_launch_follows():
    rng = np.random.default_rng(8)
    for _ in range(30):
        rows = int(rng.integers(1, 13))
        shift, follows = rng.uniform(0, 50, (rows, int(rng.integers(1, 5)))), rng.random(rows) < 0.6
        out = carried(shift, follows)
        assert out.shape == shift.shape
        for r in range(rows):
            expected = shift[r - 1] if r > 0 and follows[r] else np.zeros(shift.shape[1])
            np.testing.assert_array_equal(out[r], expected)


# ---- backgrounds ---------------------------------------------------------------------------------------------------


@FAST
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, 8.0, 40.0]), min_size=1, max_size=9), st.integers(0, 12))
def test_a_background_is_the_median_of_the_other_ranks_costs_by_brute_force(costs, peers):
    got = backgrounds(np.array(costs), peers)
    for i in range(len(costs)):
        assert got[i] == pytest.approx(brute_background(costs, i, peers)), (costs, peers, i)


def test_a_background_leaves_the_candidate_out_and_counts_ranks_without_one_as_zero():
    # alone: no others; two candidates among 2 ranks: each the other's cost; among 4 ranks the others are [x, 0, 0]
    np.testing.assert_array_equal(backgrounds(np.array([5.0]), 0), [0.0])
    np.testing.assert_array_equal(backgrounds(np.array([5.0, 1.0]), 1), [1.0, 5.0])
    np.testing.assert_array_equal(backgrounds(np.array([5.0, 1.0]), 3), [0.0, 0.0])
    np.testing.assert_array_equal(
        backgrounds(np.array([5.0, 1.0, 3.0]), 2), [2.0, 4.0, 3.0]
    )  # the mean of the middle two


def test_each_kind_of_evidence_has_its_own_background_and_nodes_are_the_peers_of_nodes():
    rows = 4
    per = [
        ("late_arrival", None, 6.0),
        ("late_arrival", None, 2.0),
        ("late_arrival", None, 4.0),
        ("own_work", None, 9.0),
        ("late_arrival", 0, 3.0),
        ("late_arrival", 1, 7.0),
    ]  # the last two: nodes
    raw = []
    for k, (evidence, node, cost) in enumerate(per):
        c = candidate(evidence, [k], np.zeros((rows, 1)), np.zeros((rows, 1)), node=node)
        raw.append((c, np.full(rows, cost), np.full(rows, 2 * cost)))
    world, n_nodes = 8, 3
    got = kind_backgrounds(raw, world, n_nodes)
    groups = {"ranks late": [0, 1, 2], "own work": [3], "nodes late": [4, 5]}  # a node is no peer of a rank
    for what, members in groups.items():
        peers = (n_nodes if what == "nodes late" else world) - 1
        for scope, factor in ((0, 1.0), (1, 2.0)):
            costs = [per[m][2] * factor for m in members]
            for j, m in enumerate(members):
                assert got[m, scope] == pytest.approx(brute_background(costs, j, peers)), (what, scope)
    # with 3 nodes, node 0's others are node 1 (7) and a node without a candidate (0): median 3.5
    assert got[4, 0] == pytest.approx(3.5)


# ---- the bootstrap CI ----------------------------------------------------------------------------------------------


def test_a_bootstrap_ci_needs_two_launches():
    assert all(math.isnan(x) for x in bootstrap_mean_ci(np.array([]), 100, 0))
    assert all(math.isnan(x) for x in bootstrap_mean_ci(np.array([3.0]), 100, 0))
    lo, hi = bootstrap_mean_ci(np.array([0.0, 1.0]), 1000, 0)
    # two launches: resampled means are 0, 0.5 or 1 with chances 1/4, 1/2, 1/4: 2.5% and 97.5% are 0 and 1
    assert (lo, hi) == (0.0, 1.0)


@pytest.mark.parametrize("resamples", [1999, 4000])
def test_a_bootstrap_ci_covers_the_mean_with_the_width_of_a_95_percent_interval_and_narrows_with_more_launches(
    resamples,
):
    rng = np.random.default_rng(7)
    widths = []
    for n in (100, 400):
        values = rng.normal(10.0, 3.0, n)
        lo, hi = bootstrap_mean_ci(values, resamples, 11)
        assert lo < values.mean() < hi
        # the percentile bootstrap of a mean: +-1.96 standard errors (the plug-in sd); a 90% interval is 16% narrower
        expected = 2 * 1.959964 * values.std() / math.sqrt(n)
        assert (hi - lo) == pytest.approx(expected, rel=0.06)
        assert (lo + hi) / 2 == pytest.approx(values.mean(), abs=0.1 * expected)
        widths.append(hi - lo)
    assert widths[1] == pytest.approx(widths[0] / 2, rel=0.15)  # 1/sqrt(launches)
    assert bootstrap_mean_ci(values, resamples, 11) == bootstrap_mean_ci(values, resamples, 11)  # seeded


def test_a_bootstrap_ci_of_a_constant_is_that_constant():
    assert bootstrap_mean_ci(np.full(50, 2.5), 700, 1) == [2.5, 2.5]
    for value in (1.0, 7.0, 3.0):  # few resamples: each one is a percentile's neighbour, none may be left unset
        assert bootstrap_mean_ci(np.full(5, value), 3, 0) == [value, value]


def test_each_end_of_a_bootstrap_ci_is_one_point_96_standard_errors_from_the_mean():
    """Averaged over eight samples (one bootstrap's quantiles are noisy by a few percent): a 95% interval's ends, not a
    93% or 97% one's (1.81 and 2.17 standard errors)."""
    rng = np.random.default_rng(21)
    below, above = [], []
    for _ in range(8):
        values = rng.normal(0.0, 1.0, 200)
        lo, hi = bootstrap_mean_ci(values, 4000, int(rng.integers(1000)))
        se = values.std() / math.sqrt(len(values))
        below.append((values.mean() - lo) / se)
        above.append((hi - values.mean()) / se)
    assert 1.87 < np.mean(below) < 2.05 and 1.87 < np.mean(above) < 2.05, (np.mean(below), np.mean(above))


# ---- the group's excess ---------------------------------------------------------------------------------------------


def test_the_groups_excess_is_the_last_values_lead_over_the_first_plus_the_kernels_extra_time():
    arrival = np.array([[0.0, -3.0, -1.0], [-5.0, 0.0, -2.0]])
    end = np.array([[0.0, -1.0, -1.0], [0.0, -7.0, 0.0]])
    acc = account_of(arrival, end)
    assert excess(acc) == {"period_us_per_launch": 4.0, "timed_us_per_launch": 4.0}
    assert excess(acc, {"cost_us_per_launch": 2.5}) == {"period_us_per_launch": 6.5, "timed_us_per_launch": 6.5}
    assert excess(acc, {"cost_us_per_launch": -2.0}) == {
        "period_us_per_launch": 4.0,
        "timed_us_per_launch": 4.0,
    }  # never less
    empty = account_of(np.zeros((0, 3)), np.zeros((0, 3)))
    assert excess(empty) == {"period_us_per_launch": None, "timed_us_per_launch": None}


def launch_grid(duration: np.ndarray) -> LaunchGrid:
    n, r = duration.shape
    nan = np.full((n, r), np.nan)
    return LaunchGrid(np.arange(n), np.arange(r), np.zeros(r, int), np.zeros((n, r)), duration, duration, nan, nan, nan)


def test_without_coupling_the_groups_excess_is_the_longest_durations_lead_over_the_median_rank():
    duration = np.array(
        [[10.0, 12.0, 11.0, 30.0], [10.0, np.nan, 10.0, 10.0], [5.0, 7.0, 9.0, 6.0], [1.0, 1.0, 1.0, 1.0]]
    )
    # complete launches 0, 2, 3: 30 - 11.5, 9 - 6.5, 0
    assert duration_excess(launch_grid(duration))["period_us_per_launch"] == pytest.approx((18.5 + 2.5 + 0.0) / 3)
    assert duration_excess(launch_grid(duration))["timed_us_per_launch"] == pytest.approx((18.5 + 2.5 + 0.0) / 3)
    assert duration_excess(launch_grid(np.full((2, 3), np.nan))) == {
        "period_us_per_launch": None,
        "timed_us_per_launch": None,
    }


# ---- costed: every kind costed by the same replay -------------------------------------------------------------------


def cost_grid(seed: int) -> tuple[Account, np.ndarray, list[Candidate]]:
    """Eight ranks on two nodes, 30 launches of jittered arrivals and ends; every rank a late-arrival candidate (rank 5
    25 us late in 30% of launches, each other rank 2-6 us late in half of them, so that each is last now and then: the
    background), also ending a little late; node 1 a late node, rank 2's own work with an extra saving that moves the
    whole group, and a group of ranks that is listed, never named."""
    rng = np.random.default_rng(seed)
    rows, ranks = 30, 8
    nodes = np.repeat([0, 1], 4)
    arrival = -rng.exponential(2.0, (rows, ranks))
    end = -rng.exponential(1.5, (rows, ranks))
    cands = []
    for r in range(ranks):
        struck = rng.random(rows) < (0.3 if r == 5 else 0.5)
        size = 25.0 if r == 5 else 4.0
        shift = np.where(struck, rng.uniform(0.5, 1.5, rows) * size, 0.0)[:, None]
        arrival[:, r] += shift[:, 0]
        end[:, r] += 0.3 * shift[:, 0]
        cands.append(candidate("late_arrival", [r], shift, 0.3 * shift))
    node_shift = np.full((rows, 4), 3.0) * (rng.random(rows) < 0.5)[:, None]
    arrival[:, 4:] += node_shift
    end[:, 4:] += node_shift
    cands.append(candidate("late_arrival", [4, 5, 6, 7], node_shift, node_shift, node=1))
    own = np.where(rng.random(rows) < 0.7, 4.0, 0.0)[:, None]
    end[:, 2] += own[:, 0]
    cands.append(candidate("own_work", [2], carried(own, np.ones(rows, bool)), own, group_delay=np.full(rows, 0.5)))
    end[:, [1, 3]] += 2.0
    cands.append(candidate("late_ending_ranks", [1, 3], np.zeros((rows, 2)), np.full((rows, 2), 2.0), group=True))
    return account_of(arrival, end), nodes, cands


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_cost_is_the_replay_without_the_delay_above_the_median_of_the_other_ranks(seed):
    acc, nodes, cands = cost_grid(seed)
    waits = {"min_cost_us": 1.0}
    got = costed(acc, cands, nodes, waits, BOOT)
    period = [
        brute_saving(acc.arrival, list(c.cols), c.arrival_shift) + (c.group_delay if c.group_delay is not None else 0)
        for c in cands
    ]
    timed = [
        brute_saving(acc.end, list(c.cols), c.end_shift) + (c.group_delay if c.group_delay is not None else 0)
        for c in cands
    ]
    kinds: dict[tuple[str, bool], list[int]] = {}
    for i, c in enumerate(cands):
        kinds.setdefault((c.evidence, c.node is None), []).append(i)
    expected = {}
    for (_, per_rank), members in kinds.items():
        peers = (8 if per_rank else 2) - 1
        for j, i in enumerate(members):
            # the background is of the saving the shifts give (a whole-group extra is no jitter of the others)
            bg = [
                brute_background(
                    [
                        float(brute_saving(acc.arrival, list(cands[m].cols), cands[m].arrival_shift).mean())
                        for m in members
                    ],
                    j,
                    peers,
                ),
                brute_background(
                    [float(brute_saving(acc.end, list(cands[m].cols), cands[m].end_shift).mean()) for m in members],
                    j,
                    peers,
                ),
            ]
            c = cands[i]
            expected[(c.evidence, c.rank, c.node)] = (
                float(period[i].mean()) - bg[0],
                float(timed[i].mean()) - bg[1],
                bg,
                i,
            )
    # the ranks' late arrivals have a background in both scopes,
    # and a different one: a test of which is subtracted where
    per_rank = [expected[("late_arrival", r, None)][2] for r in range(8)]
    assert all(p > 0.05 and t > 0.005 for p, t in per_rank) and max(abs(p - t) for p, t in per_rank) > 0.05, per_rank
    listed = {(c["evidence"], c["rank"], c["node"]) for c in got}
    for key, (cost, cost_timed, _, _) in expected.items():
        assert (key in listed) == (max(cost, cost_timed) >= 0.05 * waits["min_cost_us"]), (
            key
        )  # too small to cost: dropped
    for cause in got:
        cost, cost_timed, bg, i = expected[(cause["evidence"], cause["rank"], cause["node"])]
        c = cands[i]
        assert cause["cost_us_per_launch"] == pytest.approx(cost)
        assert cause["cost_timed_us_per_launch"] == pytest.approx(cost_timed)
        assert cause["background_us_per_launch"] == pytest.approx(bg[0])
        assert cause["fraction"] == pytest.approx(c.struck.mean())
        assert cause["launches"] == acc.rows
        assert cause["ranks"] == c.ranks
        waited = brute_waits_caused(acc.arrival, list(c.cols), c.arrival_shift).mean()
        if c.group_delay is not None:  # every other rank waits the whole group's delay too
            waited += c.group_delay.mean() * (acc.arrival.shape[1] - len(c.cols))
        assert cause["wait_caused_us_per_launch"] == pytest.approx(waited)
        ci = [x - bg[0] for x in bootstrap_mean_ci(period[i], BOOT["resamples"], BOOT["seed"])]
        ci_timed = [x - bg[1] for x in bootstrap_mean_ci(timed[i], BOOT["resamples"], BOOT["seed"])]
        assert cause["cost_ci_us"] == pytest.approx(ci) and cause["cost_timed_ci_us"] == pytest.approx(ci_timed)
        assert ci[0] <= cost <= ci[1] and ci_timed[0] <= cost_timed <= ci_timed[1]
        named_on = "period" if cost >= cost_timed else "timed"
        assert cause["named_on"] == named_on
        low = (ci if named_on == "period" else ci_timed)[0]
        assert cause["named"] == (max(cost, cost_timed) > waits["min_cost_us"] and low > 0 and not c.group), cause
    keys = [
        (
            -c["cost_us_per_launch"],
            -c["cost_timed_us_per_launch"],
            c["evidence"],
            c["rank"] if c["rank"] is not None else -1,
        )
        for c in got
    ]
    assert keys == sorted(keys)
    top = got[0]
    assert (top["evidence"], top["rank"], top["named"]) == (
        "late_arrival",
        5,
        True,
    )  # rank 5, 25 us late in 30% of launches
    assert not next(c for c in got if c["evidence"] == "late_ending_ranks")["named"]  # a group is listed, never named


def test_a_candidate_exactly_at_five_percent_of_min_cost_is_costed_and_one_below_it_is_not():
    rows = 4
    arrival = np.zeros((rows, 3))
    arrival[:, 0] = 0.0
    arrival[:, 1:] = -1.0
    acc = account_of(arrival, np.zeros((rows, 3)))
    nodes = np.zeros(3, int)
    for lead, kept in ((1.0, True), (0.99, False)):
        shift = np.full((rows, 1), lead)
        acc.arrival[:, 1:] = -lead
        c = candidate("late_arrival", [0], shift, np.zeros((rows, 1)))
        got = costed(
            acc, [c], nodes, {"min_cost_us": 20.0}, BOOT
        )  # 5% of 20 us: 1 us; the one candidate has no background
        assert bool(got) == kept
        if kept:
            assert got[0]["cost_us_per_launch"] == pytest.approx(1.0) and not got[0]["named"]


def test_a_cause_is_named_on_the_larger_scope_and_only_above_min_cost_with_its_ci_above_zero():
    rows = 40
    rng = np.random.default_rng(5)
    arrival = np.full((rows, 4), -20.0)
    arrival[:, 0] = 0.0
    end = np.full((rows, 4), -20.0)
    end[:, 0] = 0.0
    # rank 0: 3 us ahead of the others at the barrier (a lead of 3 taken off of a 20-us lead: 3 us), 1.5 at the end
    period_lead = rng.uniform(2.0, 4.0, (rows, 1))
    timed_lead = rng.uniform(1.0, 2.0, (rows, 1))
    c = candidate("late_arrival", [0], period_lead, timed_lead)
    acc = account_of(arrival, end)
    nodes = np.zeros(4, int)
    (cause,) = costed(acc, [c], nodes, {"min_cost_us": 1.0}, BOOT)
    assert cause["named_on"] == "period" and cause["named"]
    assert cause["cost_us_per_launch"] == pytest.approx(period_lead.mean())
    (cause,) = costed(acc, [candidate("late_arrival", [0], timed_lead, period_lead)], nodes, {"min_cost_us": 1.0}, BOOT)
    assert cause["named_on"] == "timed" and cause["named"]
    # no saving at the barrier (its CI is [0, 0]): named on its timed cost, with the timed CI
    (cause,) = costed(
        acc, [candidate("late_arrival", [0], np.zeros((rows, 1)), period_lead)], nodes, {"min_cost_us": 1.0}, BOOT
    )
    assert cause["cost_ci_us"] == [0.0, 0.0] and cause["named_on"] == "timed" and cause["named"]
    # the same saving in both scopes: named on the launch period, the account's first scope
    same = account_of(arrival, arrival.copy())
    (cause,) = costed(
        same, [candidate("late_arrival", [0], period_lead, period_lead)], nodes, {"min_cost_us": 1.0}, BOOT
    )
    assert cause["cost_us_per_launch"] == cause["cost_timed_us_per_launch"] and cause["named_on"] == "period"
    # named on the period scope, whose cost is below min_cost_us: listed although its timed cost is above
    (cause,) = costed(acc, [candidate("late_arrival", [0], period_lead, timed_lead)], nodes, {"min_cost_us": 3.5}, BOOT)
    assert cause["cost_us_per_launch"] < 3.5 and not cause["named"]


# ---- naming ---------------------------------------------------------------------------------------------------------


def test_a_cause_is_named_strictly_above_min_cost_with_its_ci_strictly_above_zero():
    assert is_named(1.01, 0.2, 1.0)
    assert not is_named(1.0, 0.2, 1.0)  # at min_cost_us: not more than it
    assert not is_named(5.0, 0.0, 1.0)  # a CI that reaches zero
    assert not is_named(5.0, -0.1, 1.0)
    assert not is_named(0.5, 0.2, 1.0)
    assert worth_costing(0.05, 1.0) and worth_costing(3.0, 1.0)
    assert not worth_costing(0.049, 1.0) and not worth_costing(-1.0, 1.0)


@FAST
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "cost_us_per_launch": st.sampled_from([0.0, 1.0, 2.5, 9.0]),
                "cost_timed_us_per_launch": st.sampled_from([0.0, 1.0, 4.0]),
                "evidence": st.sampled_from(["late_arrival", "late_node", "own_work"]),
                "rank": st.one_of(st.none(), st.integers(0, 5)),
            }
        ),
        max_size=12,
    )
)
def test_causes_are_ordered_by_period_cost_then_timed_cost_descending_then_evidence_and_rank(causes):
    ordered = sorted(causes, key=by_cost)
    for a, b in zip(ordered, ordered[1:]):
        ka = (
            -a["cost_us_per_launch"],
            -a["cost_timed_us_per_launch"],
            a["evidence"],
            -1 if a["rank"] is None else a["rank"],
        )
        kb = (
            -b["cost_us_per_launch"],
            -b["cost_timed_us_per_launch"],
            b["evidence"],
            -1 if b["rank"] is None else b["rank"],
        )
        assert ka <= kb


def test_a_node_or_a_group_sorts_before_rank_zero_of_the_same_cost_and_evidence():
    node = {"cost_us_per_launch": 2.0, "cost_timed_us_per_launch": 1.0, "evidence": "own_work", "rank": None}
    rank0 = {**node, "rank": 0}
    assert sorted([rank0, node], key=by_cost) == [node, rank0]
    assert by_cost(node)[3] == -1


def cause(
    evidence: str,
    rank: int | None,
    node: int | None,
    cost: float,
    *,
    ranks: list[int] | None = None,
    named: bool = True,
) -> dict:
    return {
        "evidence": evidence,
        "rank": rank,
        "node": node,
        "ranks": ranks or [rank],
        "cost_us_per_launch": cost,
        "named": named,
    }


def test_a_named_node_covers_its_ranks_late_arrivals_and_own_work_only_where_it_costs_as_much():
    node = cause("late_arrival", None, 1, 10.0, ranks=[4, 5, 6, 7])
    ending = cause("late_ending_node", None, 1, 6.0, ranks=[4, 5, 6, 7])
    costs = [
        node,
        ending,
        cause("late_arrival", 5, None, 9.0),  # inside the late node, which costs more: the node explains it
        cause("late_arrival", 6, None, 10.0),  # as much: explained
        cause("late_arrival", 7, None, 11.0),  # more than the node: kept
        cause("late_arrival", 2, None, 3.0),  # another node's rank: kept
        cause("own_work", 4, None, 5.0),  # own work inside the late-ending node, which costs more: explained
        cause("own_work", 5, None, 7.0),  # more than the late-ending node: kept
        cause("late_ending_ranks", 4, None, 2.0),  # no node explains this evidence: kept
        cause("late_arrival", 3, None, 8.0, named=False),  # listed, not named: never in the named
    ]
    kept = covered(costs)
    assert [(c["evidence"], c["rank"], c["node"]) for c in kept] == [
        ("late_arrival", None, 1),
        ("late_ending_node", None, 1),
        ("late_arrival", 7, None),
        ("late_arrival", 2, None),
        ("own_work", 5, None),
        ("late_ending_ranks", 4, None),
    ]
    # a node that is listed, not named, explains nothing
    listed = [{**node, "named": False}, cause("late_arrival", 5, None, 9.0)]
    assert [c["rank"] for c in covered(listed)] == [5]


def z_by_hand(mine: int, theirs: int, n: int) -> float:
    pooled = (mine + theirs) / (2 * n)
    return (mine / n - theirs / n) / math.sqrt(pooled * (1 - pooled) * (2 / n))


def late_matrix(n: int, counts: list[int]) -> np.ndarray:
    member = np.zeros((n, len(counts)), bool)
    for col, k in enumerate(counts):
        member[:k, col] = True
    return member


def test_a_late_set_stands_out_by_a_two_proportion_z_test_against_the_most_often_late_outsider():
    n = 100
    # ranks 0 and 1 the late set (80 and 90 launches); rank 2 a follower in the group (late in all); others 30, 20
    member = late_matrix(n, [90, 80, 100, 30, 20])
    fact = stands_out(member, np.array([0, 1]), np.array([0, 1, 2]), 0.01)
    assert fact["stands_out"]["fraction_late"] == pytest.approx(0.8)  # the least often late of the set
    assert fact["stands_out"]["others_fraction_late"] == pytest.approx(0.3)  # the group's follower is no outsider
    assert fact["stands_out"]["z"] == pytest.approx(z_by_hand(80, 30, n))
    assert "not_named" not in fact


@pytest.mark.parametrize("alpha", [0.2, 0.05, 0.01, 0.001])
def test_the_late_set_is_named_exactly_where_its_z_passes_the_one_sided_threshold_of_alpha(alpha):
    n = 200
    threshold = statistics.NormalDist().inv_cdf(1 - alpha)
    for mine in range(60, 120, 3):
        member = late_matrix(n, [mine, 60])
        fact = stands_out(member, np.array([0]), np.array([0]), alpha)
        z = z_by_hand(mine, 60, n)
        assert fact["stands_out"]["z"] == pytest.approx(z)
        assert ("not_named" in fact) == (not z > threshold), (mine, z, threshold)


def test_a_late_set_without_outsiders_or_without_spread_is_judged_without_dividing_by_zero():
    n = 50
    alone = stands_out(late_matrix(n, [40, 45]), np.array([0, 1]), np.array([0, 1]), 0.01)
    assert alone["stands_out"]["others_fraction_late"] == 0.0 and alone["stands_out"]["z"] == pytest.approx(
        z_by_hand(40, 0, n)
    )
    always = stands_out(late_matrix(n, [n, n]), np.array([0]), np.array([0]), 0.01)
    assert always["stands_out"]["z"] == 0.0 and "not_named" in always  # both late in every launch: nothing apart
    never = stands_out(late_matrix(n, [0, 0]), np.array([0]), np.array([0]), 0.01)
    assert never["stands_out"]["z"] == 0.0 and "not_named" in never


def test_a_late_set_not_named_is_listed_by_the_chance_test_in_the_stats_launches():
    """Not apart: listed with its kind, "chance" (report/cause_text says it
    with both fractions, z and alpha: tests/unit/ test_cause_text.py)."""
    n = 40
    fact = stands_out(late_matrix(n, [14, 12, 10]), np.array([0]), np.array([0]), 0.01)
    assert not fact["stands_out"]["z"] > statistics.NormalDist().inv_cdf(0.99)
    assert fact["not_named"] == "chance"
    assert fact["stands_out"]["fraction_late"] == 14 / n and fact["stands_out"]["others_fraction_late"] == 12 / n
    assert fact["stands_out"]["z"] == pytest.approx(z_by_hand(14, 12, n))


def test_a_grid_without_launches_saves_nothing_and_waits_for_nobody():
    maxima = Maxima(np.zeros((0, 4)), np.array([0, 0, 1, 1]))
    for cols, node in (([1], None), ([0, 2], None), ([2, 3], 1)):
        shift = np.zeros((0, len(cols)))
        assert maxima.saving(np.array(cols), node, shift).shape == (0,)
        assert maxima.others(np.array(cols), node).shape == (0,)
        assert maxima.waits_caused(np.array(cols), shift).shape == (0,)
    assert maxima.node_top.shape == maxima.node_first.shape == maxima.node_second.shape == (0,)


def test_a_delay_in_two_launches_of_forty_costs_more_than_min_cost_on_average_but_is_listed_its_ci_reaching_zero():
    """A launch's spike is not a rate: a resample of 40 launches misses both in (38/40)^40 = 13% of cases, so the CI's
    2.5% end is 0 and the cause is listed, however large its mean."""
    rows = 40
    arrival = np.full((rows, 4), -50.0)
    arrival[:, 0] = 0.0
    shift = np.zeros((rows, 1))
    shift[[7, 23], 0] = 40.0
    (cause,) = costed(
        account_of(arrival, arrival.copy()),
        [candidate("late_arrival", [0], shift, shift)],
        np.zeros(4, int),
        {"min_cost_us": 1.0},
        BOOT,
    )
    assert cause["cost_us_per_launch"] == pytest.approx(2.0) and cause["cost_ci_us"][0] == 0.0 < cause["cost_ci_us"][1]
    assert not cause["named"] and cause["fraction"] == pytest.approx(2 / 40)


def test_a_cost_account_without_launches_strikes_in_no_launch():
    acc = account_of(np.zeros((0, 3)), np.zeros((0, 3)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = costed(
            acc,
            [candidate("late_arrival", [1], np.zeros((0, 1)), np.zeros((0, 1)))],
            np.zeros(3, int),
            {"min_cost_us": 1.0},
            BOOT,
        )
    assert all(c["fraction"] == 0.0 and c["launches"] == 0 and not c["named"] for c in got)


def test_a_whole_group_delay_is_a_kind_of_its_own_beside_late_ending_sets_of_the_same_evidence():
    """The group waiting inside the kernel (no rank's columns, a group delay) and sets of late-ending ranks share the
    evidence in_kernel. No rank has a group delay: its background is 0; and the sets' backgrounds are the median over
    the other set and the ranks without one (0 here), never the group's saving (with it, the median is the other
    set's saving)."""
    rows, ranks = 40, 4
    rng = np.random.default_rng(5)
    arrival = -rng.exponential(1.0, (rows, ranks))
    end = -rng.exponential(1.0, (rows, ranks))
    group = Candidate(
        evidence="in_kernel", rank=None, node=None, ranks=[], cols=np.zeros(0, int), arrival_shift=np.zeros((rows, 0)),
        end_shift=np.zeros((rows, 0)), struck=np.ones(rows, bool), group_delay=np.full(rows, 30.0),
    )  # fmt: skip
    # set (0, 1) ends 4 us late in even launches, set (2, 3) 6 us late in odd ones: each is last in its own
    shifts = {
        (0, 1): np.where(np.arange(rows) % 2 == 0, 4.0, 0.0),
        (2, 3): np.where(np.arange(rows) % 2 == 1, 6.0, 0.0),
    }
    for cols, shift in shifts.items():
        end[:, list(cols)] += shift[:, None]
    sets = [
        candidate("in_kernel", list(cols), np.zeros((rows, 2)), np.repeat(shift[:, None], 2, axis=1))
        for cols, shift in shifts.items()
    ]
    got = {
        tuple(c["ranks"]): c
        for c in costed(account_of(arrival, end), [group, *sets], np.zeros(ranks, int), {"min_cost_us": 1.0}, BOOT)
    }
    assert got[()]["background_us_per_launch"] == 0.0 and got[()]["cost_us_per_launch"] == pytest.approx(30.0)
    assert got[()]["cost_timed_us_per_launch"] == pytest.approx(30.0)  # no set's saving taken off as a background
    for cols, shift in shifts.items():
        saving = float(brute_saving(end, list(cols), np.repeat(shift[:, None], 2, axis=1)).mean())
        assert saving > 0.5  # the other set's saving is what a group joining the kind would make the median
        assert got[cols]["cost_timed_us_per_launch"] == pytest.approx(saving)  # background 0: 2 sets, 2 zeros
