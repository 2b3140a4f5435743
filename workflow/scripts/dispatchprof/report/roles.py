"""The role link of the report's answer: which role on which rank is busiest against its peers (PMU, DebugClock),
with the role's excess in µs per launch beside the rank's cost to the group from the timeline."""

from __future__ import annotations

from typing import Any, Mapping

from dispatchprof.report.words import rank_list


def straggler_of(sections: Mapping[str, Any]) -> Mapping[str, Any]:
    """The timeline's top cause (summary.json timeline.straggler), or {} when the timeline is not in the answer."""
    return (sections.get("timeline") or {}).get("straggler") or {}


def own_work_rank(sections: Mapping[str, Any]) -> int | None:
    """The rank the timeline names slow by itself (evidence own_work): the top cause, else the first ranked cause."""
    timeline = sections.get("timeline") or {}
    causes = [straggler_of(sections), *(timeline.get("causes") or [])]
    return next((int(c["rank"]) for c in causes if c.get("evidence") == "own_work" and c.get("rank") is not None), None)


def cost_beside(
    rank: int,
    role_us: float,
    straggler: Mapping[str, Any],
    low_us: float | None = None,
    label: str = "The role's excess",
) -> str:
    """The role's excess per launch (a range from ``low_us`` when given: pipes overlap) beside the rank's cost in the
    timeline (cost_us_per_launch, when given)."""
    named, cost = straggler.get("rank"), straggler.get("cost_us_per_launch")
    role_us_text = f"{low_us:.1f} to {role_us:.1f}" if low_us is not None and low_us < role_us else f"{role_us:.1f}"
    inner = label[0].lower() + label[1:]  # the label inside a sentence
    bound = straggler.get(
        "cost_bound_us"
    )  # without a pure barrier a late arrival's cost is a bound (analysis/waits/arrivals.py)
    cost_text = f"at most {bound[1]:.1f}" if bound else f"{cost:.1f}" if cost is not None else ""
    extra = f", {cost_text} us per launch" if cost is not None else ""  # the timeline's cost, inside a clause
    if named == rank and cost is not None:
        return (
            f" {label}, {role_us_text} us per launch, stands beside rank {rank}'s cost to the group in the timeline, "
            f"{cost_text} us per launch ({straggler.get('evidence')}): a replayed "
            "or instrumented launch, so the two are compared, not subtracted."
        )
    if named == rank:
        return (
            f" The timeline names rank {rank} too ({straggler.get('evidence')}); "
            f"{inner} is {role_us_text} us per launch."
        )
    if named is not None:
        return (
            f" The timeline's top cause is another rank, {named} "
            f"({straggler.get('evidence')}{extra}); {inner} here is {role_us_text} us per launch."
        )
    if straggler.get("evidence") == "late_ending_node" and straggler.get("node") is not None:
        where = (
            "one of its ranks: its own work is a candidate"
            if rank in (straggler.get("ranks") or [])
            else "on another node: a sender into it, so the link or that sender, not the late node's own work"
        )
        return (
            f" The timeline's top cause is node {straggler['node']}'s late end{extra} (the link into it, or "
            f"its own work: not established); rank {rank} is {where}; {inner} is {role_us_text} us per launch."
        )
    if straggler.get("evidence") == "in_kernel" and straggler.get("ranks"):
        late = rank_list(straggler["ranks"]).lower()
        alone = len(straggler["ranks"]) == 1
        among = (
            ("that rank" if alone else "one of them: this names which")
            if rank in straggler["ranks"]
            else "not among them: a peer they wait for"
        )
        return (
            f" The timeline names {late} ending late{'' if alone else ' together'}{extra}, with "
            f"no claim about why; rank {rank} is {among}; {inner} is {role_us_text} us per launch."
        )
    if straggler.get("evidence") == "in_kernel":
        return (
            f" The timeline finds the cause inside the kernel{extra}, without "
            f"a rank: this names it; {inner} is {role_us_text} us per launch."
        )
    return f" {label} is {role_us_text} us per launch; the timeline names no rank."


def pmu_busiest_sentence(busy: Mapping[str, Any], straggler: Mapping[str, Any]) -> str:
    """The PMU's busiest (rank, role), as roles.busiest gives it: relative excess first, µs beside it."""
    rank, role = busy["rank"], busy["role"]
    ns = busy.get("nonscalar")
    ratio = busy.get("ranked_excess_ratio", busy.get("excess_ratio"))
    per_launch = busy.get("excess_us_per_launch", busy["excess_us"])
    lead = "Per core (msopprof PMU; busy = some pipe active, the scalar pipe included, where a polling loop spins too)"
    if busy.get("every_role_pattern") == "same_us":
        what = (
            f"every role of rank {rank} is busier than the same role on the other ranks by about the same time, "
            f"{per_launch:.1f} us per core and launch: LocalWindowCopy, which every core runs after its role "
            "(the receive side); the PMU cannot split a core's time between its role and LocalWindowCopy"
        )
    elif busy.get("every_role_pattern") == "same_fraction":
        what = (
            f"every role of rank {rank} is busier than the same role on the other ranks by about the same fraction "
            f"(+{100 * ratio:.0f}%, {busy['role_on_top']} most): the rank's own work as a whole, not one role"
        )
    else:
        what = f"rank {rank}'s {role} cores are the busiest against the same role on the other ranks"
    numbers = (
        f"busy {busy['busy_us_high']:.1f} us against a median of "
        f"{busy['peers_median_us']:.1f} us (+{busy['excess_us']:.1f} us)"
    )
    if ns and busy.get("ranked_by") == "nonscalar_us_high":
        spread = f", {ns['excess_us'] / ns['noise_us']:.0f}x the role's spread" if ns["noise_us"] > 0 else ""
        numbers = (
            f"+{100 * ns['excess_ratio']:.0f}% without the scalar pipe ({ns['us']:.1f} "
            f"us against {ns['peers_median_us']:.1f} us{spread}); {numbers}"
        )
    elif ratio is not None:
        numbers = f"+{100 * ratio:.0f}%, " + numbers
    if busy.get("every_role_pattern"):
        numbers = f"{busy['role_on_top']} most, {numbers}"
    caveat = (
        " With so few ranks the spread between ranks is not measured (only the cores' spread): "
        "a difference between whole ranks (a clock, a thermal state) may pass for this excess."
        if busy.get("spread_measured") is False
        else ""
    )
    label = (
        "The role's excess on its vector and MTE pipes (its scalar work not counted)"
        if busy.get("ranked_by") == "nonscalar_us_high"
        else "The role's excess"
    )
    return f"{lead}, {what}: {numbers}.{caveat}" + cost_beside(
        rank, per_launch, straggler, busy.get("excess_us_per_launch_low"), label
    )
