"""The cost account in words: each named cause's sentence, and the listed ones' clauses with why they are not named."""

from __future__ import annotations

from typing import Any, Mapping


EVERY_LAUNCH_ALIKE = (
    "a slowdown in every launch that moves every rank's end alike (a slow link between nodes, a role slow on every rank) does not stand "
    "out here: DebugClock's busiest_node (debugclock.when: always) or an A/B comparison can show it"
)


EXCESS_DEFINITION = (
    "per launch, the last arrival's lead over the first at the barrier (launch period; carried ends included) or the last end's lead over "
    "the first (timed kernel scope), plus the kernel time above the typical launch's; averaged over the analysed launches"
)


EXCESS_NOT_COUPLED = (
    "ranks that do not wait for each other: per launch, the longest duration's lead over the median rank's (each duration is own work, "
    "on the rank's own clock), in both scopes; averaged over the launches every rank has"
)


def cost_text(cause: Mapping[str, Any]) -> str:
    lo, hi = cause["cost_ci_us"]
    if cause.get("cost_bound_us"):  # the saving is not established: the bound is the cost, the estimate is said as one
        return (
            f"costs at most {cause['cost_bound_us'][1]:.1f} us per launch (its lateness, where it struck: a delay gives back no more than itself); "
            f"the saving estimated on clocks fitted to the target's ends, {cause['cost_us_per_launch']:.1f} us (95% CI {lo:.1f}-{hi:.1f}), is not "
            "established: a node that ends later than the others in every launch by the kernel's own structure looks on time on those clocks "
            f"(enable baseline.synchronize_start for a number); {cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope"
        )
    if cause.get("not_coupled"):  # nobody waits: one saving, in the launch's longest duration
        text = f"costs the launch's longest duration {cause['cost_us_per_launch']:.1f} us per launch (95% CI {lo:.1f}-{hi:.1f}"
        return text + (
            f"; {100 * cause['cost_share']:.0f}% of the group's excess)" if cause.get("cost_share") is not None else ")"
        )
    if cause.get("named_on") == "timed":  # named on its timed cost: said in that scope first (costed)
        lo, hi = cause["cost_timed_ci_us"]
        text = f"costs {cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope per launch (95% CI {lo:.1f}-{hi:.1f}"
        if cause.get("cost_timed_share") is not None:
            text += f"; {100 * cause['cost_timed_share']:.0f}% of the group's excess there"
        return text + f"), {cause['cost_us_per_launch']:.1f} us per launch of the launch period"
    text = f"costs {cause['cost_us_per_launch']:.1f} us per launch (95% CI {lo:.1f}-{hi:.1f}"
    if cause.get("cost_share") is not None:
        text += f"; {100 * cause['cost_share']:.0f}% of the group's excess"
    return text + f"), {cause['cost_timed_us_per_launch']:.1f} us of the timed kernel scope"


