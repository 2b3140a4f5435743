"""summary.json: the machine-readable result of an experiment (stable keys; later stages add sections)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dispatchprof.report.steps import Run, drill_step, evidence_step
from dispatchprof.report.verdict import Facts
from dispatchprof.report.words import rank_list
from dispatchprof.analysis.layers import with_layer_figures
from dispatchprof.report.roles import cost_beside, own_work_rank, pmu_busiest_sentence, straggler_of
from dispatchprof.shell.invocation import snakemake_command
from dispatchprof.shell.status import Status

# /4: baseline.bandwidth (bytes per link class, the link bound, the group efficiency); /3: timeline causes ranked by
# cost, straggler = the top cause with its cost (or evidence none), excess, waiting, notes; /2: timeline straggler
# by wait evidence, longest_duration, coupling, node_clock; baseline slowest_named, spread; pmu busiest, busy ranges
SCHEMA = "dispatchprof.summary/6"


def build_summary(
    experiment: str,
    toolchain: str,
    mode: str,
    statuses: Mapping[str, Status],
    sections: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Stage sections (``baseline``...) are present when the stage is ok, else null."""
    summary = {
        "schema": SCHEMA,
        "experiment": experiment,
        "toolchain": toolchain,
        "mode": mode,
        "stages": {
            stage: {"state": s.state, "reason": s.reason, "root_cause": s.root_cause} for stage, s in statuses.items()
        },
    }
    for stage, section in (sections or {}).items():
        summary[stage] = section if statuses[stage].ok else None
    if summary.get("timeline"):  # each costed cause with the figure of every layer that saw it
        summary["timeline"] = with_layer_figures(summary["timeline"], summary.get("pmu"), summary.get("debugclock"))
    return summary


def baseline_sentence(section: Mapping[str, Any], world: int) -> str:
    per_iter = section["per_iteration_max_us"]
    lo, hi = per_iter["median_ci95"]
    slowest = section["slowest_rank"]
    text = (
        f"One dispatch takes a median of {per_iter['median']:.1f} us for the whole group (per-iteration max over "
        f"{world} ranks, kernel scope; 95% CI {lo:.1f}-{hi:.1f} us) and "
        f"{per_iter['p95']:.1f} us at P95, over {per_iter['n']} measured iterations."
    )
    named = section.get("slowest_named")
    if named is not None:
        text += (
            f" Rank {named['rank']} is slow by itself: {named['why']}."
            if named["rank"] is not None
            else f" No rank is named slow: {named['why']}."
        )
    elif slowest and slowest["fraction"] >= 0.5:
        text += f" Rank {slowest['rank']} is consistently the slowest ({100 * slowest['fraction']:.0f}% of iterations)."
    elif slowest:
        text += (
            " No rank is consistently the slowest (most often rank "
            f"{slowest['rank']}, {100 * slowest['fraction']:.0f}% of iterations)."
        )
    return text


def precision_sentence(corr: Status) -> str:
    """Why the precision gate is not ok, without calling a run that never ran a precision failure."""
    cause = corr.details.get("cause")
    if cause == "infrastructure":
        return f"The precision test was not run because {corr.reason.removeprefix('not run: ')} ({corr.state})"
    if corr.root_cause:
        root = corr.root_cause
        return f"The precision test was not run because {root['stage']} is {root['state']}: {root['reason']}"
    if cause == "timeout":
        return f"The precision test did not finish ({corr.state}: {corr.reason})"
    if cause == "crash":
        return (
            "The precision test crashed before every rank gave its "
            f"verdict: no precision failure is known ({corr.reason})"
        )
    if cause == "exit":
        return f"The precision test's nodes did not exit cleanly although every rank passed ({corr.reason})"
    return f"The precision test did not pass ({corr.state}: {corr.reason})"


