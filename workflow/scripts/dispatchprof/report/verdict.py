"""The report's Answer as a verdict a lead reads in 30 seconds: one short line per question that has an answer, the
causes the group pays for as a small table with their next steps, and the open questions with the command that
collects their evidence.

The Answer is a list of items (``ITEMS``), each a small function of the run's facts that gives zero or more lines or
one table; a new line is a new function appended there. Each function first chooses its evidence from the facts, then
phrases it; the long sentences with every qualification are the report's "The answer's evidence" section
(summary.evidence_sentences), never lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from dispatchprof.analysis.layers import LayerFigure, best_figure, layer_figures
from dispatchprof.report.history import sentence as history_sentence
from dispatchprof.report.steps import Run, cause_step, collect_command, evidence_step
from dispatchprof.report.words import rank_list
from dispatchprof.shell.status import Status

TABLE_ROWS = 3  # causes in the Answer's table; the rest are in "Causes ranked by cost"


@dataclass(frozen=True)
class Line:
    """One line of the Answer: its question (a short label), its text and the step (command or file) it points to."""

    topic: str
    text: str
    step: str | None = None


@dataclass(frozen=True)
class CauseRow:
    who: str
    kind: str
    cost: str
    share: str
    seen_by: str
    step: str


@dataclass(frozen=True)
class CauseTable:
    topic: str
    rows: list[CauseRow]
    footnotes: list[str] = field(default_factory=list)


Item = Line | CauseTable


@dataclass(frozen=True)
class Facts:
    """What the Answer and the evidence sentences read: the stages' statuses, their summary sections, the A/B
    comparisons and the run (whose words the Answer's steps carry)."""

    statuses: Mapping[str, Status]
    toolchain: str
    world: int
    sections: Mapping[str, Any]
    comparisons: Sequence[Mapping[str, Any]]
    run: Run = field(default_factory=lambda: Run(""))
    history: Mapping[str, Any] | None = None  # history.json: the regression gate's verdict

    def section(self, stage: str) -> Any:
        """A stage's summary section when the stage is ok, else None."""
        status = self.statuses.get(stage)
        return self.sections.get(stage) if status is not None and status.ok else None


# --- what the numbers are, and how long a dispatch takes


def data_line(f: Facts) -> list[Item]:
    corr = f.statuses["correctness"]
    parts = ["Simulated data."] if f.toolchain == "sim" else []
    if corr.state == "ok":
        parts.append(f"Precision passed on {f.world} ranks.")
    elif corr.state != "disabled":
        parts.append(f"Precision test {corr.state}: no performance evidence (see Correctness gate).")
    return [Line("data", " ".join(parts))] if parts else []


def latency_line(f: Facts) -> list[Item]:
    base = f.section("baseline")
    if not base:
        return []
    q = base["per_iteration_max_us"]
    lo, hi = q["median_ci95"]
    text = f"A dispatch takes {q['median']:.1f} us (group median, 95% CI {lo:.1f}-{hi:.1f}), {q['p95']:.1f} us at P95."
    named = base.get("slowest_named") or {}
    if named.get("rank") is not None:
        text += f" Rank {named['rank']} is slow by itself."
    return [Line("latency", text)]


def links_line(f: Facts) -> list[Item]:
    """How far from the links' limit (baseline.bandwidth), and where the group is far from it with no rank or node
    standing out, the step that tells a slow link from slow senders (the long form: summary.bandwidth_line)."""
    bw = (f.section("baseline") or {}).get("bandwidth")
    if not bw or bw.get("efficiency") is None:
        return []
    text = (
        f"Links allow {bw['bound_us']:.0f} us ({bw['sets_bound'].replace('_', '-')} "
        f"at peak): {100 * bw['efficiency']:.0f}% of that bound."
    )
    if bw.get("warning"):
        return [Line("links", text + " Above 1: the peak or the byte definition is wrong.")]
    tl = f.section("timeline") or {}
    standing = (tl.get("straggler") or {}).get("evidence") not in (None, "none", "in_kernel")
    if (
        bw.get("far") and not standing and f.section("debugclock") is not None
    ):  # it ran: its line below tells them apart
        return [
            Line("links", text + " Nobody stands out in the timeline: a slow link or slow senders (DebugClock below).")
        ]
    if bw.get("far") and not standing:
        return [
            Line(
                "links",
                text + " Nobody stands out: a slow link or slow senders; DebugClock tells which:",
                bw.get("tell_apart_command"),
            )
        ]
    return [Line("links", text)]


# --- what the group pays for (msprof timeline)


def who(cause: Mapping[str, Any]) -> str:
    ranks = cause.get("ranks") or []
    if cause.get("likely_pacer") and cause.get("waiting_nodes"):  # a whole node late with an off-node rank
        nodes = cause["waiting_nodes"]
        waiting = f"node{'s' if len(nodes) > 1 else ''} {', '.join(str(n) for n in nodes)}"
        pacer = cause["likely_pacer"]
        return f"{waiting} with {rank_list(pacer).lower()} (likely pacer{'s' if len(pacer) > 1 else ''})"
    if cause.get("rank") is not None:
        return f"rank {cause['rank']}"
    if cause.get("node") is not None:
        return f"node {cause['node']}" + (f" (ranks {ranks[0]}-{ranks[-1]})" if ranks else "")
    if ranks:
        return rank_list(ranks).lower()
    return "the group"


KINDS = {
    "late_arrival": "late host",
    "own_work": "own work",
    "late_ending_node": "ends late (link or own work)",
    "in_kernel": "ends late inside the kernel",
}


def kind(cause: Mapping[str, Any]) -> str:
    if cause["evidence"] == "late_arrival" and cause.get("rank") is None:
        return "late hosts"
    if cause["evidence"] == "own_work" and "spiked" in (cause.get("explanation") or ""):
        return "own work (spikes)"
    return KINDS.get(cause["evidence"], cause["evidence"])


def figures(cause: Mapping[str, Any], f: Facts) -> tuple[LayerFigure, list[LayerFigure]]:
    """The cause's figure in each layer that saw it, and the one that best estimates its cost (analysis/layers.py)."""
    found = layer_figures(cause, pmu_role(f), f.section("debugclock"))
    return best_figure(cause, found), found


def cost_cell(cause: Mapping[str, Any], best: LayerFigure) -> str:
    """The cost per launch with its CI; a bound (a late arrival compared across nodes without a pure barrier) says so;
    a lower layer's figure, where it is the best estimate (``best``, figures), names its layer."""
    if cause.get("cost_bound_us"):
        return f"at most {cause['cost_bound_us'][1]:.1f}*"
    if cause.get("cost_not_established") and best.layer == "timeline":  # a rank that paces the group's end
        return "not established"
    if best.layer != "timeline":
        return f"{best.us_per_launch:.1f} ({best.layer})†"
    lo, hi = cause["cost_ci_us"]
    return f"{cause['cost_us_per_launch']:.1f} ({lo:.1f}-{hi:.1f})"


def timeline_saw(cause: Mapping[str, Any], unit: str = "") -> str:
    """What the timeline's own figure is, beside a lower layer's that replaced it: a lead, or no size at all."""
    if cause.get("cost_not_established"):
        return "the timeline sees the others wait for it but cannot size it"
    return f"the timeline's lead {cause['cost_us_per_launch']:.1f}{unit}"


def share_cell(cause: Mapping[str, Any]) -> str:
    return f"{100 * cause['cost_share']:.0f}%" if cause.get("cost_share") is not None else "n/a"


def seen_by(cause: Mapping[str, Any], f: Facts) -> str:
    """The layers that saw the cause: the timeline always; the
    PMU's or DebugClock's busiest where it is on its ranks."""
    ranks = set(cause.get("ranks") or ([cause["rank"]] if cause.get("rank") is not None else []))
    layers = ["timeline"]
    busy = (f.section("pmu") or {}).get("busiest")
    if busy and busy["rank"] in ranks:
        layers.append("PMU")
    dc = f.section("debugclock") or {}
    if (dc.get("busiest") or {}).get("rank") in ranks or (
        dc.get("busiest_node") and dc["busiest_node"]["node"] == cause.get("node")
    ):
        layers.append("DebugClock")
    return ", ".join(layers)


def named_causes(f: Facts) -> list[Mapping[str, Any]]:
    """The timeline's named causes, costliest first, when the timeline compares ranks that wait for each other."""
    tl = f.section("timeline")
    if not tl or (tl.get("coverage") or {}).get("found") == 1 or not tl.get("straggler"):
        return []
    causes = list(tl.get("causes") or [])
    if not causes:
        return [tl["straggler"]] if tl["straggler"].get("evidence") not in (None, "none") else []
    # ranked by the figure each row carries: a lower layer's where it is the best estimate (figures), e.g. the PMU's
    # role excess of a rank the timeline sees pace the group's end without a size of its own
    return sorted(causes, key=lambda c: -figures(c, f)[0].us_per_launch)


def timeline_scope_lines(f: Facts) -> list[Item]:
    """What limits the timeline's reach: ranks without data, inferred rank numbers, a single rank, no coupling."""
    tl = f.section("timeline")
    if not tl:
        return []
    lines = []
    coverage = tl.get("coverage") or {}
    if coverage.get("missing"):
        lines.append(
            Line(
                "timeline",
                f"The timeline covers {coverage.get('sentence') or coverage['found']}: "
                "a rank without data may be the one waited for.",
            )
        )
    if (tl.get("rank_mapping") or {}).get("note"):
        lines.append(Line("timeline", "Rank numbers are inferred, not recorded (see System timeline)."))
    if coverage.get("found") == 1:
        lines.append(
            Line("timeline", "The timeline holds one rank: which rank is slow, and who waits, are not established.")
        )
    elif (tl.get("coupling") or {}).get("state") == "not_coupled":
        lines.append(Line("timeline", "Ranks are not seen to wait for each other: no cause costs the group."))
    return lines


PARTIAL_NAMES_NONE = (
    "The timeline names no cause on partial coverage: who ends last among all ranks is not known (its costs over "
    "the ranks with data are listed under System timeline)."
)


def top_cause_line(f: Facts) -> list[Item]:
    causes = named_causes(f)
    tl = f.section("timeline")
    if not causes:
        if timeline_compares(f):
            found = re.search(r"more than ([\d.]+) us per launch", tl["straggler"].get("explanation") or "")
            floor = f"{found.group(1)} us" if found else "timeline.waits.min_cost_us"
            deeper = slot_top_line(f)
            if (tl.get("coverage") or {}).get("missing"):  # analysis.waits lists every cause on partial coverage
                return [Line("timeline", PARTIAL_NAMES_NONE), *deeper]
            if deeper:  # debugclock_line leaves it out then (slot_is_top)
                return [
                    Line("timeline", f"The timeline sees no rank or node costing over {floor} per launch."),
                    *deeper,
                ]
            return [
                Line(
                    "timeline",
                    f"No rank or node costs the group over {floor} per launch; a slowdown "
                    "every rank shares would not stand out (DebugClock can show one).",
                )
            ]
        return []
    top = causes[0]
    best, _ = figures(top, f)
    cost = (
        f"at most {top['cost_bound_us'][1]:.1f} us per launch (a bound)"
        if top.get("cost_bound_us")
        else "its cost not established by the timeline"
        if top.get("cost_not_established") and best.layer == "timeline"
        else f"{best.us_per_launch:.1f} us per launch"
    )
    if best.layer != "timeline":
        cost += f" ({best.layer}; {timeline_saw(top)})"
    established = best.layer == "timeline" and not top.get("cost_bound_us")
    share = (
        f", {100 * top['cost_share']:.0f}% of the excess" if top.get("cost_share") is not None and established else ""
    )
    more = f" {len(causes) - 1} more cause{'s' if len(causes) > 2 else ''} below." if len(causes) > 1 else ""
    # the step is the picture of it: the merged trace (its causes track) beside the replay without it (the timeline
    # section says what to look for there)
    trace = f"results/{f.run.experiment}/timeline/merged_trace.json"
    return [Line("timeline", f"Top cause: {who(top)}, {kind(top)}, {cost}{share}.{more} See it:", trace)]


def timeline_compares(f: Facts) -> bool:
    """Whether the timeline compares ranks that wait for each other (coupled or unknown, more than one rank, with an
    account): where it names nobody, that is a finding, not a gap."""
    tl = f.section("timeline")
    return bool(
        tl
        and (tl.get("coupling") or {}).get("state") != "not_coupled"
        and (tl.get("coverage") or {}).get("found") != 1
        and tl.get("straggler")
    )


def slot_is_top(f: Facts) -> bool:
    """Whether DebugClock's slower slot heads the causes: the timeline compares ranks and names nobody."""
    dc = f.section("debugclock") or {}
    return bool(timeline_compares(f) and not named_causes(f) and (dc.get("busiest_node") or dc.get("busiest")))


def slot_top_line(f: Facts) -> list[Item]:
    """Where the timeline names nobody, a work slot DebugClock finds slower on one node's ranks (or one rank) is the
    top cause, with its figure and the assumption it rests on: a slowdown the whole group waits for moves every end
    alike, which the timeline cannot see."""
    dc = f.section("debugclock") or {}
    node, best = dc.get("busiest_node"), dc.get("busiest")
    if node:
        where = (
            "its sends out of the node: the link or its senders"
            if node["role"] == "URMASendToken"
            else "the node's own work in that role"
        )
        what = f"node {node['node']}'s {node['role']} {node['phase']}, +{node['excess_us']:.1f} us per launch ({where})"
    elif best:
        what = f"rank {best['rank']}'s {best['role']} {best['phase']}, +{best['excess_us']:.1f} us per launch"
    else:
        return []
    return [
        Line("timeline", f"Top cause (DebugClock): {what}; the group's saving if that slot is on the critical path.")
    ]


def causes_table(f: Facts) -> list[Item]:
    causes = named_causes(f)
    if not causes:
        return []
    shown = [(c, figures(c, f)[0]) for c in causes[:TABLE_ROWS]]  # each row's best figure, once
    rows = [
        CauseRow(who(c), kind(c), cost_cell(c, best), share_cell(c), seen_by(c, f), cause_step(c, f.run))
        for c, best in shown
    ]
    notes = ["Cost: launch time saved without the cause alone (CI above zero); not additive."]
    untimed = [c for c in causes[:TABLE_ROWS] if c["cost_timed_us_per_launch"] < 0.5 * c["cost_us_per_launch"]]
    if untimed:  # a late arrival waits before the kernel's timer: the dispatch latency would gain less
        notes.append(
            "Dispatch latency saved: "
            + "; ".join(f"{who(c)}, {c['cost_timed_us_per_launch']:.1f} us" for c in untimed)
            + "."
        )
    if any(c.get("cost_bound_us") for c in causes[:TABLE_ROWS]):
        notes.append("* A bound, not established: a number needs baseline.synchronize_start.")
    deeper = [(c, best) for c, best in shown if best.layer != "timeline"]
    if deeper:  # the timeline's lead misses what the receivers waited with it: the lower layer's figure, its assumption
        notes.append(
            "\u2020 "
            + "; ".join(f"{who(c)}: {best.layer}'s {best.measures}; {timeline_saw(c, ' us')}" for c, best in deeper)
            + "."
        )
    if len(causes) > TABLE_ROWS:
        notes.append(f"{len(causes) - TABLE_ROWS} smaller: Causes ranked by cost.")
    return [CauseTable("causes", rows, notes)]


def waiting_line(f: Facts) -> list[Item]:
    """The ranks that only wait (never a cause: analysis.waits leaves causes out of them)."""
    tl = f.section("timeline")
    if not tl or (tl.get("coupling") or {}).get("state") != "coupled":
        return []
    waited = tl.get("waiting") or {}
    ranks, compared = waited.get("ranks") or [], waited.get("compared") or 0
    if not ranks:
        return []
    if compared >= 8 and len(ranks) > compared / 2:
        many = f"All {compared}" if len(ranks) == compared else f"{len(ranks)} of the {compared}"
        return [Line("waiting", f"{many} ranks that are no cause only wait (not blame).")]
    verb = "waits" if len(ranks) == 1 else "wait"
    return [Line("waiting", f"{rank_list(ranks)} only {verb} (not blame).")]


# --- what the lower layers add: which role (PMU, DebugClock), the I-cache, the SIMT stalls, a local probe


def pmu_role(f: Facts) -> Mapping[str, Any] | None:
    return (f.section("pmu") or {}).get("busiest")


def busiest_role(f: Facts) -> str | None:
    """The role the chain follows: the PMU's busiest, else DebugClock's when the PMU is not ok."""
    busy = pmu_role(f)
    if busy:
        return busy["role"]
    if f.section("pmu") is None:
        return ((f.section("debugclock") or {}).get("busiest") or {}).get("role")
    return None


def pmu_line(f: Facts) -> list[Item]:
    pmu = f.section("pmu")
    if not pmu:
        return []
    busy = pmu.get("busiest")
    if not busy:
        dc = f.section("debugclock")
        if dc and not dc.get("busiest") and not dc.get("busiest_node"):
            return []  # debugclock_line says it for both
        return [Line("role", "PMU: no rank's role is busier than on its peers.")]
    per_launch = busy.get("excess_us_per_launch", busy["excess_us"])
    ratio = busy.get("ranked_excess_ratio", busy.get("excess_ratio"))
    what = {
        "same_us": (
            f"every role of rank {busy['rank']} is busier than on its peers by about the same time (LocalWindowCopy)"
        ),
        "same_fraction": f"every role of rank {busy['rank']} is busier than on its peers (its own work)",
    }.get(busy.get("every_role_pattern") or "", f"rank {busy['rank']}'s {busy['role']} is busiest against its peers")
    text = f"PMU: {what}" + (f", +{100 * ratio:.0f}%" if ratio is not None else "")
    text += f", {per_launch:.1f} us per core and launch"
    text += " (spread between ranks not measured)." if busy.get("spread_measured") is False else "."
    return [Line("role", text)]


def debugclock_line(f: Facts) -> list[Item]:
    dc = f.section("debugclock")
    if not dc or slot_is_top(f):  # the top cause line gave its slot already
        return []
    best, node = dc.get("busiest"), dc.get("busiest_node")
    lead = "DebugClock" if f.section("pmu") else f"DebugClock (PMU {f.statuses['pmu'].state})"
    if node:
        text = (
            f"{lead}: node {node['node']}'s ranks all run {node['role']} "
            f"{node['excess_us']:.1f} us per launch longer than other nodes'."
        )
    elif best:
        text = f"{lead}: rank {best['rank']}'s {best['role']} is {best['excess_us']:.1f} us per launch above its peers."
    elif f.section("pmu") and not f.section("pmu").get("busiest"):
        text = "PMU and DebugClock: no role or work slot stands out against its peers."
    else:
        text = f"{lead}: no work slot stands out."
    return [Line("role", text)]


def icache_line(f: Facts) -> list[Item]:
    """The I-cache link of the chain: the chain's role, or else a role whose miss rate stands apart from the other
    roles' (above their highest by more than they spread among themselves: read from the data, no fixed threshold),
    with its rate against the others' and its absolute time. A description, never a verdict; where no probe ran, the
    probe is the step that tests the hypothesis on a local piece of the kernel."""
    pmu = f.section("pmu")
    if not pmu:
        return []
    roles = {
        r: v for r, v in pmu["roles"].items() if r != "unassigned" and v["aiv_icache_miss_rate_median"] is not None
    }
    if not roles:
        return []
    rate = {r: v["aiv_icache_miss_rate_median"] for r, v in roles.items()}
    role = busiest_role(f)
    if role not in rate:
        role = max(rate, key=rate.__getitem__)
        others = [rate[r] for r in rate if r != role]
        if not others or rate[role] - max(others) <= max(others) - min(others):
            return []  # no chain role, and no role apart from the others: the ranking is in the evidence section
    others = sorted(rate[r] for r in rate if r != role)
    span = f" (other roles {100 * others[0]:.1f}-{100 * others[-1]:.1f}%)" if others else ""
    time = roles[role].get("aiv_time_us_median")
    spent = f", cores {time:.0f} us" if time is not None else ""
    step = None if f.section("probe") else PROBE_STEP
    return [
        Line("icache", f"I-cache: {role} misses {100 * rate[role]:.1f}%{span}{spent}; a ranking, not a verdict.", step)
    ]


# The stage that tests an I-cache hypothesis (a local piece under msopprof simulator); under cann it needs a command.
PROBE_STEP = "probe.enabled: true (cann: also probe.command)"


def probe_line(f: Facts) -> list[Item]:
    probe = f.section("probe")
    if not probe or not probe.get("cachemiss"):
        return []
    cm = probe["cachemiss"]
    top = f", most at {cm['top_pcs'][0]['pc']}" if cm["top_pcs"] else ""
    return [Line("probe", f"Local probe (simulator): {cm['total']} I-cache misses{top}: a hypothesis.")]


def simt_line(f: Facts) -> list[Item]:
    pcs = f.section("pcsampling")
    if not pcs or not pcs.get("stalls"):
        return []
    role, per_role = busiest_role(f), pcs.get("per_role") or {}
    if role in per_role:
        mix = ", ".join(f"{state} {100 * share:.0f}%" for state, share in list(per_role[role]["stalls"].items())[:2])
        return [Line("simt", f"SIMT ({role}): not issued for {mix}.")]
    ni = pcs["stalls"]["not_issue"]
    worst = max(ni, key=ni.get)
    hot = pcs.get("hot_lines") or []
    where = f", hottest {hot[0]['file']}:{hot[0]['line']}" if hot else ""
    return [Line("simt", f"SIMT: {worst} leads ({100 * ni[worst]:.0f}% of not-issued){where}.")]


def ab_line(f: Facts) -> list[Item]:
    lines = []
    for c in f.comparisons:
        kernel = c.get("kernel") if isinstance(c.get("kernel"), Mapping) else {}
        q = (kernel or {}).get("per_iteration_max_median") or {}
        delta = (
            f" ({q['difference']:+.1f} us, 95% CI {q['ci95'][0]:+.1f} to {q['ci95'][1]:+.1f})" if q.get("ci95") else ""
        )
        verdict = c.get("verdict") if c.get("state") == "ok" else f"{c.get('state')} (see Controlled comparison)"
        lines.append(Line("ab", f"A/B {c['a']} vs {c['b']}: {verdict}{delta if c.get('state') == 'ok' else ''}."))
    return lines


def history_line(f: Facts) -> list[Item]:
    text = history_sentence(f.history)
    return [Line("history", text)] if text else []


# --- what is not known, with the command that collects it

OPEN = {
    "baseline": "Latency",
    "timeline": "Timeline",
    "pmu": "PMU",
    "debugclock": "DebugClock",
    "pcsampling": "SIMT stalls",
}


def open_lines(f: Facts) -> list[Item]:
    """Each stage without evidence, with the one step that collects it (the reasons: Open boundaries)."""
    lines = []
    for stage, label in OPEN.items():
        status = f.statuses.get(stage)
        if status is None or status.ok or f.statuses["correctness"].state not in ("ok", "disabled"):
            continue
        step = evidence_step(stage, f.run) if stage in ("pmu", "debugclock", "pcsampling") else open_step(stage, f.run)
        lines.append(
            Line(
                "open",
                f"{label} not run ({status.state}):"
                if status.state in ("disabled", "skipped")
                else f"{label} {status.state}:",
                step,
            )
        )
    return lines


def open_step(stage: str, run: Run) -> str | None:
    """Baseline and timeline: their collect job forced (analyze mode: the key that imports them)."""
    if run.mode != "collect":
        return {"baseline": "analyze.latency_csv", "timeline": "analyze.timeline_dir"}[stage]
    return collect_command(stage, run)


ITEMS: list[Callable[[Facts], list[Item]]] = [
    data_line,
    latency_line,
    links_line,
    timeline_scope_lines,
    top_cause_line,
    causes_table,
    waiting_line,
    pmu_line,
    debugclock_line,
    icache_line,
    probe_line,
    simt_line,
    ab_line,
    history_line,
    open_lines,
]


def word_count(text: str) -> int:
    """Words as a reader meets them: a command or a path in backticks is one word; table rules and pipes are none."""
    text = re.sub(r"`[^`]*`", "step", text)
    text = re.sub(r"^\|[-| :]+\|$", "", text, flags=re.M)
    return len(re.sub(r"(^|\s)[-|](?=\s)", " ", text.replace("|", " ")).split())


def item_text(item: Item) -> str:
    """An item as Markdown text (its step in backticks), for counting and for tests."""
    if isinstance(item, Line):
        return item.text + (f" `{item.step}`" if item.step else "")
    rows = [" ".join((r.who, r.kind, r.cost, r.share, r.seen_by, f"`{r.step}`")) for r in item.rows]
    return "\n".join([" ".join(TABLE_HEADER), *rows, *item.footnotes])


TABLE_HEADER = ("cause", "kind", "us per launch (95% CI)", "share", "seen by", "next step")


def verdict(facts: Facts, items: Sequence[Callable[[Facts], list[Item]]] = ITEMS) -> list[Item]:
    """The Answer, item by item in order."""
    return [item for make in items for item in make(facts)]


__all__ = ["CauseRow", "CauseTable", "Facts", "Line", "ITEMS", "verdict", "word_count"]
