"""The report's answer follows the chain rank -> role -> I-cache -> SIMT stalls -> A/B, each link with its evidence
or "not established" and why."""

from dispatchprof.report.roles import cost_beside
from dispatchprof.report.summary import EVIDENCE_TOPICS, evidence_paragraph, evidence_parts, evidence_sentences
from dispatchprof.shell.status import Status

STAGES = ("env_capture", "build", "correctness", "baseline", "timeline", "pmu", "pcsampling")


def statuses(**states):
    return {s: Status(s, "e", states.get(s, "ok"), f"{s} reason", "sim") for s in STAGES}


TIMELINE = {
    "kernel_name": "elastic_dispatch_kernel",
    "coupling": {"state": "coupled"},
    "straggler": {"evidence": "in_kernel", "explanation": "ranks [5, 8] wait inside the kernel for a peer's data"},
    "longest_duration": {"rank": 8, "fraction": 0.4, "label": "waits longest"},
}
PMU = {
    "roles": {
        "URMASendToken": {"aiv_time_us_median": 1000.0, "cores": 36, "aiv_icache_miss_rate_median": 0.025},
        "CalCumSum": {"aiv_time_us_median": 990.0, "cores": 32, "aiv_icache_miss_rate_median": 0.03},
    },
    "busiest": {"rank": 5, "role": "URMASendToken", "busy_us_high": 150.0, "peers_median_us": 100.0, "excess_us": 50.0},
}
PCS = {
    "stalls": {"not_issue": {"Scoreboard_Not_Ready": 0.4, "IBuf_Empty": 0.6}},
    "hot_lines": [{"file": "k.cpp", "line": 7, "function": "simt_prepare_mapping"}],
    "per_role": {
        "URMASendToken": {
            "functions": ["buildRemoteWqeDesc"],
            "stalls": {"Scoreboard_Not_Ready": 0.7, "IBuf_Empty": 0.3},
        }
    },
}


def test_each_link_of_the_chain_names_its_evidence():
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": TIMELINE, "pmu": PMU, "pcsampling": PCS})
    assert (
        "wait inside the kernel" in text
        and "Rank 8 has the longest durations" in text
        and "holds its wait inside the kernel" in text
        and "does not make it slow" in text
    )
    assert "rank 5's URMASendToken cores are the busiest against the same role" in text
    assert (
        "The timeline finds the cause inside the kernel, without a "
        "rank: this names it; the role's excess is 50.0 us per launch" in text
    )
    assert "The URMASendToken role's I-cache miss rate is 2.5% (median), rank 2 of 2 roles" in text
    assert (
        "In the SIMT functions the URMASendToken role runs (buildRemoteWqeDesc), "
        "the main reasons not to issue are Scoreboard_Not_Ready (70%)" in text
    )
    assert "no A/B comparison is configured" in text
    ab = evidence_paragraph(
        statuses(),
        "sim",
        16,
        {"timeline": TIMELINE, "pmu": PMU, "pcsampling": PCS},
        [{"a": "x", "b": "y", "state": "ok", "reason": "faster"}],
    )
    assert "Whether a change helped: x vs y: ok: faster." in ab


def test_a_missing_link_says_not_established_and_why():
    text = evidence_paragraph(statuses(pmu="timeout", pcsampling="skipped"), "sim", 16, {"timeline": TIMELINE})
    assert "Which role is busiest is not established: the PMU stage is timeout (pmu reason)" in text
    no_simt = dict(PMU, busiest={**PMU["busiest"], "role": "CalCumSum"})
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": TIMELINE, "pmu": no_simt, "pcsampling": PCS})
    assert "The CalCumSum role runs no SIMT code" in text


def test_a_precision_test_that_never_ran_is_not_reported_as_failing():
    # Before: "The precision test did not pass (failed: ...)" when another run held the readiness port.
    states = statuses(correctness="failed", baseline="skipped", timeline="skipped", pmu="skipped", pcsampling="skipped")
    states["correctness"].reason = "not run: node 1 never became ready (none of its ranks 8-15 started)"
    states["correctness"].details = {"cause": "infrastructure"}
    text = evidence_paragraph(states, "sim", 16)
    assert (
        "The precision test was not run because node 1 never became ready (none of its ranks 8-15 started) (failed)"
        in text
    )
    assert "did not pass" not in text


