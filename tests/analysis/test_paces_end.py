"""A rank that paces the group's end (analysis/waits/paces_end.py): its peers wait for its data and end just after it,
so it ends first in far more launches than chance. Named with its cost not established; exchangeable ends name
nobody."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis import waits
from dispatchprof.analysis.layers import best_figure, layer_figures
from dispatchprof.analysis.waits.account import Account
from dispatchprof.analysis.waits.paces_end import binomial_tails, first_enders, pacers
from dispatchprof.report.cause_text import in_words

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _defaults import timeline_settings  # noqa: E402

SETTINGS, DEFAULT_BOOT = timeline_settings()  # the schema's defaults, as the benchmarks analyse with them
BOOT = {**DEFAULT_BOOT, "resamples": 200}
ALPHA, OWN_MIN = float(SETTINGS["alpha"]), float(SETTINGS["own_work_min_us"])


def account_of(end: np.ndarray) -> Account:
    """An account of these ends alone (arrivals all equal, every launch following the previous)."""
    n, world = end.shape
    end = end - end.max(axis=1, keepdims=True)
    zeros = np.zeros((n, world))
    return Account(zeros, end, zeros, np.ones(n, bool), "", "", True, end + 100.0, np.full(n, 100.0))


def tied_ends(rng: np.random.Generator, launches: int, world: int, pacer: int, tie_us: float = 0.5) -> np.ndarray:
    """Every launch: the ranks' own ends (a common kernel time, 0.3 us of own noise), the pacer 8 us longer, and every
    other rank held until 0-``tie_us`` after the pacer's end (it waits for the pacer's data)."""
    own = 118.0 + rng.normal(0.0, 2.0, (launches, 1)) + rng.normal(0.0, 0.3, (launches, world))
    own[:, pacer] += 8.0
    held = own[:, [pacer]] + rng.uniform(0.0, tie_us, (launches, world))
    end = np.maximum(own, held)
    end[:, pacer] = own[:, pacer]
    return np.round(end * 1000.0) / 1000.0  # msprof's nanoseconds


def test_a_tied_slow_rank_paces_the_end_and_is_named_without_a_cost():
    end = tied_ends(np.random.default_rng(3), 200, 24, pacer=5)
    (found,) = pacers(account_of(end), np.arange(24), ALPHA, OWN_MIN)
    assert found.rank == 5 and found.evidence == "own_work"
    assert found.facts["cost_not_established"] == "peers_hidden"
    test = found.facts["paces_end"]
    assert test["fraction_first"] > 0.9 and test["chance"] == 1 / 24 and test["p_value"] < ALPHA / 24
    assert 0.0 < test["lag_us_median"] <= 0.5


def test_exchangeable_ends_name_nobody():
    end = 118.0 + np.random.default_rng(4).normal(0.0, 0.3, (300, 24))
    assert pacers(account_of(end), np.arange(24), ALPHA, OWN_MIN) == []


def test_one_rank_has_nobody_to_pace():
    assert pacers(account_of(np.zeros((50, 1))), np.arange(1), ALPHA, OWN_MIN) == []


def test_ends_tied_at_the_nanosecond_have_no_first_ender():
    end = np.repeat(np.arange(100.0)[:, None], 8, axis=1)
    assert (first_enders(end) == -1).all()
    assert pacers(account_of(end), np.arange(8), ALPHA, OWN_MIN) == []


def test_two_ranks_a_pacer_of_every_launch_is_named_and_a_coin_toss_is_not():
    rng = np.random.default_rng(5)
    assert [c.rank for c in pacers(account_of(tied_ends(rng, 100, 2, pacer=1)), np.arange(2), ALPHA, OWN_MIN)] == [1]
    end = rng.normal(0.0, 1.0, (100, 2))
    assert pacers(account_of(end), np.arange(2), ALPHA, OWN_MIN) == []


def test_a_rank_that_ends_first_by_more_than_own_work_min_is_fast_not_a_pace():
    end = 118.0 + np.random.default_rng(6).normal(0.0, 0.3, (200, 8))
    end[:, 2] -= 2 * OWN_MIN  # it finishes its own work early: the others do not wait for it
    assert pacers(account_of(end), np.arange(8), ALPHA, OWN_MIN) == []


def test_structural_first_enders_far_ahead_of_the_others_are_not_pacers():
    # the workflow simulator's 3x4: ranks 0, 3 and 6 take turns ending first (p ~1e-11 each against 1/12), about 60 us
    # before the others' last, who do not wait for them
    rng = np.random.default_rng(8)
    end = 1000.0 + rng.normal(0.0, 3.0, (200, 12))
    early = rng.choice([0, 3, 6], size=200)
    end[np.arange(200), early] -= 60.0
    assert pacers(account_of(end), np.arange(12), ALPHA, OWN_MIN) == []


def test_the_binomial_tail_is_exact_on_small_counts():
    tails = binomial_tails(3, 0.5)
    assert np.allclose(tails, [1.0, 7 / 8, 4 / 8, 1 / 8])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(2, 64), st.integers(5, 300), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 6.0]))
def test_random_exchangeable_ends_never_name_a_pacer(world, launches, seed, common_sd):
    # every rank ends first with chance 1/world in every launch: a pacer named here is a false alarm
    rng = np.random.default_rng(seed)
    end = common_sd * rng.standard_normal((launches, 1)) + rng.normal(0.0, 0.3, (launches, world))
    assert pacers(account_of(end), np.arange(world), ALPHA, OWN_MIN) == []


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(2, 64), st.integers(60, 300), st.integers(0, 2**32 - 1), st.data())
def test_a_planted_pacer_with_its_peers_held_after_it_is_named(world, launches, seed, data):
    pacer = data.draw(st.integers(0, world - 1))
    end = tied_ends(np.random.default_rng(seed), launches, world, pacer)
    assert [c.rank for c in pacers(account_of(end), np.arange(world), ALPHA, OWN_MIN)] == [pacer]


def tied_grid(world: int = 8, per_node: int = 4, launches: int = 120, pacer: int | None = 5, late: int | None = None):
    """A coupled collective with a barrier kernel, one clock: the ranks arrive, the barrier releases them, the kernel
    runs 118 us each (0.3 us own noise); the pacer's own work is 8 us longer and every other rank waits for its data
    (ends 0-0.5 us after it); ``late``'s host arrives 60 us late in every launch."""
    rng = np.random.default_rng(7)
    prev = np.zeros(world)
    cols: dict[str, list[float]] = {k: [] for k in ("rank", "launch", *COLUMNS)}
    for i in range(launches):
        arrive = prev + 25.0 + rng.uniform(0, 4, world) + (60.0 * (np.arange(world) == late))
        release = arrive.max() + 3.0
        start = release + 1.5 + rng.uniform(0, 0.2, world)
        own = start.max() + 2.0 + 118.0 + rng.normal(0.0, 0.3, world)
        end = own.copy()
        if pacer is not None:
            own[pacer] += 8.0
            end = np.maximum(own, own[pacer] + rng.uniform(0.0, 0.5, world))
            end[pacer] = own[pacer]
        for r in range(world):
            for k, v in zip(
                ("rank", "launch", *COLUMNS), (r, i, start[r], end[r] - start[r], arrive[r], release - arrive[r])
            ):
                cols[k].append(v if k in ("rank", "launch") else round(v * 1000.0))
        prev = end + 8.0
    columns = {k: np.array(v, dtype=float) for k, v in cols.items() if k not in ("rank", "launch")}
    return waits.grid(np.array(cols["rank"], int), np.array(cols["launch"], int), columns, per_node)