def timeline_sentences(tl: Mapping[str, Any]) -> list[str]:
    """The timeline's link of the answer: coverage first when ranks are missing, how ranks were numbered when
    inferred, then what the group waits for (or, for a single rank, that there is nothing to compare)."""
    text = []
    coverage = tl.get("coverage") or {}
    if coverage.get("missing"):
        text.append(
            f"The msprof timeline covers {coverage.get('sentence') or coverage['found']}: the ranks "
            "present are analysed, and a rank without data may be the one the others wait for."
        )
    refused = coverage.get("refused") or {}
    if refused:
        named = "; ".join(f"rank {r} ({detail.removeprefix('refused: ')})" for r, detail in list(refused.items())[:3])
        text.append(
            f"Left out because their files could not be used: {named}"
            + (f" and {len(refused) - 3} more ranks" if len(refused) > 3 else "")
            + "."
        )
    note = (tl.get("rank_mapping") or {}).get("note")
    if note:
        text.append(f"Rank numbers are inferred: {note}.")
    if coverage.get("found") == 1:
        launches = next(iter(tl.get("per_rank", {}).values()), {})
        median = launches.get("median_us")
        text.append(
            f"The msprof timeline holds {tl['kernel_name']} on a single rank ({launches.get('launches', 0)} launches"
            + (f", median {median:.1f} us" if median is not None else "")
            + "): with no peers, which rank is slow and whether ranks wait for each other are not established."
        )
        return text
    strag = tl["straggler"]
    coupled = tl["coupling"]["state"] == "coupled"
    lead = (
        f"In the msprof timeline {tl['kernel_name']} behaves as a "
        f"{'coupled collective' if coupled else 'kernel whose ranks are not seen to wait for each other'}: "
    )
    if strag["evidence"] != "none":
        text.append(
            lead
            + "ranked by what each cause costs the group (a what-if saving per launch, not how often it strikes): "
            + strag["explanation"]
            + "."
        )
    else:
        text.append(lead + strag["explanation"] + ".")
    waited = tl.get("waiting") or {}
    waiting = waited.get("ranks") or []
    if coupled and waiting:
        text.append(waiting_sentence(waiting, waited.get("compared") or 0))
    left = [r for r in waited.get("causes_left_out") or [] if r not in waiting]
    if coupled and left:  # they wait as long, but are causes: said of them as causes, never among the waiting ranks
        text += causes_waiting_sentences(left, {r for c in tl.get("causes") or [] for r in (c.get("ranks") or [])})
    longest = tl.get("longest_duration") or {}
    tied = longest.get("ranks") or []
    if (
        coupled
        and longest.get("label") == "waits longest"
        and longest.get("rank") is not None
        and longest["rank"] not in waiting
    ):
        text.append(
            f"Rank {longest['rank']} has the longest durations ({100 * longest['fraction']:.0f}% of launches): a "
            "rank's duration holds its wait inside the kernel (the entry "
            "barrier, its peers' data), which does not make it slow."
        )
    elif (
        coupled and longest.get("label") == "waits longest" and len(tied) > 1
    ):  # a shared top is named in full, never given to the lowest rank
        names = ", ".join(map(str, tied[:-1])) + f" and {tied[-1]}"
        text.append(
            f"Ranks {names} share the longest durations (each {100 * longest['fraction']:.0f}% of "
            "launches): a rank's duration holds its wait inside the kernel, which does not make them slow."
        )
    for note in tl.get("notes") or []:
        text.append(note[0].upper() + note[1:] + ".")
    return text


def causes_waiting_sentences(left: Sequence[int], named: set[int]) -> list[str]:
    """Causes that wait as long as the waiting ranks: named causes, or causes listed, not named (never "above")."""
    text = []
    for group, one, many in (
        ([r for r in left if r in named], "a named cause", "named causes"),
        ([r for r in left if r not in named], "a cause listed, not named", "causes listed, not named"),
    ):
        if group:
            alone = len(group) == 1
            text.append(
                f"{name_list(group)} also {'waits' if alone else 'wait'} as long "
                f"at the barrier, and {'is ' + one if alone else 'are ' + many}."
            )
    return text