def test_a_skipped_precision_test_names_its_root_cause_once():
    states = statuses(correctness="skipped")
    states["correctness"].root_cause = {"stage": "build", "state": "failed", "reason": "cmake exited 2"}
    text = evidence_paragraph(states, "sim", 16)
    assert (
        "The precision test was not run because build is failed: cmake exited 2" in text
        and text.count("cmake exited 2") == 1
    )


def test_a_failing_rank_is_still_a_precision_failure():
    states = statuses(correctness="failed")
    states["correctness"].details = {"cause": "precision"}
    assert "The precision test did not pass (failed: correctness reason)" in evidence_paragraph(states, "sim", 16)


def test_a_crashed_precision_test_is_not_reported_as_a_precision_failure():
    states = statuses(correctness="failed")
    states["correctness"].reason = "rank 1 (node 0, local rank 1) died first: exit code 1"
    states["correctness"].details = {"cause": "crash"}
    text = evidence_paragraph(states, "sim", 16)
    assert (
        "The precision test crashed before every rank gave its verdict: no precision failure is known (rank 1 (node 0"
        in text
    )
    assert "did not pass" not in text


def test_a_partial_timeline_states_its_coverage_before_what_it_concludes():
    partial = {
        **TIMELINE,
        "coverage": {"expected": 16, "found": 15, "missing": [3], "sentence": "15/16 ranks (missing rank 3)"},
    }
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": partial})
    covered = text.index("The msprof timeline covers 15/16 ranks (missing rank 3)")
    assert covered < text.index("wait inside the kernel") and "may be the one the others wait for" in text


def test_a_single_rank_is_not_called_the_slowest_and_inferred_ranks_are_said_so():
    single = {
        "kernel_name": "matmul_kernel",
        "coupling": {"state": "unknown"},
        "straggler": {"evidence": "none", "explanation": "no rank stands out"},
        "longest_duration": {"rank": 0, "fraction": 1.0},
        "coverage": {"expected": 1, "found": 1, "missing": [], "sentence": "1/1 ranks"},
        "per_rank": {"0": {"launches": 5, "median_us": 348.697}},
        "rank_mapping": {"note": "1 of 1 ranks were numbered from device ids"},
    }
    text = evidence_paragraph(statuses(), "none", 1, {"timeline": single})
    assert "on a single rank (5 launches, median 348.7 us)" in text and "not established" in text
    assert "longest" not in text and "consistently" not in text and "stands out" not in text
    assert "Rank numbers are inferred: 1 of 1 ranks were numbered from device ids." in text


def test_ranks_tied_for_the_longest_durations_are_all_named():
    # longest_duration names a shared top as ranks [3, 7] with rank None; the answer used to drop the sentence
    tied = dict(TIMELINE, longest_duration={"rank": None, "ranks": [3, 7], "fraction": 0.5, "label": "waits longest"})
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": tied})
    assert (
        "Ranks 3 and 7 share the longest durations (each 50% of launches)" in text and "does not make them slow" in text
    )


def test_a_named_cause_is_never_called_a_waiting_rank_and_the_answer_is_ranked_by_cost():
    """The issue's complaint: a slow LocalWindowCopy on rank 6 made rank 6 the longest, and the answer called it
    the rank that 'waits longest'. A cause's rank is labelled a named cause by the timeline, and never listed as
    waiting."""
    own = {
        **TIMELINE,
        "straggler": {
            "evidence": "own_work",
            "rank": 6,
            "explanation": "rank 6 ends last by itself ... it costs 12.0 us per launch",
        },
        "longest_duration": {"rank": 6, "fraction": 0.9, "label": "longest, a named cause"},
        "waiting": {"ranks": [0, 1, 2]},
    }
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": own})
    assert "ranked by what each cause costs the group" in text and "it costs 12.0 us per launch" in text
    assert "Rank 6 has the longest durations" not in text and "does not make it slow" not in text
    assert "Ranks 0, 1 and 2 wait longest at the barrier: waiting is not blame." in text