COLUMNS = ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")


def analysed(g) -> dict:
    return in_words(waits.analyse(g, SETTINGS, [], BOOT), SETTINGS)


def test_the_account_names_the_pacer_with_its_cost_not_established_and_says_why():
    result = analysed(tied_grid())
    assert result["coupling"]["state"] == "coupled"
    strag = result["straggler"]
    (cause,) = strag["causes"]
    assert (cause["evidence"], cause["rank"], cause["cost_us_per_launch"]) == ("own_work", 5, 0.0)
    assert cause["cost_share"] is None and cause["wait_caused_us_per_launch"] is None
    assert "not established by the timeline" in cause["cost_not_established"]
    text = cause["explanation"]
    assert "rank 5 paces the group's end" in text and "chance 1/8" in text and "cost is not established" in text
    assert strag["rank"] == 5 and strag["cost_not_established"] == cause["cost_not_established"]


def test_no_fault_names_nobody_and_a_late_rank_is_not_also_a_pacer():
    assert analysed(tied_grid(pacer=None))["straggler"]["causes"] == []
    causes = analysed(tied_grid(pacer=2, late=2))["straggler"]["causes"]
    assert [(c["evidence"], c["rank"]) for c in causes] == [("late_arrival", 2)]


def test_a_pacers_figure_is_debugclocks_or_the_pmus_never_the_timelines_zero():
    cause = {"evidence": "own_work", "rank": 5, "node": None, "ranks": [5], "cost_us_per_launch": 0.0}
    cause["cost_not_established"] = "peers_hidden"
    pmu = {"rank": 5, "role": "URMASendToken", "excess_us": 9.0}
    slot = {"busiest": {"rank": 5, "role": "URMASendToken", "excess_us": 7.5}}
    assert best_figure(cause, layer_figures(cause, pmu, slot)).layer == "DebugClock"
    assert best_figure(cause, layer_figures(cause, pmu, None)).layer == "PMU"
    (timeline,) = layer_figures(cause, None, None)
    assert "not established" in timeline.measures


def test_ends_are_compared_across_nodes_only_where_the_clocks_allow_it():
    """paced_causes reads first ends across nodes only with ends_across_nodes (a pure barrier's clocks); on one node
    the clocks are the node's own, so the pacer is named there without it."""
    from dispatchprof.analysis.waits.paces_end import paced_causes

    end = tied_ends(np.random.default_rng(8), 200, 8, pacer=5)
    acc = account_of(end)
    acc.ends_across_nodes = False
    two_nodes, one_node = np.arange(8) // 4, np.zeros(8, int)
    settings_ = {"alpha": ALPHA, "own_work_min_us": OWN_MIN}
    assert paced_causes(acc, np.arange(8), two_nodes, settings_, []) == []
    (named,) = paced_causes(acc, np.arange(8), one_node, settings_, [])
    assert named["rank"] == 5 and named["cost_not_established"] == "peers_hidden"