def waiting_sentence(waiting: Sequence[int], compared: int) -> str:
    """The ranks that wait longest (no cause among them): most of the group is a count, a few are named."""
    if (
        compared >= 8 and len(waiting) > compared / 2
    ):  # most of the ranks waiting alike say that the group waits, not who
        return (
            f"{len(waiting)} of the {compared} ranks that are no "
            "cause wait longest at the barrier: waiting is not blame."
        )
    return (
        f"{name_list(waiting)} {'waits' if len(waiting) == 1 else 'wait'} longest at the barrier: waiting is not blame."
    )


name_list = rank_list  # the name the sentences here have used


def drill_command(experiment: str, rank: int, invocation: Sequence[str]) -> str:
    """The command that builds one rank's drill-down, under the run's own --configfile/--config words."""
    return snakemake_command([f"results/{experiment}/timeline/ranks/rank{rank}/detail.json"], invocation)


def next_steps(
    causes: Sequence[Mapping[str, Any]],
    experiment: str,
    invocation: Sequence[str] = (),
    limit: int = 3,
    run: Run | None = None,
) -> list[dict[str, Any]]:
    """For each of the top causes: which evidence would confirm it, and the commands that collect or open it, as they
    work when copied (from the workflow's directory: ``invocation`` holds the run's --configfile/--config words; a
    stage with evidence is its file, one without it the command that collects it: report.steps)."""
    run = run or Run(experiment, tuple(invocation))
    steps = []
    pmu = evidence_step("pmu", run)
    dclk = evidence_step("debugclock", run)
    for c in list(causes)[:limit]:
        evidence, rank, ranks = c["evidence"], c.get("rank"), c.get("ranks") or []
        if evidence == "late_arrival" and rank is not None:
            confirm = (
                f"rank {rank}'s host gap (previous kernel end to its next arrival, one clock) in its drill-down: a "
                "late host shows a long gap in the same launches; then the host "
                "side (CPU binding, the launch path, other work on that host)"
            )
            commands = [drill_step(rank, run)]
        elif evidence == "late_arrival":
            confirm = (
                f"node {c.get('node')}'s hosts: every rank's host gap is long in the same launches (a node-wide host "
                "cause: its clock service, its CPU load); a node whose gaps are normal but "
                "arrives late was still busy with the previous launch (see a late-ending node)"
            )
            commands = [drill_step(ranks[0], run)] if ranks else []
        elif evidence == "own_work":
            confirm = (
                f"which role on rank {rank} is slow: the PMU's busiest role against the same role on the other ranks, "
                f"or DebugClock's slots of rank {rank} (its LocalWindowCopy slot, wait plus copy, against its peers)"
            )
            commands = [pmu, dclk, drill_step(rank, run)]
        elif evidence == "late_ending_node":
            confirm = (
                "link or node: DebugClock's send and receive phases (the senders' URMASendToken completion waits, "
                f"node {c.get('node')}'s LocalWindowCopy waits; debugclock.busiest_node names a node whose every rank "
                "sends slower, with the excess per launch) and the PMU of the senders on the other nodes: a slow "
                "link shows as senders polling for their completions, the node's own work as its own roles busy"
            )
            commands = [dclk, pmu]
        elif evidence == "in_kernel" and ranks:
            shown = rank_list(ranks).lower()
            confirm = (
                f"{'whether' if len(ranks) == 1 else 'which of'} {shown} is slow and which waits for it: the PMU's "
                "busiest role against the same role on the other ranks (the slow one's own roles are busy, a waiting "
                "one's cores poll), DebugClock's slots of these ranks (a waiting one's time is in its wait slots)"
            )
            commands = [pmu, dclk, *(drill_step(r, run) for r in ranks[:2])]
        else:
            confirm = (
                "which rank and role keep the group waiting: the PMU's busiest "
                "role by relative excess, DebugClock's slots per rank and role"
            )
            commands = [pmu, dclk]
        note = (
            "a path is evidence this run holds; a command collects what it lacks "
            "(DebugClock's asks for it whatever the PMU did: debugclock.when always)"
        )
        steps.append(
            {
                "cause": c.get("explanation") or evidence,
                "evidence": evidence,
                "rank": rank,
                "node": c.get("node"),
                "confirm": confirm,
                "commands": commands,
                "note": note,
            }
        )
    return steps