def test_the_next_steps_name_the_evidence_and_a_command_that_works_when_copied():
    from dispatchprof.report.steps import Run
    from dispatchprof.report.summary import next_steps

    causes = [
        {"evidence": "late_arrival", "rank": 7, "node": None, "ranks": [7]},
        {"evidence": "late_ending_node", "rank": None, "node": 1, "ranks": [8, 9]},
        {"evidence": "own_work", "rank": 3, "node": None, "ranks": [3]},
        {"evidence": "in_kernel", "rank": None, "node": None, "ranks": []},
    ]
    steps = next_steps(causes, "baseline")
    assert len(steps) == 3  # the top causes only
    assert (
        steps[0]["commands"] == ["snakemake --cores 2 results/baseline/timeline/ranks/rank7/detail.json"]
        and "host gap" in steps[0]["confirm"]
    )
    assert "DebugClock" in steps[1]["confirm"] and "PMU of the senders" in steps[1]["confirm"]
    # a stage whose status exists without evidence: its collect job forced, DebugClock asked for whatever the PMU did
    dclk = (
        "snakemake --cores 2 results/baseline/debugclock/status.json "
        "--forcerun debugclock_collect --config 'debugclock={when: always}'"
    )
    assert dclk in steps[1]["commands"]
    assert "snakemake --cores 2 results/baseline/timeline/ranks/rank3/detail.json" in steps[2]["commands"]
    (late_set,) = next_steps([{"evidence": "in_kernel", "rank": None, "node": None, "ranks": [13, 14]}], "baseline")
    assert "which of ranks 13 and 14 is slow and which waits for it" in late_set["confirm"]
    assert late_set["commands"][-2:] == [
        f"snakemake --cores 2 results/baseline/timeline/ranks/rank{r}/detail.json" for r in (13, 14)
    ]
    (alone,) = next_steps([{"evidence": "in_kernel", "rank": None, "node": None, "ranks": [9]}], "baseline")
    assert "whether rank 9 is slow" in alone["confirm"]  # not "which of ranks 9"
    # evidence the run holds is its file; a drilled rank's table, not a command that rebuilds nothing
    held = Run("baseline", (), "collect", frozenset({"pmu", "debugclock"}), frozenset({3}))
    (own,) = next_steps([causes[2]], "baseline", run=held)
    assert own["commands"] == [
        "results/baseline/pmu/roles.json",
        "results/baseline/debugclock/stats.json",
        "results/baseline/timeline/ranks/rank3/launches.csv",
    ]


BUSY_NEW = {
    "rank": 6,
    "role": "CalCumSum",
    "role_on_top": "CalCumSum",
    "busy_us_high": 77.2,
    "peers_median_us": 72.6,
    "excess_us": 4.6,
    "excess_ratio": 0.063,
    "nonscalar": {
        "us": 44.9,
        "peers_median_us": 42.4,
        "excess_us": 2.5,
        "excess_ratio": 0.06,
        "noise_us": 0.31,
        "z": 8.1,
    },
    "ranked_by": "nonscalar_us_high",
    "ranked_excess_ratio": 0.06,
    "excess_us_per_launch": 2.5,
    "every_role": False,
    "every_role_pattern": None,
}
OWN_WORK = {
    **TIMELINE,
    "straggler": {
        "evidence": "own_work",
        "rank": 6,
        "explanation": "rank 6 ends last by itself",
        "cost_us_per_launch": 9.5,
    },
}
DC = {
    "source": "akl_trace",
    "busiest": {
        "rank": 6,
        "role": "CalCumSum",
        "slot": 4,
        "phase": "experts_written",
        "median_us": 5.2,
        "peers_median_us": 4.0,
        "excess_us": 1.2,
    },
    "local_window_copy": {
        "per_rank": {
            "6": {
                "median_us": 30.0,
                "peers_median_us": 20.0,
                "excess_us": 10.0,
                "peers_spread_us": 2.0,
                "stands_out": True,
            },
            "0": {"median_us": 20.0, "peers_median_us": 20.0, "excess_us": 0.0},
        }
    },
}


