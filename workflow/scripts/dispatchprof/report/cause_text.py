"""The cost account in words: the one place the English of the timeline's causes is built (issue 45).

analysis.waits returns facts (numbers, ranks, kinds, scopes); in_words puts them in words where the stats are written
(stages/timeline.timeline_stats), so the timeline's stats, summary.json and the report read one text:
- each named cause's ``explanation`` (describe, with its cost: cost_text) and ``where`` it arrives late;
- why a listed cause is not named (``not_named``) and why a late arrival's cost is uncertain (``cost_clocks``): the
  analysis gives their kind, said here under the same key;
- the straggler's ``explanation``: the named causes' sentences, or why nobody stands out with the listed causes.
"""

from __future__ import annotations

from typing import Any, Mapping

from dispatchprof.formats.ranklog import name_ranks

EVERY_LAUNCH_ALIKE = (
    "a slowdown in every launch that moves every rank's end alike (a slow link between nodes, a role slow on every "
    "rank) does not stand out here: DebugClock's busiest_node "
    "(debugclock.when: always) or an A/B comparison can show it"
)


EXPLAINED = 5  # named causes spelled out in the straggler's explanation; the rest are in the causes table


# where a late arrival is late (the analysis's kind: a barrier kernel ran, or only the kernel's entry barrier)
WHERE = {
    "barrier_kernel": "at the barrier kernel",
    "entry_barrier": "at the kernel's entry barrier",
}


COST_CLOCKS = {  # why a late arrival's cost is uncertain (the analysis's kind)
    "target_ends": (
        "its cost compares arrivals across nodes on clocks fitted to the target's own ends (no barrier kernel): a node "
        "that ends later in every launch looks on time there, so the cost is uncertain by that skew; enable "
        "baseline.synchronize_start"
    ),
}


COST_NOT_ESTABLISHED = {  # why a named cause has no cost (the analysis's kind)
    "peers_hidden": (
        "not established by the timeline: the other ranks' own work is hidden behind their wait for its data, so "
        "how much earlier they would end without its slowdown does not show; the PMU's role excess or DebugClock's "
        "slot excess on that rank gives a figure"
    ),
}


NOT_NAMED = {  # why a listed cause is not named (the analysis's kind; "chance": not_apart_text)
    "no_pure_barrier": (
        "without a pure barrier, cross-node comparisons of ends are not established (enable baseline.synchronize_start)"
    ),
    "kernel_structure": (
        "the timeline cannot tell a slow rank among late-ending ranks from the kernel's own "
        "structure (a sender serves its receivers in turn): PMU or DebugClock can"
    ),
    "ranks_missing": (
        "ranks without data (see the coverage) may end or arrive with it or after it: who ends last among all ranks, "
        "and by how much, is not known, so the timeline names no cause on partial coverage (the cost is over the "
        "ranks with data)"
    ),
}