def bandwidth_line(sections: Mapping[str, Any]) -> str | None:
    """How far dispatch is from what its links allow (baseline.bandwidth): one line, and where the group is far from its
    bound with no rank or node standing out, what tells a slow
    link from slow senders and the command that collects it."""
    baseline = sections.get("baseline") or {}
    bw, per_iter = baseline.get("bandwidth"), baseline.get("per_iteration_max_us")
    if not bw or not per_iter:
        return None
    took = f"Dispatch takes {per_iter['median']:.0f} us (median per-iteration max)"
    if bw.get("efficiency") is None:
        return f"{took}; how long its links allow is not established: {bw.get('reason') or 'no bound'}."
    sets = bw["sets_bound"]
    link = bw["links"][sets]
    peak = "the simulator's capacity" if link.get("peak_kind") == "simulator" else "the configured peak"
    lo, hi = bw["efficiency_ci95"]
    line = (
        f"{took}; its links allow {bw['bound_us']:.0f} us ({sets.replace('_', '-')} bytes at {peak}, "
        f"{link['peak_gbps']:.1f} GB/s per rank; busiest: {bw['busiest']['where']}): {100 * bw['efficiency']:.0f}% "
        f"of the bound (95% CI {100 * lo:.1f}-{100 * hi:.1f}%; an average over the kernel, not a link counter)."
    )
    if bw.get("warning"):
        return line + " " + bw["warning"][0].upper() + bw["warning"][1:] + "."
    straggler = straggler_of(sections)
    stands_out = baseline.get("slowest_named", {}).get("rank") is not None or straggler.get("evidence") not in (
        None,
        "none",
        "in_kernel",
    )
    if bw.get("far") and not stands_out:
        line += (
            " The group is far from its bound and no rank or node stands out: a slow link or slow senders on every "
            "rank would look like this. DebugClock's URMASendToken send phases per node tell them apart: a slow link "
            "out of a node shows as every rank of that node longer in its send_complete slot than the other "
            "nodes' ranks (debugclock.busiest_node names the node), slow senders on every rank as no node apart"
            + (f": {bw['tell_apart_command']}" if bw.get("tell_apart_command") else "")
            + "."
        )
    return line


Said = list[tuple[str, str]]


def data_said(a: Facts) -> Said:
    said = (
        [
            (
                "data",
                "These results come from the simulated cluster: they exercise the workflow and are not measurements.",
            )
        ]
        if a.toolchain == "sim"
        else []
    )
    corr = a.statuses["correctness"]
    if corr.state == "ok":
        said.append(("data", f"The precision test passed on all {a.world} ranks."))
    elif corr.state != "disabled":
        said.append(("data", f"{precision_sentence(corr)}, so no performance evidence was collected."))
    return said


def latency_said(a: Facts) -> Said:
    return [("latency", baseline_sentence(a.sections["baseline"], a.world))] if a.section("baseline") else []


def links_said(a: Facts) -> Said:
    line = bandwidth_line(a.sections) if a.section("baseline") else None
    return [("links", line)] if line else []


def timeline_said(a: Facts) -> Said:
    return (
        [("timeline", sentence) for sentence in timeline_sentences(a.sections["timeline"])]
        if a.section("timeline")
        else []
    )


def chain_role(a: Facts) -> str | None:
    """The role the chain follows: the PMU's busiest, else DebugClock's when the PMU is not ok."""
    pmu = a.section("pmu")
    if pmu:
        return (pmu.get("busiest") or {}).get("role")
    return ((a.section("debugclock") or {}).get("busiest") or {}).get("role")


