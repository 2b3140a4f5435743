"""The cost account in words (report/cause_text, issue 45): the analysis gives facts and kinds, the report says them,
under the same keys and in the same place of the stats JSON as when the analysis said them itself."""

from __future__ import annotations

import pytest

from dispatchprof.report.cause_text import (
    COST_CLOCKS,
    EVERY_LAUNCH_ALIKE,
    EXPLAINED,
    NOT_NAMED,
    WHERE,
    describe,
    in_words,
    listed_text,
    not_apart_text,
    straggler_text,
)

SETTINGS = {"min_cost_us": 1.0, "alpha": 0.001}


def late_arrival(rank: int = 5, fraction: float = 1.0, cost: float = 20.0) -> dict:
    return {
        "evidence": "late_arrival",
        "rank": rank,
        "node": None,
        "ranks": [rank],
        "fraction": fraction,
        "late_us_median": 50.0,
        "cost_us_per_launch": cost,
        "cost_ci_us": [cost - 2.0, cost + 2.0],
        "cost_timed_us_per_launch": 0.0,
    }


def listed_set(members: list[int], lead: float, kind: str = "kernel_structure") -> dict:
    return {
        "evidence": "in_kernel",
        "rank": None,
        "ranks": [],
        "late_ending_ranks": members,
        "lead_us_median": lead,
        "fraction": 0.01,
        "launches": 100,
        "not_named": kind,
    }


def test_a_fraction_that_rounds_to_every_launch_is_not_said_to_be_every_launch():
    cause = late_arrival()
    assert "in 99.5% of launches" in describe({**cause, "fraction": 0.995})
    assert "in 100% of launches" in describe({**cause, "fraction": 1.0})
    assert "in 42% of launches" in describe({**cause, "fraction": 0.42})


def test_listed_causes_that_share_a_reason_say_it_once():
    """The answer lists what it does not name: two late-ending sets with the same reason read as one sentence with the
    reason once (a new user read it twice in a row), a cause with another reason keeps its own."""
    structure = "the timeline cannot tell a slow rank among late-ending ranks"
    sets = [
        {**listed_set([3, 8], 22.7), "not_named": structure},
        {**listed_set([6, 9], 20.8), "not_named": structure},
        {
            "rank": 15,
            "ranks": [15],
            "evidence": "own_work",
            "lead_us_median": 40.0,
            "fraction": 0.2,
            "not_named": "not established",
        },
    ]
    text = listed_text(sets)
    assert text.count(structure) == 1 and text.count("not established") == 1
    assert text.startswith(
        "ranks 3, 8 end late together (22.7 us after the others' "
        "last, in 1% of launches) and ranks 6, 9 end late together"
    )
    assert "rank 15 own_work (40.0 us lead" in text


def test_a_late_set_not_apart_by_chance_says_both_fractions_the_test_and_the_settings_that_decide():
    cause = {"stands_out": {"fraction_late": 14 / 40, "others_fraction_late": 12 / 40, "z": 0.4472}, "launches": 40}
    text = not_apart_text(cause, 0.01)
    assert text.startswith("late in 35% of 40 launches, the most often late of the other ranks in 30%"), text
    assert "z = 0.4" in text and "timeline.waits.alpha 0.01" in text
    assert text.endswith("more launches (timeline.iterations) can tell")


def test_every_kind_the_analysis_gives_is_said_under_its_own_key_in_its_place():
    named = {**late_arrival(), "where": "entry_barrier", "cost_clocks": "target_ends", "cost_bound_us": [0.0, 30.0]}
    chance = {
        **listed_set([2, 5], 30.0, "chance"),
        "stands_out": {"fraction_late": 0.64, "others_fraction_late": 0.32, "z": 2.4},
    }
    barrier = {**listed_set([3], 12.0, "no_pure_barrier"), "late_ending_ranks": None, "rank": 3, "ranks": [3]}
    waited = {"straggler": {"rank": 5, "causes": [named], "unnamed": [chance, barrier], "excess": {}}}
    keys = list(named)
    strag = in_words(waited, SETTINGS)["straggler"]
    assert list(strag) == ["rank", "causes", "unnamed", "explanation", "excess"]  # where the analysis put it before
    assert list(named) == [*keys, "explanation"]
    assert named["where"] == WHERE["entry_barrier"] and named["cost_clocks"] == COST_CLOCKS["target_ends"]
    assert "at the kernel's entry barrier" in named["explanation"] and strag["explanation"] == named["explanation"]
    assert chance["not_named"].startswith("late in 64% of 100 launches") and "alpha 0.001" in chance["not_named"]
    assert barrier["not_named"] == NOT_NAMED["no_pure_barrier"]
    assert "explanation" not in chance  # a listed cause has no sentence of its own: it is a clause of the straggler's


def test_an_unknown_kind_is_an_error_not_a_silent_sentence():
    with pytest.raises(KeyError):
        in_words({"straggler": {"causes": [], "unnamed": [listed_set([1, 2], 5.0, "a kind nobody says")]}}, SETTINGS)


def test_more_named_causes_than_the_explanation_spells_out_are_counted_and_pointed_at():
    named = [{**late_arrival(rank=r), "explanation": f"cause {r}"} for r in range(EXPLAINED + 2)]
    text = straggler_text(named, [], 1.0)
    assert text.startswith("cause 0; cause 1") and f"cause {EXPLAINED - 1}; and 2 smaller named causes" in text
    assert f"cause {EXPLAINED}" not in text


def test_nobody_named_says_the_threshold_the_listed_causes_and_what_the_timeline_cannot_see():
    listed = [{**listed_set([3, 8], 22.7), "not_named": NOT_NAMED["kernel_structure"]}]
    text = straggler_text([], listed, 2.5)
    assert text.startswith("no rank or node stands out: no cause costs the group more than 2.5 us per launch")
    assert ". Listed, not named: ranks 3, 8 end late together" in text
    assert text.endswith(". " + EVERY_LAUNCH_ALIKE[0].upper() + EVERY_LAUNCH_ALIKE[1:])
    assert "Listed" not in straggler_text([], [], 2.5)


def test_the_whole_group_waiting_inside_the_kernel_names_nobody_and_says_who_can():
    cause = {
        "evidence": "in_kernel",
        "rank": None,
        "node": None,
        "ranks": [],
        "fraction": 0.2,
        "kernel_us_median": 260.0,
        "above_us_median": 200.0,
        "cost_us_per_launch": 40.0,
        "cost_ci_us": [35.0, 45.0],
        "cost_timed_us_per_launch": 40.0,
    }
    text = describe(cause)
    assert text.startswith("in 20% of launches the whole group's kernel takes longer (200 us above the typical 260 us)")
    assert "PMU or DebugClock must name the rank and role" in text


def test_late_ending_ranks_with_the_ranks_that_end_with_them_say_both_and_blame_nobody():
    cause = {
        "evidence": "in_kernel",
        "rank": None,
        "node": None,
        "ranks": [0, 1, 2, 5, 6],
        "late_ending_ranks": [0, 1, 2, 5, 6],
        "ending_with": [0, 1, 2],
        "persistent": True,
        "fraction": 0.99,
        "lead_us_median": 580.0,
        "cost_us_per_launch": 552.0,
        "cost_ci_us": [534.0, 569.0],
        "cost_timed_us_per_launch": 562.0,
    }
    text = describe(cause)
    assert text.startswith(
        "ranks 5, 6 are among the late-ending ranks of most launches, and ranks 0, 1, 2 end with them"
    )
    assert "580.0 us after the others' last" in text and "no claim about why" in text