def test_the_role_link_gives_the_relative_excess_without_scalar_and_its_cost_beside_the_ranks():
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": OWN_WORK, "pmu": {**PMU, "busiest": BUSY_NEW}})
    assert "waiting excluded" not in text and "the scalar pipe included" in text
    assert "rank 6's CalCumSum cores are the busiest against the same role" in text
    assert (
        "+6% without the scalar pipe (44.9 us against 42.4 us, 8x the "
        "role's spread); busy 77.2 us against a median of 72.6 us (+4.6 us)" in text
    )
    assert (
        "The role's excess on its vector and MTE pipes (its scalar work not counted), 2.5 us per "
        "launch, stands beside rank 6's cost to the group in the timeline, 9.5 us per launch (own_work)" in text
    )
    few = evidence_paragraph(
        statuses(), "sim", 3, {"timeline": OWN_WORK, "pmu": {**PMU, "busiest": {**BUSY_NEW, "spread_measured": False}}}
    )
    assert "the spread between ranks is not measured (only the cores' spread)" in few and "not measured" not in text
    before_costs = {
        **OWN_WORK,
        "straggler": {k: v for k, v in OWN_WORK["straggler"].items() if k != "cost_us_per_launch"},
    }
    assert "The timeline names rank 6 too (own_work)" in evidence_paragraph(
        statuses(), "sim", 16, {"timeline": before_costs, "pmu": {**PMU, "busiest": BUSY_NEW}}
    )
    lwc = {
        **BUSY_NEW,
        "role": "LocalWindowCopy",
        "every_role": True,
        "every_role_pattern": "same_us",
        "excess_us_per_launch": 10.1,
        "excess_us_per_launch_low": 5.0,
    }
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": OWN_WORK, "pmu": {**PMU, "busiest": lwc}})
    assert (
        "every role of rank 6 is busier than the same role on the other ranks "
        "by about the same time, 10.1 us per core and launch: LocalWindowCopy" in text
    )
    assert (
        "(its scalar work not counted), 5.0 to 10.1 us per launch, stands beside rank 6's cost" in text
    )  # pipes overlap: a range


def test_debugclock_is_in_the_answer_whenever_it_ran_with_the_own_work_ranks_local_window_copy():
    states = {**statuses(), "debugclock": Status("debugclock", "e", "ok", "dc reason", "sim")}
    text = evidence_paragraph(
        states, "sim", 16, {"timeline": OWN_WORK, "pmu": {**PMU, "busiest": BUSY_NEW}, "debugclock": DC}
    )
    assert (
        "DebugClock also ran (a DEBUG_CLOCK_ON build): rank 6's CalCumSum slot 4 "
        "(experts_written) exceeds the same role and slot on the other ranks by 1.2 us per launch" in text
    )
    assert (
        "Rank 6, slow by itself in the timeline: its LocalWindowCopy slot (wait plus copy, median over cores and "
        "launches) takes 30.0 us against a median of 20.0 us on the other ranks (+10.0 "
        "us per launch; the other ranks spread by 2.0 us): it stands out: its own copying" in text
    )
    states["pmu"] = Status("pmu", "e", "timeout", "replay hung", "sim")
    text = evidence_paragraph(states, "sim", 16, {"timeline": OWN_WORK, "debugclock": DC})
    assert (
        "the role link uses the DebugClock fallback" in text
        and "stands beside rank 6's cost to the group in the timeline, 9.5 us per launch" in text
    )
    assert "LocalWindowCopy slot (wait plus copy" in text
    hidden = {
        **DC,
        "local_window_copy": {"per_rank": {"6": {**DC["local_window_copy"]["per_rank"]["6"], "stands_out": False}}},
    }
    assert "within that spread, so DebugClock does not single out its LocalWindowCopy" in evidence_paragraph(
        states, "sim", 16, {"timeline": OWN_WORK, "debugclock": hidden}
    )
    waiting = {**TIMELINE, "straggler": {"evidence": "late_arrival", "rank": 3, "explanation": "rank 3 arrives late"}}
    assert "LocalWindowCopy slot" not in evidence_paragraph(
        states, "sim", 16, {"timeline": waiting, "debugclock": DC}
    )  # only for own_work


def test_a_long_rank_list_says_how_many_other_ranks_it_leaves_out():
    from dispatchprof.report.summary import name_list

    assert name_list(list(range(15))) == "Ranks 0, 1, 2, 3, 4, 5, 6, 7 and 7 other ranks"  # not "7 and 7 more"
    assert name_list(list(range(9))) == "Ranks 0, 1, 2, 3, 4, 5, 6, 7 and 1 other rank"
    assert name_list([3, 9]) == "Ranks 3 and 9" and name_list([4]) == "Rank 4"