def role_said(a: Facts) -> Said:
    """Which role on which rank is busiest against its peers (PMU), with DebugClock whenever it ran: one item."""
    said: Said = []
    pmu, dc, straggler = a.section("pmu"), a.section("debugclock"), straggler_of(a.sections)
    if pmu and pmu.get("busiest"):
        said.append(("role", pmu_busiest_sentence(pmu["busiest"], straggler)))
    elif pmu:
        said.append(
            (
                "role",
                "Per core (msopprof PMU), no role on any rank is busier than the same role on the other ranks beyond "
                "the role's spread across ranks (pmu.busiest_alpha, "
                "pmu.busiest_min_excess): the busiest role is not established by the PMU.",
            )
        )
    if dc:  # used whenever it ran: beside the PMU, or as the role link when the PMU is not ok
        from dispatchprof.report.debugclock import (
            also_sentence,
            fallback_sentence,
            local_window_copy_sentence,
            node_sentence,
        )

        if pmu:
            text = also_sentence(dc)
        else:
            text = fallback_sentence(dc, a.statuses["pmu"].state) + f" (PMU: {a.statuses['pmu'].reason})"
            if dc.get("busiest"):
                text += cost_beside(dc["busiest"]["rank"], dc["busiest"]["excess_us"], straggler)
        said.append(
            ("role", text + node_sentence(dc, straggler) + local_window_copy_sentence(dc, own_work_rank(a.sections)))
        )
    elif not pmu:
        pmu_status = a.statuses["pmu"]
        said.append(
            (
                "role",
                f"Which role is busiest is not established: the PMU stage is {pmu_status.state} ({pmu_status.reason}).",
            )
        )
    return said


def icache_said(a: Facts) -> Said:
    """The role's I-cache misses against the other roles' (after every word on which role)."""
    pmu, role = a.section("pmu"), chain_role(a)
    if not pmu:
        return []
    rates = {
        r: v["aiv_icache_miss_rate_median"]
        for r, v in pmu["roles"].items()
        if r != "unassigned" and v["aiv_icache_miss_rate_median"] is not None
    }
    if role and role in rates:
        order = sorted(rates, key=lambda r: -rates[r])
        listing = ", ".join(f"{r} {100 * rates[r]:.1f}%" for r in order)
        return [
            (
                "icache",
                f"The {role} role's I-cache miss rate is {100 * rates[role]:.1f}% (median), "
                f"rank {order.index(role) + 1} of {len(order)} roles ({listing}); "
                "a ranking, not a verdict that the I-cache is the bottleneck.",
            )
        ]
    if rates:
        worst = max(rates, key=rates.get)  # type: ignore[arg-type]
        return [
            (
                "icache",
                f"Of the roles, the {worst} role has the highest I-cache miss rate (median {100 * rates[worst]:.1f}%); "
                "this ranks roles, it is not a verdict that the I-cache is the bottleneck.",
            )
        ]
    return [("icache", "I-cache miss rates are not provided by this tool version: that link is not established.")]


def probe_said(a: Facts) -> Said:
    probe = a.section("probe")
    if not probe or not probe.get("cachemiss"):
        return []
    cm = probe["cachemiss"]
    top = f", most at {cm['top_pcs'][0]['pc']} ({cm['top_pcs'][0]['count']})" if cm["top_pcs"] else ""
    return [
        (
            "probe",
            f"A local probe under msopprof simulator ({probe['label']}) counted {cm['total']} I-cache misses{top}: "
            "a local hypothesis about that piece of code, not evidence about the multi-rank kernel.",
        )
    ]


def simt_said(a: Facts) -> Said:
    pcs, role = a.section("pcsampling"), chain_role(a)
    if not (pcs and pcs.get("stalls")):
        if not role:
            return []
        st = a.statuses["pcsampling"]
        return [
            (
                "simt",
                f"The SIMT stall reasons of the {role} role are not established: "
                f"the pcsampling stage is {st.state} ({st.reason}).",
            )
        ]
    said: Said = []
    per_role = pcs.get("per_role") or {}
    if role and role in per_role:
        top = ", ".join(f"{state} ({100 * share:.0f}%)" for state, share in list(per_role[role]["stalls"].items())[:2])
        said.append(
            (
                "simt",
                f"In the SIMT functions the {role} role runs "
                f"({', '.join(per_role[role]['functions'])}), the main reasons not to issue are {top}.",
            )
        )
    elif role:
        said.append(
            ("simt", f"The {role} role runs no SIMT code (docs/formats.md §3): PC sampling cannot speak to it.")
        )
    ni = pcs["stalls"]["not_issue"]
    worst = max(ni, key=ni.get)
    hot = pcs["hot_lines"]
    where = (
        f", hottest at {hot[0]['file']}:{hot[0]['line']}"
        + (f" in {hot[0]['function']}" if hot[0].get("function") else "")
        if hot
        else ""
    )
    said.append(
        (
            "simt",
            "Over all SIMT code, the most common reason not to issue is "
            f"{worst} ({100 * ni[worst]:.0f}% of not-issued samples{where}).",
        )
    )
    return said


