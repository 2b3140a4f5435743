"""The Answer is a verdict (issue 48): short lines checked against the numbers they say (the causes, the waiting
ranks, the latency), the top cause first, a next step for each cause and each open question."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.report.steps import Run
from dispatchprof.report.verdict import CauseTable, Facts, Line, item_text, verdict, word_count
from dispatchprof.shell.status import Status

STAGES = ("env_capture", "build", "correctness", "baseline", "timeline", "pmu", "pcsampling", "debugclock")
INVOCATION = ("--configfile", "config/config.yaml", "exp.yaml")


def statuses(**states):
    return {s: Status(s, "e", states.get(s, "ok"), f"{s} reason", "sim") for s in STAGES}


def cause(evidence, cost, rank=None, node=None, ranks=None, share=0.4, bound=None):
    return {
        "evidence": evidence,
        "rank": rank,
        "node": node,
        "ranks": ranks if ranks is not None else ([rank] if rank is not None else []),
        "fraction": 0.9,
        "cost_us_per_launch": cost,
        "cost_ci_us": [cost * 0.8, cost * 1.2],
        "cost_timed_us_per_launch": 0.0,
        "cost_share": share,
        "cost_bound_us": bound,
        "explanation": "x",
    }


BASELINE = {
    "per_iteration_max_us": {"median": 412.34, "median_ci95": [401.0, 420.5], "p95": 450.0, "n": 100},
    "slowest_named": None,
}


def timeline(causes, waiting=(), compared=13):
    return {
        "kernel_name": "elastic_dispatch_kernel",
        "coupling": {"state": "coupled"},
        "causes": causes,
        "straggler": {**causes[0], "evidence": causes[0]["evidence"]}
        if causes
        else {
            "evidence": "none",
            "explanation": "no cause costs the group more than 1 us per launch (timeline.waits.min_cost_us)",
        },
        "waiting": {"ranks": list(waiting), "causes_left_out": [12, 13], "compared": compared},
        "coverage": {"found": 16, "expected": 16, "missing": []},
    }


def facts(causes, waiting=(), states=None, ok=("pmu",), compared=13, **sections):
    states = states or statuses(debugclock="disabled")
    sec = {"baseline": BASELINE, "timeline": timeline(causes, waiting, compared), **sections}
    return Facts(states, "sim", 16, sec, (), Run("exp", INVOCATION, "collect", frozenset(ok), frozenset()))


def lines(items):
    return [i for i in items if isinstance(i, Line)]


def table(items):
    return next(i for i in items if isinstance(i, CauseTable))


def test_the_answer_opens_with_latency_then_the_top_cause_and_its_cost_within_60_words():
    causes = [
        cause("late_arrival", 47.42, rank=3),
        cause("own_work", 12.0, rank=14, share=0.1),
        cause("late_ending_node", 8.0, node=1, ranks=[8, 15]),
    ]
    items = verdict(facts(causes, waiting=[0, 1, 2]))
    text = "\n".join(item_text(i) for i in items)
    assert word_count(text) <= 150
    first = " ".join(text.split()[:60])
    assert "rank 3" in first and "47.4 us per launch" in first
    assert (
        lines(items)[1].text.startswith("A dispatch takes 412.3 us (group median")
        and "95% CI 401.0-420.5" in lines(items)[1].text
    )
    rows = table(items).rows
    assert [r.who for r in rows] == ["rank 3", "rank 14", "node 1 (ranks 8-15)"]
    for row, c in zip(rows, causes):  # the cells say the numbers of the causes table
        cost, lo, hi = map(float, re.fullmatch(r"([\d.]+) \(([\d.]+)-([\d.]+)\)", row.cost).groups())
        assert (
            abs(cost - c["cost_us_per_launch"]) <= 0.05
            and abs(lo - c["cost_ci_us"][0]) <= 0.05
            and abs(hi - c["cost_ci_us"][1]) <= 0.05
        )
        assert row.share == f"{100 * c['cost_share']:.0f}%"


def test_every_line_is_at_most_40_words_and_every_cause_and_open_question_has_a_step():
    causes = [cause("own_work", 30.0, rank=6), cause("in_kernel", 10.0, ranks=[9])]
    items = verdict(facts(causes, waiting=[1]))
    assert all(word_count(item_text(i)) <= 40 for i in lines(items))
    rows = table(items).rows
    # the PMU is ok (its file), DebugClock is not: the own-work rank's step collects DebugClock, forced and asked for
    assert all(
        r.step.startswith("snakemake --cores 2 results/exp/debugclock/status.json --forcerun debugclock_collect")
        for r in rows
    )
    assert all(
        r.step.endswith("--configfile config/config.yaml exp.yaml --config 'debugclock={when: always}'") for r in rows
    )
    (dc,) = [i for i in lines(items) if i.topic == "open"]
    assert dc.text == "DebugClock not run (disabled):" and dc.step == rows[0].step
    assert (
        "ends late inside the kernel" in [r.kind for r in rows] and rows[1].who == "rank 9"
    )  # a single rank reads "rank 9"


def test_a_bound_is_said_as_one_and_its_footnote_says_what_gives_a_number():
    items = verdict(facts([cause("late_arrival", 20.0, node=1, ranks=[8, 15], share=None, bound=[0.0, 50.0])]))
    (top,) = [i for i in lines(items) if i.text.startswith("Top cause")]
    assert top.text == "Top cause: node 1 (ranks 8-15), late hosts, at most 50.0 us per launch (a bound). See it:"
    assert top.step == "results/exp/timeline/merged_trace.json"
    t = table(items)
    assert t.rows[0].cost == "at most 50.0*" and any("baseline.synchronize_start" in n for n in t.footnotes)


def test_no_cause_says_so_and_a_missing_pmu_gives_its_command():
    items = verdict(facts([], waiting=[], states=statuses(pmu="timeout", debugclock="disabled"), ok=()))
    texts = [i.text for i in lines(items)]
    assert (
        "No rank or node costs the group over 1 us per launch; a slowdown "
        "every rank shares would not stand out (DebugClock can show one)." in texts
    )
    assert not any(isinstance(i, CauseTable) for i in items)
    pmu = next(i for i in lines(items) if i.text == "PMU timeout:")
    assert pmu.step.startswith("snakemake --cores 2 results/exp/pmu/status.json --forcerun pmu_collect --configfile")


def test_imported_data_points_at_the_key_that_imports_missing_evidence():
    f = facts([cause("own_work", 30.0, rank=6)], states=statuses(pmu="skipped", debugclock="skipped"), ok=())
    f = Facts(f.statuses, "none", 16, f.sections, (), Run("exp", (), "analyze", frozenset(), frozenset()))
    assert table(verdict(f)).rows[0].step == "analyze.pmu_dir"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 15), min_size=1, max_size=3, unique=True),
    st.lists(st.integers(0, 15), max_size=16, unique=True),
    st.lists(st.floats(1.5, 500.0), min_size=3, max_size=3),
)
def test_the_waiting_line_names_exactly_the_waiting_ranks_and_never_a_cause(cause_ranks, waiting, costs):
    """analysis.waits leaves causes out of the waiting ranks; the line says those ranks, no other, no cause."""
    waiting = [r for r in waiting if r not in cause_ranks]
    causes = [cause("own_work", c, rank=r) for r, c in zip(cause_ranks, sorted(costs, reverse=True))]
    items = verdict(facts(causes, waiting=waiting, compared=16 - len(cause_ranks)))
    said = [i.text for i in lines(items) if i.topic == "waiting"]
    if not waiting:
        assert said == []
        return
    (text,) = said
    assert "above" not in text and "causes" not in text
    if len(waiting) > (16 - len(cause_ranks)) / 2:
        compared = 16 - len(cause_ranks)
        assert text.startswith(
            f"All {compared} ranks" if len(waiting) == compared else f"{len(waiting)} of the {compared} ranks"
        )
    else:
        named = [int(n) for n in re.findall(r"\d+", text.split(" only ")[0])]
        assert named == waiting[:8] + ([len(waiting) - 8] if len(waiting) > 8 else [])
        assert text.startswith("Rank " if len(waiting) == 1 else "Ranks ")
    top = next(i.text for i in lines(items) if i.text.startswith("Top cause"))
    assert f"rank {causes[0]['rank']}," in top and f"{causes[0]['cost_us_per_launch']:.1f} us per launch" in top


def test_what_limits_the_timeline_is_said_before_its_causes():
    partial = {
        **timeline([cause("own_work", 9.0, rank=2)]),
        "coverage": {"found": 14, "expected": 16, "missing": [3, 9], "sentence": "14 of 16 ranks"},
    }
    f = facts([])
    f = Facts(f.statuses, "sim", 16, {**f.sections, "timeline": partial}, (), f.run)
    texts = [item_text(i) for i in verdict(f)]
    cover = next(i for i, t in enumerate(texts) if t.startswith("The timeline covers 14 of 16 ranks"))
    assert cover < next(
        i for i, t in enumerate(texts) if t.startswith("Top cause: rank 2, own work, 9.0 us per launch")
    )
    single = {**partial, "coverage": {"found": 1, "expected": 1, "missing": []}}
    texts = [item_text(i) for i in verdict(Facts(f.statuses, "none", 1, {**f.sections, "timeline": single}, (), f.run))]
    assert "The timeline holds one rank: which rank is slow, and who waits, are not established." in texts
    assert not any(t.startswith("Top cause") for t in texts)


def bandwidth(efficiency, far, warning=None):
    return {
        "links": {"inter_node": {"bound_us": 983.0}, "intra_node": {"bound_us": 573.0}},
        "bound_us": 983.0,
        "efficiency": efficiency,
        "sets_bound": "inter_node",
        "far": far,
        "warning": warning,
        "tell_apart_command": "snakemake --cores 2 results/exp/debugclock/status.json --forcerun debugclock_collect",
    }


def links_of(items):
    return [line for line in lines(items) if line.topic == "links"]


def test_the_links_line_says_the_bound_and_the_share_and_points_at_debugclock_only_when_far_with_nobody_standing_out():
    near = facts([], baseline={**BASELINE, "bandwidth": bandwidth(0.75, far=False)})
    (line,) = links_of(verdict(near))
    assert line.text == "Links allow 983 us (inter-node at peak): 75% of that bound." and line.step is None
    far = links_of(verdict(facts([], baseline={**BASELINE, "bandwidth": bandwidth(0.42, far=True)})))[0]
    assert (
        "42% of that bound" in far.text
        and "slow link or slow senders" in far.text
        and far.step.endswith("--forcerun debugclock_collect")
    )
    named = links_of(
        verdict(
            facts([cause("late_arrival", 30.0, rank=5)], baseline={**BASELINE, "bandwidth": bandwidth(0.42, far=True)})
        )
    )[0]
    assert "slow link" not in named.text and named.step is None  # a cause stands out: it is the reading, not the links
    ran = facts(
        [],
        states=statuses(),
        ok=("pmu", "debugclock"),
        baseline={**BASELINE, "bandwidth": bandwidth(0.42, far=True)},
        debugclock=NODE1_SLOT,
    )
    after = links_of(verdict(ran))[0]
    assert (
        "slow link or slow senders (DebugClock below)" in after.text and after.step is None
    )  # it ran: no command to collect it again


def test_no_bound_no_links_line_and_an_efficiency_above_one_says_the_peak_is_wrong():
    assert links_of(verdict(facts([], baseline={**BASELINE, "bandwidth": {**bandwidth(None, far=False)}}))) == []
    assert links_of(verdict(facts([]))) == []
    (over,) = links_of(
        verdict(facts([], baseline={**BASELINE, "bandwidth": bandwidth(1.4, far=False, warning="efficiency 1.40 > 1")}))
    )
    assert "140% of that bound" in over.text and "the peak or the byte definition is wrong" in over.text


def role(rate, time=1300.0):
    return {"cores": 18, "aiv_time_us_median": time, "aiv_icache_miss_rate_median": rate}


def icache_of(items):
    return [line for line in lines(items) if line.topic == "icache"]


def test_a_striking_icache_miss_rate_is_said_against_the_other_roles_with_its_time_and_the_probe_as_next_step():
    roles = {
        "URMASendToken": role(0.279, 1312.4),
        "CalCumSum": role(0.03),
        "TokenCopyToBuffer": role(0.015),
        "SelfCopyToken": role(0.02),
    }
    pmu = {"roles": roles, "busiest": {"role": "URMASendToken", "rank": 11, "excess_us": 60.0, "excess_ratio": 0.5}}
    (line,) = icache_of(verdict(facts([], pmu=pmu)))
    assert "URMASendToken misses 27.9% (other roles 1.5-3.0%), cores 1312 us" in line.text
    assert "not a verdict" in line.text and line.step.startswith("probe.enabled: true")
    with_probe = {**statuses(debugclock="disabled"), "probe": Status("probe", "e", "ok", "probe reason", "sim")}
    probed = icache_of(
        verdict(
            facts([], states=with_probe, pmu=pmu, probe={"cachemiss": {"total": 5, "top_pcs": []}}, ok=("pmu", "probe"))
        )
    )[0]
    assert probed.step is None  # the probe ran: its own line says what it counted
    # without a chain role: a role whose rate stands apart from the others' is said, one within their spread is not
    apart = {"roles": roles}
    (line,) = icache_of(verdict(facts([], pmu=apart)))
    assert line.text.startswith("I-cache: URMASendToken misses 27.9% (other roles 1.5-3.0%)")
    near = {"roles": {**roles, "URMASendToken": role(0.025)}}
    assert icache_of(verdict(facts([], pmu=near))) == []  # 3.0% against 1.5-2.5%: within how the others spread


# --- each layer's figure for the top cause (issue 45 item 3: analysis/layers.py)

NODE1_SLOT = {
    "busiest_node": {
        "node": 1,
        "ranks": list(range(8, 16)),
        "role": "URMASendToken",
        "phase": "send_complete",
        "excess_us": 978.5,
    },
    "busiest": None,
}


def test_a_late_ending_nodes_row_carries_debugclocks_larger_figure_and_names_the_layer():
    late_node = cause("late_ending_node", 17.0, node=1, ranks=list(range(8, 16)))
    items = verdict(
        facts(
            [late_node],
            states=statuses(),
            ok=("pmu", "debugclock"),
            debugclock=NODE1_SLOT,
            pmu={"busiest": None, "roles": {}},
        )
    )
    top = next(line for line in lines(items) if line.text.startswith("Top cause"))
    assert "978.5 us per launch (DebugClock; the timeline's lead 17.0)" in top.text
    assert "% of the excess" not in top.text  # a share of the timeline's excess belongs to the timeline's figure only
    t = table(items)
    assert t.rows[0].cost == "978.5 (DebugClock)\u2020"
    assert any(
        n.startswith("\u2020 node 1 (ranks 8-15): DebugClock's slot excess") and "17.0 us" in n for n in t.footnotes
    )


def test_own_work_keeps_the_timelines_cost_beside_a_larger_pmu_excess():
    own = cause("own_work", 32.3, rank=11)
    pmu = {
        "busiest": {"rank": 11, "role": "URMASendToken", "excess_us": 88.0, "excess_us_per_launch_low": 58.8},
        "roles": {},
    }
    items = verdict(facts([own], pmu=pmu))
    assert re.fullmatch(r"32\.3 \([\d.]+-[\d.]+\)", table(items).rows[0].cost)
    assert "PMU" in table(items).rows[0].seen_by


def test_a_rank_that_paces_the_end_is_ranked_by_the_pmus_figure_and_says_the_timeline_cannot_size_it():
    """The timeline sees the others wait for rank 11's data but has no size for it; the PMU's role excess on rank 11 is
    the row's figure. Rows are ranked by the figure each carries: 88.0 (PMU) above a late host's 43.1 (timeline)."""
    late = cause("late_arrival", 43.1, rank=2)
    pacer = {**cause("own_work", 0.0, rank=11, share=None), "cost_not_established": "peers_hidden"}
    pmu = {
        "busiest": {"rank": 11, "role": "URMASendToken", "excess_us": 88.0, "excess_us_per_launch_low": 58.8},
        "roles": {},
    }
    items = verdict(facts([late, pacer], pmu=pmu))
    top = next(line for line in lines(items) if line.text.startswith("Top cause"))
    assert top.text.startswith("Top cause: rank 11") and "(PMU; the timeline sees the others wait for it" in top.text
    rows = table(items).rows
    assert [r.who for r in rows] == ["rank 11", "rank 2"] and rows[0].cost.endswith("(PMU)\u2020")
    assert any("cannot size it" in n for n in table(items).footnotes)
    # without a PMU figure the pacer has no size at all: it stays below the costed cause, said not established
    items = verdict(facts([late, pacer], pmu={"busiest": None, "roles": {}}))
    assert [r.cost for r in table(items).rows][1] == "not established"
    assert next(line for line in lines(items) if line.text.startswith("Top cause")).text.startswith("Top cause: rank 2")


def test_a_node_shaped_late_set_is_said_as_the_waiting_node_with_its_likely_pacer():
    node_paced = {
        **cause("in_kernel", 107.0, ranks=[*range(8), 11]),
        "likely_pacer": [11],
        "waiting_nodes": [0],
    }
    items = verdict(facts([node_paced, cause("late_arrival", 43.1, rank=2)]))
    top = next(line for line in lines(items) if line.text.startswith("Top cause"))
    assert top.text.startswith("Top cause: node 0 with rank 11 (likely pacer), ends late inside the kernel, 107.0 us")
    assert table(items).rows[0].who == "node 0 with rank 11 (likely pacer)"
    two = {**node_paced, "likely_pacer": [14, 15], "waiting_nodes": [0, 2]}
    assert table(verdict(facts([two]))).rows[0].who == "nodes 0, 2 with ranks 14 and 15 (likely pacers)"


def test_where_the_timeline_names_nobody_debugclocks_slot_is_the_top_cause_with_its_assumption():
    items = verdict(
        facts(
            [], states=statuses(), ok=("pmu", "debugclock"), debugclock=NODE1_SLOT, pmu={"busiest": None, "roles": {}}
        )
    )
    texts = [line.text for line in lines(items)]
    top = next(t for t in texts if t.startswith("Top cause (DebugClock)"))
    assert (
        "node 1's URMASendToken send_complete, +978.5 us per launch" in top
        and "the link or its senders" in top
        and "critical path" in top
    )
    assert texts.index(top) == texts.index("The timeline sees no rank or node costing over 1 us per launch.") + 1
    assert not any(t.startswith("DebugClock:") for t in texts)  # said once, as the top cause


def test_on_partial_coverage_no_named_cause_is_not_said_as_nothing_costing():
    """analysis.waits names no cause when ranks have no data (tests/analysis/test_missing_rank.py): the Answer says so,
    never that no rank or node costs the group more than min_cost_us (a listed cause may cost 30 us)."""
    f = facts([])
    partial = {**f.sections["timeline"], "coverage": {"found": 15, "expected": 16, "missing": [5], "sentence": "15/16"}}
    f = Facts(f.statuses, "sim", 16, {**f.sections, "timeline": partial}, (), f.run)
    texts = [i.text for i in lines(verdict(f))]
    assert "The timeline names no cause on partial coverage: who ends last among all ranks is not known" in " ".join(
        texts
    )
    assert not any(t.startswith("No rank or node costs") for t in texts), texts