def test_the_role_link_places_the_busiest_rank_against_late_ending_ranks_and_a_late_ending_node():
    late_set = {
        **TIMELINE,
        "straggler": {
            "evidence": "in_kernel",
            "rank": None,
            "node": None,
            "ranks": [5, 6],
            "cost_us_per_launch": 210.0,
            "explanation": "x",
        },
    }
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": late_set, "pmu": PMU})
    assert (
        "The timeline names ranks 5 and 6 ending late together, 210.0 us per "
        "launch, with no claim about why; rank 5 is one of them: this names which" in text
    )
    alone = {
        **late_set,
        "straggler": {**late_set["straggler"], "ranks": [5]},
    }  # one rank: no "ranks 5 ending late together"
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": alone, "pmu": PMU})
    assert (
        "The timeline names rank 5 ending late, 210.0 us per launch, with no claim about why; rank 5 is that rank"
        in text
    )
    node = {
        "evidence": "late_ending_node",
        "rank": None,
        "node": 1,
        "ranks": [8, 9, 10, 11],
        "cost_us_per_launch": 17.0,
        "explanation": "x",
    }
    text = evidence_paragraph(statuses(), "sim", 16, {"timeline": {**TIMELINE, "straggler": node}, "pmu": PMU})
    assert (
        "The timeline's top cause is node 1's late end, 17.0 us per "
        "launch (the link into it, or its own work: not established)" in text
    )
    assert (
        "rank 5 is on another node: a sender into it, so the link or that sender, not the late node's own work" in text
    )


def test_a_node_whose_every_rank_sends_slower_stands_beside_the_timelines_late_ending_node_with_its_excess():
    states = {**statuses(), "debugclock": Status("debugclock", "e", "ok", "dc reason", "sim")}
    node_best = {
        "node": 0,
        "ranks": list(range(8)),
        "role": "URMASendToken",
        "slot": 4,
        "phase": "send_complete",
        "median_us": 5845.0,
        "peers_median_us": 3914.0,
        "peers_spread_us": 39.0,
        "excess_us": 1931.0,
    }
    dc = {
        **DC,
        "busiest": {"rank": 3, "role": "URMASendToken", "slot": 4, "phase": "send_complete", "excess_us": 1920.0},
        "busiest_node": node_best,
    }
    late = {
        "evidence": "late_ending_node",
        "rank": None,
        "node": 0,
        "ranks": list(range(8)),
        "cost_us_per_launch": 17.0,
        "explanation": "x",
    }
    text = evidence_paragraph(
        states, "sim", 16, {"timeline": {**TIMELINE, "straggler": late}, "pmu": PMU, "debugclock": dc}
    )
    assert (
        "Every rank of node 0 runs URMASendToken slot 4 (send_complete) longer than the other nodes' ranks: 5845.0 us "
        "against 3914.0 us (each rank's slowest core, median over launches; +1931.0 us per launch; 50x their spread). "
        "A slowdown the node's ranks share: its sends out of the node (the link from it, or its senders), not one rank"
    ) in text
    assert (
        "The timeline's top cause is the same node's late end at 17.0 "
        "us per launch: a late end counts only its lead over the others" in text
    )
    # the rank-level busiest on that node with that slot is the node's excess, not the rank's alone
    assert (
        "rank 3's URMASendToken slot 4 (send_complete) exceeds the same role and "
        "slot on the other ranks by 1920.0 us per launch (one of node 0's ranks" in text
    )
    receiving = {**late, "node": 1, "ranks": list(range(8, 16))}
    text = evidence_paragraph(
        states, "sim", 16, {"timeline": {**TIMELINE, "straggler": receiving}, "pmu": PMU, "debugclock": dc}
    )
    assert (
        "The timeline's top cause is node 1's late end (it may receive those "
        "sends: the link into it, not its own work) at 17.0 us per launch" in text
    )
    assert "Every rank of node" not in evidence_paragraph(
        states, "sim", 16, {"timeline": {**TIMELINE, "straggler": late}, "pmu": PMU, "debugclock": DC}
    )