def describe(cause: Mapping[str, Any]) -> str:
    share = 100 * cause["fraction"]
    # "100%" only for every launch: 199 of 200 (a first launch without a host gap) reads 99.5%
    pct = (
        f"{share:.1f}% of launches"
        if f"{share:.0f}" in ("0", "100") and share not in (0.0, 100.0)
        else f"{share:.0f}% of launches"
    )
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
                f" (where it arrives last, the next arrival is a median {cause['ahead_us_median']:.0f} us before it: removing its lateness brings "
                "the group's last arrival back no further)"
            )
        return f"{who} arrives {cause['late_us_median']:.0f} us late {cause.get('where', '')} by its host (its host gap) in {pct}: it {cost}{ahead}"
    if cause["evidence"] == "own_work" and cause.get("not_coupled"):
        return (
            f"rank {cause['rank']}'s kernel takes longest by itself (median {cause['lead_us_median']:.1f} us longer than the next-longest rank) in "
            f"{pct}: the ranks do not wait for each other here, so its duration is its own work; it {cost}"
        )
    if (
        cause["evidence"] == "own_work"
        and cause.get("spike_launches")
        and cause["spike_launches"] >= round(cause["fraction"] * cause["launches"])
    ):
        n = cause["spike_launches"]
        return (
            f"rank {cause['rank']}'s own work spiked in {n} launch{'es' if n > 1 else ''} of {cause['launches']} (median {cause['lead_us_median']:.0f} us above "
            f"its typical time in the kernel, the group's kernel as much above its typical launch): not a wait; it {cost}"
        )
    if cause["evidence"] == "own_work":
        return (
            f"rank {cause['rank']} ends last by itself (median {cause['lead_us_median']:.1f} us after the next rank, its host on time) in {pct}: "
            f"its own work, not a wait; it {cost}"
        )
    if cause["evidence"] == "late_ending_node":
        return (
            f"node {cause['node']}'s ranks ({cause['ranks'][0]}-{cause['ranks'][-1]}) end late together (median {cause['lead_us_median']:.1f} us after the "
            f"other nodes' last) in {pct}: the link into or out of it, or its own work: not established (DebugClock's send/receive phases and the PMU of the "
            f"senders on the other nodes can tell); it {cost}"
        )
    if cause.get("late_ending_ranks"):
        return late_ending_text(cause, pct, cost)
    return (
        f"in {pct} the whole group's kernel takes longer ({cause['above_us_median']:.0f} us above the typical "
        f"{cause['kernel_us_median']:.0f} us) with nobody late by itself: every rank waits inside the kernel for a peer's data; "
        f"PMU or DebugClock must name the rank and role; it {cost}"
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
            f"rank {core} is among the late-ending ranks of most launches{others} (median lead {cause['lead_us_median']:.1f} us: the set's over "
            f"the others' last where they end after it, its own over the next end where it ends last; in {pct}): late-ending ranks, with no claim about why (rank {core} may keep the others waiting "
            f"for its data, or wait with them; PMU or DebugClock must name the rank and role); it {cost}"
        )
    if cause.get("followers_of") is not None:
        late, core = cause["late_ending_ranks"], cause["followers_of"]
        tied = ", ".join(str(r) for r in late if r != core)
        return (
            f"rank {core} ends late in most launches, and rank{'s' if len(late) > 2 else ''} {tied} end{'' if len(late) > 2 else 's'} with it launch after "
            f"launch, a constant lag apart: they end as one, last in most of them (median {cause['lead_us_median']:.1f} us after the others' last; in "
            f"{pct}): late-ending ranks, with no claim about why (which of them keeps the other waiting, the timeline cannot tell; PMU or DebugClock "
            f"must name the rank and role); it {cost}"
        )
    late = cause["late_ending_ranks"]
    if cause.get("ending_with"):
        tied = cause["ending_with"]
        core = ", ".join(str(r) for r in late if r not in tied)
        return (
            f"ranks {core} are among the late-ending ranks of most launches, and rank{'s' if len(tied) > 1 else ''} "
            f"{', '.join(map(str, tied))} end{'' if len(tied) > 1 else 's'} with them launch after launch, a constant lag apart: "
            f"together {cause['lead_us_median']:.1f} us after the others' last (median; in {pct}): late-ending ranks, with no claim about why "
            "(one of them may keep the others waiting for its data; PMU or DebugClock must name the rank and role); "
            f"it {cost}"
        )
    return (
        f"ranks {', '.join(map(str, late))}{' are among the late-ending ranks of most launches and' if cause.get('persistent') else ''} end late together (median "
        f"{cause['lead_us_median']:.1f} us after the others' last) in {pct}: "
        "late-ending ranks, with no claim about why (one of them may keep the others waiting for its data; PMU or DebugClock must name "
        f"the rank and role); it {cost}"
    )


def listed_clause(cause: Mapping[str, Any]) -> str:
    """A listed cause in one clause: who, the evidence and its known lead (why it is not named: listed_text)."""
    members = cause["ranks"] or cause.get("late_ending_ranks") or []
    who = f"rank {cause['rank']}" if cause["rank"] is not None else f"ranks {', '.join(map(str, members))}"
    if cause.get(
        "late_ending_ranks"
    ):  # ends on corrected clocks: the lead is established, the culprit among them is not
        return f"{who} end late together ({cause['lead_us_median']:.1f} us after the others' last, in {100 * cause['fraction']:.0f}% of launches)"
    return f"{who} {cause['evidence']} ({cause['lead_us_median']:.1f} us lead over what the clocks can compare)"


def listed_text(causes: list[Mapping[str, Any]]) -> str:
    """Listed causes, each in its clause, and why they are not named: a reason that several share is said once."""
    reasons: dict[str, list[str]] = {}
    for cause in causes:
        reasons.setdefault(cause["not_named"], []).append(listed_clause(cause))
    return "; ".join(f"{' and '.join(clauses)}: {reason}" for reason, clauses in reasons.items())