def ab_said(a: Facts) -> Said:
    if a.comparisons:
        return [
            (
                "ab",
                "Whether a change helped: "
                + "; ".join(f"{c['a']} vs {c['b']}: {c.get('state')}: {c.get('reason')}" for c in a.comparisons)
                + ".",
            )
        ]
    return [
        (
            "ab",
            "Whether a change helped is not established here: no A/B "
            "comparison is configured (experiments and compare in the config).",
        )
    ]


def evidence_said(a: Facts) -> Said:
    """Which stages hold evidence, and why the others hold none."""
    core = ("baseline", "timeline", "pmu", "pcsampling")
    extra = ["debugclock"] if "debugclock" in a.statuses and a.statuses["debugclock"].ok else []
    measured = [s for s in core if a.statuses[s].ok] + extra
    missing = [s for s in core if not a.statuses[s].ok]
    said: Said = [("evidence", f"Evidence available: {', '.join(measured)}.")] if measured else []
    if missing:
        reasons = "; ".join(f"{s} is {a.statuses[s].state} ({a.statuses[s].reason})" for s in missing)
        said.append(
            ("evidence", f"No conclusion about what is slow can be drawn from stages without evidence: {reasons}.")
        )
    return said


# The chain of evidence: what the group waits for -> which role on which rank is busiest against its peers -> that
# role's I-cache misses against the other roles -> SIMT stalls -> A/B. Each link, or "not established" and why.
EVIDENCE_ITEMS = (
    data_said,
    latency_said,
    links_said,
    timeline_said,
    role_said,
    icache_said,
    probe_said,
    simt_said,
    ab_said,
    evidence_said,
)


def evidence_sentences(
    statuses: Mapping[str, Status],
    toolchain: str,
    world: int,
    sections: Mapping[str, Any] | None = None,
    comparisons: Sequence[Mapping[str, Any]] = (),
) -> list[tuple[str, str]]:
    """Every question of the answer with every qualification of its numbers, sentence by sentence with its question
    (EVIDENCE_TOPICS): what is known, and what evidence is missing (never more than that)."""
    asked = Facts(statuses, toolchain, world, sections or {}, comparisons)  # no run: the evidence prints no step
    return [pair for item in EVIDENCE_ITEMS for pair in item(asked)]


EVIDENCE_TOPICS = {
    "data": "What these numbers are",
    "latency": "How long a dispatch takes",
    "links": "How far from the links' limit",
    "timeline": "What the group waits for (msprof timeline)",
    "role": "Which role, on which rank (PMU, DebugClock)",
    "icache": "I-cache",
    "probe": "Local probe",
    "simt": "SIMT stalls (PC sampling)",
    "ab": "Did a change help",
    "evidence": "Evidence",
}


def evidence_paragraph(*args: Any, **kwargs: Any) -> str:
    """The answer as one paragraph (the sentences in order, without their questions)."""
    return " ".join(sentence for _, sentence in evidence_sentences(*args, **kwargs))


def evidence_parts(sentences: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The answer as the report shows it: one item per question, its sentences in order (``{topic, title, text}``)."""
    parts: list[dict[str, str]] = []
    for topic, sentence in sentences:
        if parts and parts[-1]["topic"] == topic:
            parts[-1]["text"] += " " + sentence
        else:
            parts.append({"topic": topic, "title": EVIDENCE_TOPICS[topic], "text": sentence})
    return parts