def in_words(waited: dict[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """``waited`` (analysis.waits.analyse's result) with its causes and straggler in words, changed in place and
    returned: each cause's kinds said under their keys, each named cause's explanation after its facts, and the
    straggler's explanation after its listed causes (``unnamed``), where the stats JSON keeps them. ``settings``:
    timeline.waits (min_cost_us and alpha are said in the text). Once per result: a kind said is no longer a kind."""
    strag = waited["straggler"]
    named, unnamed = strag["causes"], strag["unnamed"]
    for cause in named + unnamed:
        say_kinds(cause, float(settings["alpha"]))
    for cause in named:
        cause["explanation"] = describe(cause)
    if strag.get("cost_not_established"):  # the straggler's copy of its top cause's kind (awaited.answer_of)
        strag["cost_not_established"] = COST_NOT_ESTABLISHED[strag["cost_not_established"]]
    text = straggler_text(named, unnamed, float(settings["min_cost_us"]))
    at = list(strag).index("unnamed") + 1
    items = list(strag.items())
    waited["straggler"] = dict(items[:at] + [("explanation", text)] + items[at:])
    return waited


def say_kinds(cause: dict[str, Any], alpha: float) -> None:
    """The cause's kinds (where, cost_clocks, not_named) in
    words, under the same keys (their place in the JSON kept)."""
    if "where" in cause:
        cause["where"] = WHERE[cause["where"]]
    if "cost_clocks" in cause:
        cause["cost_clocks"] = COST_CLOCKS[cause["cost_clocks"]]
    if "cost_not_established" in cause:
        cause["cost_not_established"] = COST_NOT_ESTABLISHED[cause["cost_not_established"]]
    if "not_named" in cause:
        kind = cause["not_named"]
        cause["not_named"] = not_apart_text(cause, alpha) if kind == "chance" else NOT_NAMED[kind]


def not_apart_text(cause: Mapping[str, Any], alpha: float) -> str:
    """Why a late set of most launches is listed: the chance test (analysis.waits.stands_out) did not set it apart."""
    test, n = cause["stands_out"], cause["launches"]
    return (
        f"late in {test['fraction_late']:.0%} of {n} launches, the most often late of the other ranks in "
        f"{test['others_fraction_late']:.0%}: not apart beyond chance (z = {test['z']:.1f}, timeline.waits.alpha "
        f"{alpha:g}). The kernel's own structure makes some ranks end late often; more launches "
        "(timeline.iterations) can tell"
    )


def straggler_text(named: list[Mapping[str, Any]], unnamed: list[Mapping[str, Any]], min_cost: float) -> str:
    """The straggler's explanation: the named causes' sentences, or why nobody stands out with the listed causes and
    what the timeline cannot see."""
    if named:
        text = "; ".join(c["explanation"] for c in named[:EXPLAINED])
        if len(named) > EXPLAINED:
            text += f"; and {len(named) - EXPLAINED} smaller named causes (timeline.causes)"
        return text
    listed = [c for c in unnamed if c.get("not_named")]
    missing = next((c["missing_ranks"] for c in listed if c.get("missing_ranks")), None)
    text = (
        f"no cause is named: {name_ranks(missing)} {'has' if len(missing) == 1 else 'have'} no data, so who ends or "
        "arrives last among all ranks is not known"
        if missing
        else "no rank or node stands out: no cause costs the group more "
        f"than {min_cost:g} us per launch (timeline.waits.min_cost_us)"
    )
    if listed:  # sentences, not one chain of semicolons: the reader takes each part apart
        text += ". Listed, not named: " + listed_text(listed[:3])
    return text + f". {EVERY_LAUNCH_ALIKE[0].upper()}{EVERY_LAUNCH_ALIKE[1:]}"


def cost_text(cause: Mapping[str, Any]) -> str:
    """What a named cause costs, in the scope it was named on (or as a bound where the saving is not established)."""
    lo, hi = cause["cost_ci_us"]
    if cause.get("cost_bound_us"):  # the saving is not established: the bound is the cost, the estimate is said as one
        return (
            f"costs at most {cause['cost_bound_us'][1]:.1f} us per launch (its lateness, where it struck: a delay "
            "gives back no more than itself); the saving estimated on clocks fitted to the target's ends, "
            f"{cause['cost_us_per_launch']:.1f} us (95% CI {lo:.1f}-{hi:.1f}), is not established: a node that ends "
            "later than the others in every launch by the kernel's own structure looks on time on those clocks "
            "(enable baseline.synchronize_start for a number); "
            f"{cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope"
        )
    if cause.get("not_coupled"):  # nobody waits: one saving, in the launch's longest duration
        text = (
            f"costs the launch's longest duration {cause['cost_us_per_launch']:.1f} "
            f"us per launch (95% CI {lo:.1f}-{hi:.1f}"
        )
        return text + (
            f"; {100 * cause['cost_share']:.0f}% of the group's excess)" if cause.get("cost_share") is not None else ")"
        )
    if cause.get("named_on") == "timed":  # named on its timed cost: said in that scope first (costed)
        lo, hi = cause["cost_timed_ci_us"]
        text = (
            f"costs {cause['cost_timed_us_per_launch']:.1f} us of the "
            f"timed kernel scope per launch (95% CI {lo:.1f}-{hi:.1f}"
        )
        if cause.get("cost_timed_share") is not None:
            text += f"; {100 * cause['cost_timed_share']:.0f}% of the group's excess there"
        return text + f"), {cause['cost_us_per_launch']:.1f} us per launch of the launch period"
    text = f"costs {cause['cost_us_per_launch']:.1f} us per launch (95% CI {lo:.1f}-{hi:.1f}"
    if cause.get("cost_share") is not None:
        text += f"; {100 * cause['cost_share']:.0f}% of the group's excess"
    return text + f"), {cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope"


def describe(cause: Mapping[str, Any]) -> str:
    """A named cause's sentence: who, the evidence, how often, and what it costs (cost_text)."""
    share = 100 * cause["fraction"]
    # "100%" only for every launch: 199 of 200 (a first launch without a host gap) reads 99.5%
    pct = (
        f"{share:.1f}% of launches"
        if f"{share:.0f}" in ("0", "100") and share not in (0.0, 100.0)
        else f"{share:.0f}% of launches"
    )
    if cause.get("paces_end"):
        return paces_end_text(cause)
    cost = cost_text(cause)
    if cause["evidence"] == "late_arrival":
        who = (
            f"node {cause['node']} (ranks {cause['ranks'][0]}-{cause['ranks'][-1]})"
            if cause["node"] is not None
            else f"rank {cause['rank']}"
        )
        ahead = ""
        if cause.get("ahead_us_median") is not None and cause["ahead_us_median"] < 0.9 * cause["late_us_median"]:
            ahead = (
                f" (where it arrives last, the next arrival is a median {cause['ahead_us_median']:.0f} "
                "us before it: removing its lateness brings the group's last arrival back no further)"
            )
        return (
            f"{who} arrives {cause['late_us_median']:.0f} us late {cause.get('where', '')} "
            f"by its host (its host gap) in {pct}: it {cost}{ahead}"
        )
    if cause["evidence"] == "own_work" and cause.get("not_coupled"):
        return (
            f"rank {cause['rank']}'s kernel takes longest by itself (median {cause['lead_us_median']:.1f} us longer "
            f"than the next-longest rank) in {pct}: the ranks do not wait "
            f"for each other here, so its duration is its own work; it {cost}"
        )
    if (
        cause["evidence"] == "own_work"
        and cause.get("spike_launches")
        and cause["spike_launches"] >= round(cause["fraction"] * cause["launches"])
    ):
        n = cause["spike_launches"]
        return (
            f"rank {cause['rank']}'s own work spiked in {n} launch{'es' if n > 1 else ''} of {cause['launches']} "
            f"(median {cause['lead_us_median']:.0f} us above its typical time in the kernel, "
            f"the group's kernel as much above its typical launch): not a wait; it {cost}"
        )
    if cause["evidence"] == "own_work":
        return (
            f"rank {cause['rank']} ends last by itself (median {cause['lead_us_median']:.1f} us "
            f"after the next rank, its host on time) in {pct}: its own work, not a wait; it {cost}"
        )
    if cause["evidence"] == "late_ending_node":
        return (
            f"node {cause['node']}'s ranks ({cause['ranks'][0]}-{cause['ranks'][-1]}) end late together (median "
            f"{cause['lead_us_median']:.1f} us after the other nodes' last) in {pct}: the link into or out of it, or "
            "its own work: not established (DebugClock's send/receive phases "
            f"and the PMU of the senders on the other nodes can tell); it {cost}"
        )
    if cause.get("late_ending_ranks"):
        return late_ending_text(cause, pct, cost)
    return (
        f"in {pct} the whole group's kernel takes longer ({cause['above_us_median']:.0f} us above the typical "
        f"{cause['kernel_us_median']:.0f} us), which no rank's own work explains: every rank waits inside "
        f"the kernel for a peer's data; PMU or DebugClock must name the rank and role; it {cost}"
    )


def paces_end_text(cause: Mapping[str, Any]) -> str:
    """A rank that paces the group's end (analysis.waits.paces_end) in words: how often it ends first against chance,
    what that means, and that its cost is not established."""
    test = cause["paces_end"]
    n = round(1 / test["chance"])
    p = f"p = {test['p_value']:.1g}" if test["p_value"] > 0 else "p < 1e-300"  # below a double: the sum underflows
    return (
        f"rank {cause['rank']} paces the group's end: it ends first and the other ranks end just after it (the last a "
        f"median {test['lag_us_median']:.1f} us after) in {100 * test['fraction_first']:.0f}% of launches (chance "
        f"1/{n}, {100 * test['chance']:.0f}%; binomial {p}): they wait for its data, so its own "
        "work is longer than theirs in those launches; the timeline cannot see by how much (their own work is hidden "
        "behind the wait): its cost is not established; the PMU's role excess or DebugClock's slot excess on rank "
        f"{cause['rank']} gives a figure"
    )


def pacer_text(cause: Mapping[str, Any], pct: str, cost: str) -> str:
    """Late-ending ranks that are whole nodes plus a few ranks whose node mates end early: those few likely pace."""
    pacer, waiting = cause["likely_pacer"], cause["waiting_nodes"]
    several = len(pacer) > 1
    return (
        f"ranks {', '.join(map(str, cause['late_ending_ranks']))} are among the late-ending ranks of most launches: "
        f"every rank of node{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting))} ends late with "
        f"rank{'s' if several else ''} {', '.join(map(str, pacer))}, whose node mates end early (together "
        f"{cause['lead_us_median']:.1f} us after the others' last, median; in {pct}): the whole "
        f"node{'s likely wait' if len(waiting) > 1 else ' likely waits'} for {'their' if several else 'its'} data, so "
        f"rank{'s' if several else ''} {', '.join(map(str, pacer))} {'are' if several else 'is'} the likely pacer "
        "(slow itself, or the link that carries its data: PMU or DebugClock must name the role or the link); "
        f"it {cost}"
    )


def late_ending_text(cause: Mapping[str, Any], pct: str, cost: str) -> str:
    """Late-ending ranks in words: around their core, as one with the rank they follow, or as a set; never why."""
    if cause.get("with_ranks") is not None:
        (core,) = cause["late_ending_ranks"]
        shown = cause["with_ranks"][:6]
        others = (
            f", with ranks {', '.join(map(str, shown))}{' and others' if len(cause['with_ranks']) > 6 else ''}"
            if shown
            else ""
        )
        return (
            f"rank {core} is among the late-ending ranks of most launches{others} (median lead "
            f"{cause['lead_us_median']:.1f} us: the set's over the others' last where they end after it, its own over "
            f"the next end where it ends last; in {pct}): late-ending ranks, with no claim about why (rank {core} may "
            "keep the others waiting for its data, or wait with them; "
            f"PMU or DebugClock must name the rank and role); it {cost}"
        )
    if cause.get("followers_of") is not None:
        late, core = cause["late_ending_ranks"], cause["followers_of"]
        tied = ", ".join(str(r) for r in late if r != core)
        return (
            f"rank {core} ends late in most launches, and rank{'s' if len(late) > 2 else ''} {tied} "
            f"end{'' if len(late) > 2 else 's'} with it launch after launch, a constant lag apart: they end as one, "
            f"last in most of them (median {cause['lead_us_median']:.1f} us after the others' last; in {pct}): "
            "late-ending ranks, with no claim about why (which of them keeps the other waiting, "
            f"the timeline cannot tell; PMU or DebugClock must name the rank and role); it {cost}"
        )
    late = cause["late_ending_ranks"]
    if cause.get("likely_pacer"):
        return pacer_text(cause, pct, cost)
    if cause.get("ending_with"):
        tied = cause["ending_with"]
        core = ", ".join(str(r) for r in late if r not in tied)
        return (
            f"ranks {core} are among the late-ending ranks of most launches, and rank{'s' if len(tied) > 1 else ''} "
            f"{', '.join(map(str, tied))} end{'' if len(tied) > 1 else 's'} with them launch after launch, a constant "
            f"lag apart: together {cause['lead_us_median']:.1f} us after the others' last (median; in {pct}): "
            "late-ending ranks, with no claim about why (one of them may keep the others "
            f"waiting for its data; PMU or DebugClock must name the rank and role); it {cost}"
        )
    return (
        "ranks "
        f"{', '.join(map(str, late))}{' are among the late-ending ranks of most launches and' if cause.get('persistent') else ''} "
        f"end late together (median {cause['lead_us_median']:.1f} us after the others' last) in {pct}: late-ending "
        "ranks, with no claim about why (one of them may keep the others waiting "
        f"for its data; PMU or DebugClock must name the rank and role); it {cost}"
    )


def listed_clause(cause: Mapping[str, Any]) -> str:
    """A listed cause in one clause: who, the evidence and its known lead (why it is not named: listed_text)."""
    members = cause["ranks"] or cause.get("late_ending_ranks") or []
    who = f"rank {cause['rank']}" if cause["rank"] is not None else f"ranks {', '.join(map(str, members))}"
    if cause.get(
        "late_ending_ranks"
    ):  # ends on corrected clocks: the lead is established, the culprit among them is not
        return (
            f"{who} end late together ({cause['lead_us_median']:.1f} us after "
            f"the others' last, in {100 * cause['fraction']:.0f}% of launches)"
        )
    if cause.get("missing_ranks"):  # any kind: what it costs the ranks present
        return f"{who} {cause['evidence']} ({cause['cost_us_per_launch']:.1f} us per launch over the ranks with data)"
    return f"{who} {cause['evidence']} ({cause['lead_us_median']:.1f} us lead over what the clocks can compare)"


def listed_text(causes: list[Mapping[str, Any]]) -> str:
    """Listed causes, each in its clause, and why they are not named: a reason that several share is said once."""
    reasons: dict[str, list[str]] = {}
    for cause in causes:
        reasons.setdefault(cause["not_named"], []).append(listed_clause(cause))
    return "; ".join(f"{' and '.join(clauses)}: {reason}" for reason, clauses in reasons.items())