def test_a_top_cause_whose_cost_is_only_bounded_is_given_beside_the_role_as_at_most():
    # without a pure barrier a late arrival across nodes costs "at
    # most" its lateness (analysis/waits/arrivals.py cost_bound_us)
    late = {"rank": 5, "evidence": "late_arrival", "cost_us_per_launch": 13.0, "cost_bound_us": [0.0, 54.5]}
    assert "another rank, 5 (late_arrival, at most 54.5 us per launch)" in cost_beside(6, 2.5, late)
    assert "rank 5's cost to the group in the timeline, at most 54.5 us per launch (late_arrival)" in cost_beside(
        5, 2.5, late
    )
    assert "another rank, 5 (late_arrival, 13.0 us per launch)" in cost_beside(6, 2.5, {**late, "cost_bound_us": None})


def test_the_answer_is_one_item_per_question_in_the_chains_order_and_loses_no_sentence():
    args = (statuses(pmu="failed"), "sim", 16, {"timeline": TIMELINE, "pcsampling": PCS})
    sentences = evidence_sentences(*args)
    parts = evidence_parts(sentences)
    topics = [p["topic"] for p in parts]
    # each question once, in the order of the chain; nothing said twice or dropped
    assert topics == ["data", "timeline", "role", "simt", "ab", "evidence"]
    assert " ".join(p["text"] for p in parts) == evidence_paragraph(*args) == " ".join(s for _, s in sentences)
    assert all(p["title"] == EVIDENCE_TOPICS[p["topic"]] for p in parts)
    (role,) = [p for p in parts if p["topic"] == "role"]
    assert role["text"].startswith("Which role is busiest is not established: the PMU stage is failed")
    (evidence,) = [p for p in parts if p["topic"] == "evidence"]
    assert (
        "No conclusion about what is slow can be drawn from stages without evidence: pmu is failed" in evidence["text"]
    )

    # PMU and DebugClock both ran: every word on which role is one item, before the I-cache's
    states = {**statuses(), "debugclock": Status("debugclock", "e", "ok", "dc reason", "sim")}
    both = evidence_parts(
        evidence_sentences(
            states, "sim", 16, {"timeline": OWN_WORK, "pmu": {**PMU, "busiest": BUSY_NEW}, "debugclock": DC}
        )
    )
    assert [p["topic"] for p in both] == ["data", "timeline", "role", "icache", "simt", "ab", "evidence"]
    assert "DebugClock also ran" in both[2]["text"] and both[2]["text"].index("Per core") < both[2]["text"].index(
        "DebugClock also ran"
    )


def test_the_waiting_ranks_name_only_ranks_that_wait_and_most_of_the_group_is_a_count():
    def waiting(causes=(), **w):
        tl = {
            **TIMELINE,
            "straggler": {"evidence": "none", "explanation": "no rank or node stands out"},
            "waiting": w,
            "causes": list(causes),
        }
        return evidence_paragraph(statuses(), "sim", 16, {"timeline": tl})

    # issue 48: "(ranks 12 and 13, as long, are among the causes above)" pointed at causes that were listed, not named
    few = waiting(ranks=[1, 4, 7], causes_left_out=[2, 13], compared=14)
    assert "Ranks 1, 4 and 7 wait longest at the barrier: waiting is not blame." in few and "above" not in few
    assert "Ranks 2 and 13 also wait as long at the barrier, and are causes listed, not named." in few
    named = waiting(
        [{"evidence": "own_work", "rank": 2, "ranks": [2]}], ranks=[1], causes_left_out=[2, 13], compared=14
    )
    assert (
        "Rank 1 waits longest at the barrier" in named
        and "Rank 2 also waits as long at the barrier, and is a named cause." in named
    )
    assert (
        "Rank 2 also waits as long at the barrier, and is a named cause." in named
        and "Rank 13 also waits as long at the barrier, and is a cause listed, not named." in named
    )
    most = waiting(ranks=list(range(11)), causes_left_out=[], compared=15)
    assert "11 of the 15 ranks that are no cause wait longest at the barrier: waiting is not blame." in most
    # a stats.json from before these keys: the names, as before
    assert "Ranks 1 and 4 wait longest at the barrier: waiting is not blame." in waiting(ranks=[1, 4])
