"""How the cost account's answer is scored against a counterfactual truth: the rules benchmarks/localisation.py (the
simulator's event model) and benchmarks/second_model_score.py (benchmarks/second_model.py's PROF_ trees, data nobody
tuned on) both score by, stated once.

A named cause is what waits.analyse names (``straggler.causes``: evidence, rank, node, ranks, cost_us_per_launch, and
where they apply late_ending_ranks, cost_bound_us, cost_not_established). A true cause is what the benchmark's model
knows: knob (``spikes`` for a rank's built-in spikes), evidence, ranks, rank (one rank, else None), node (a node's
cause, else None), period and timed (its counterfactual costs in us per launch: the launch period and the timed
kernel scope given back by its removal, the same draws); a slow link also has src_node and dst_node.

Where the two benchmarks' copies of these rules differed, the difference was in what their truths hold, not in the
rules: the event model has slow links and in-kernel (a slow sender or counting role) and late-ending-node truths,
the second model only late arrivals and own work. The rules below are the event model's, whose extra branches a
second-model truth never reaches (no truth of it has those kinds), so each benchmark scores as it did; the one
difference left is outside these rules: localisation.py gives a slow link's truth the node whose ranks end last
(from the events) before scoring, which decides that truth's culprit set (culprit_of), and the second model gives a
truth a node only where its fault is on all of a node's ranks (second_model_score.true_causes). The second model's
copy read a named cause's rank and node with .get, localisation.py's by key: the rules use .get (waits.analyse gives
both; check refuses a cause without them).

Nothing here imports workflow/sim or the analysis: the second model's score must not depend on the simulator.
"""

from __future__ import annotations

import numbers
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Cause = dict[str, Any]
Truth = dict[str, Any]

# the goal for the median cost error: true causes whose costs differ by less are tied at that precision
TIE = 0.15
# evidence of the named causes that blame a rank or node for its own doing (a victim named so is blamed)
BLAMING = ("late_arrival", "own_work")


class Layout(Protocol):
    """What scoring needs of a shape: its ranks and how they sit on nodes (both benchmarks' Shape classes)."""

    @property
    def world(self) -> int: ...

    @property
    def ranks_per_node(self) -> int: ...


class Refused(ValueError):
    """Causes or truths the rules cannot score (a key missing, a value of the wrong type): which and why."""


def node_of(rank: int, layout: Layout) -> int:
    return rank // layout.ranks_per_node


def true_cost(truth: Truth) -> float:
    """A true cause's cost: the larger of its launch-period and timed costs (what min_cost_us is compared with)."""
    return max(truth["period"], truth["timed"])


def real_causes(truths: Sequence[Truth], min_cost: float) -> list[Truth]:
    """The true causes that cost (true_cost at least min_cost_us), costliest launch period first: the first is the
    true top cause, what the answer must head with (a rank's built-in spikes included)."""
    return sorted((t for t in truths if true_cost(t) >= min_cost), key=lambda t: -t["period"])


def cost_error(estimate: float, truth_us: float, min_cost: float) -> float:
    """|estimate - truth| / max(truth, min_cost_us): relative, with a truth below min_cost_us counted as
    min_cost_us (a cost that small is not named, so its relative error says nothing)."""
    return abs(estimate - truth_us) / max(truth_us, min_cost)


def matches(named: Cause, truth: Truth) -> bool:
    """The named cause is the true cause: the same evidence and rank or node. A slow sender or counting role (an
    in-kernel truth) shows as the receivers' late ends: a late-ending node or an in-kernel wait, without blame, is right
    there; a rank's own work named among late-ending ranks (without blame) is right too; a late-ending node must be
    that node."""
    if truth["evidence"] == "in_kernel":  # a slow sender or counting role: the receivers wait, nobody is blamed
        return named["evidence"] in ("in_kernel", "late_ending_node")
    if truth["evidence"] == "own_work" and named.get("late_ending_ranks"):  # localised to late-ending ranks
        return truth["rank"] in named["late_ending_ranks"]
    if truth["evidence"] == "late_ending_node":
        return named["evidence"] == "late_ending_node" and named.get("node") == truth["node"]
    if truth["rank"] is not None:
        return named["evidence"] == truth["evidence"] and named.get("rank") == truth["rank"]
    return named["evidence"] == truth["evidence"] and named.get("rank") is None and named.get("node") == truth["node"]


def truth_of(named: Cause, truths: Sequence[Truth], layout: Layout) -> dict[str, float]:
    """The true cost of what the analysis named: the costliest true cause it stands for (a rank's late host; a rank's
    own work or spikes; a node's late hosts; a late-ending node: a slow link out of or into it, or its ranks' own work;
    late-ending ranks: their own work or slow roles; an in-kernel launch: any rank's own work or slow role). Nothing
    it stands for costs 0."""
    evidence, rank, node = named["evidence"], named.get("rank"), named.get("node")
    if evidence == "late_arrival" and rank is not None:
        found = [t for t in truths if t["evidence"] == "late_arrival" and t["ranks"] == [rank]]
    elif evidence == "late_arrival":
        found = [t for t in truths if t["evidence"] == "late_arrival" and t["rank"] is None and t["node"] == node]
    elif evidence == "own_work":
        found = [t for t in truths if t["evidence"] != "late_arrival" and t["ranks"] == [rank]]
    elif evidence == "late_ending_node":
        found = [t for t in truths if t["knob"] == "slow_link" and node in (t["src_node"], t["dst_node"])]
        found += [
            t
            for t in truths
            if t["evidence"] != "late_arrival" and t["ranks"] and all(node_of(r, layout) == node for r in t["ranks"])
        ]
    elif named.get("late_ending_ranks"):
        late = set(named["late_ending_ranks"])
        found = [t for t in truths if t["evidence"] != "late_arrival" and t["ranks"] and set(t["ranks"]) <= late]
    else:
        found = [t for t in truths if t["evidence"] != "late_arrival"]
    best = max(found, key=true_cost, default=None)
    return {"period": best["period"], "timed": best["timed"]} if best else {"period": 0.0, "timed": 0.0}


def culprit_of(truth: Truth, layout: Layout) -> set[int]:
    """The ranks a true cause makes guilty: its rank; for a slow link the ranks of its sending and receiving nodes
    and of the node that ends late (localisation.py sets that node from the events); else its node's ranks (a truth
    of several ranks that is no node's has none)."""
    if truth["rank"] is not None:
        return {truth["rank"]}
    if truth.get("knob") == "slow_link":
        nodes = (truth["src_node"], truth["dst_node"], truth["node"])
        return {r for r in range(layout.world) if node_of(r, layout) in nodes}
    return {r for r in range(layout.world) if node_of(r, layout) == truth["node"]}


def label(cause: Cause) -> str:
    """A named cause in words, as the rows list it: its evidence and who (late-ending ranks, a rank, a node or the
    group)."""
    if cause.get("late_ending_ranks"):
        return f"{cause['evidence']} late-ending ranks {','.join(map(str, cause['late_ending_ranks']))}"
    who = (
        f"rank {cause['rank']}"
        if cause.get("rank") is not None
        else f"node {cause['node']}"
        if cause.get("node") is not None
        else "group"
    )
    return f"{cause['evidence']} {who}"


def top_right(top: Cause | None, real: Sequence[Truth], tie: float = TIE) -> tuple[bool, bool, Truth | None]:
    """Whether the top named cause is right: strict when it is the true top cause; right when it is that or a true
    cause whose launch-period cost is within ``tie`` of it (at the goal's median cost error they cannot be ordered).
    Nothing named is right only where nothing costs. Returns (right, strict, the true cause it stands for when
    right)."""
    top_truth = real[0] if real else None
    if top_truth is None or top is None:
        right = top is None and top_truth is None
        return right, right, None
    strict = matches(top, top_truth)
    tied = [t for t in real if t["period"] >= (1.0 - tie) * top_truth["period"]]
    found = next((t for t in tied if matches(top, t)), None)
    # the true top cause itself where it is among the tied (a cost below 0 on the launch period is not)
    return found is not None, strict, top_truth if strict and found is not None else found


def culprits(real: Sequence[Truth], layout: Layout) -> set[int]:
    """Every rank a true cause that costs makes guilty (culprit_of)."""
    return {r for t in real for r in culprit_of(t, layout)}


def alarms(
    named: Sequence[Cause], truths: Sequence[Truth], real: Sequence[Truth], layout: Layout, min_cost: float
) -> tuple[list[str], list[str]]:
    """False alarms: named causes whose true cost (truth_of) is below min_cost_us. Victims blamed: those of them that
    blame a rank for its own doing (a late arrival or own work) while it is no culprit of a true cause that costs,
    where one does (the group waited for someone else). Returns both as labels."""
    guilty = culprits(real, layout)
    false_alarms, victims = [], []
    for cause in named:
        if true_cost(truth_of(cause, truths, layout)) < min_cost:
            false_alarms.append(label(cause))
            if cause["evidence"] in BLAMING and not set(cause["ranks"]) & guilty and real:
                victims.append(label(cause))
    return false_alarms, victims


@dataclass(frozen=True)
class Score:
    """One case scored (score): the row's columns (columns) and what the benchmarks score beside them."""

    real: list[Truth]  # the true causes that cost, costliest first
    knob_real: list[Truth]  # of them, those a fault raised (not a rank's built-in spikes)
    top: Cause | None  # the top named cause
    right: bool
    strict: bool
    right_knob: bool  # the top named cause is the costliest true cause a fault raised
    matched: Truth | None  # the true cause the top's cost is scored against
    costed: bool  # the top has a cost estimate (not cost_not_established)
    cost_error: float | None
    cost_bound: list[float] | None
    bound_holds: bool | None
    estimate_error: float | None
    false_alarms: list[str]
    victims_blamed: list[str]

    def columns(self) -> dict[str, Any]:
        """What both benchmarks' rows record of the score."""
        return {
            "fault_run": bool(self.knob_real),
            "top_right": self.right,
            "top_right_strict": self.strict,
            "top_right_knob": self.right_knob,
            "cost_error": self.cost_error,
            "cost_bound": self.cost_bound,
            "bound_holds": self.bound_holds,
            "estimate_error": self.estimate_error,
            "false_alarms": self.false_alarms,
            "victims_blamed": self.victims_blamed,
        }


def score(named: Sequence[Cause], truths: Sequence[Truth], layout: Layout, min_cost: float, tie: float = TIE) -> Score:
    """One case's named causes against its truths. The top cause right (top_right), the top knob cause right (the
    costliest true cause a fault raised), the cost error of the top against the true cause it is right for (or the
    top knob cause), none where it has no estimate (cost_not_established); where the top's cost is a bound
    (cost_bound_us: a late arrival across nodes without a pure barrier, the answer says "at most") the bound must hold
    and the error is kept as estimate_error, not scored; false alarms and victims blamed (alarms). Refused where
    min_cost_us is not above 0 (the cost error's floor) or a cause or truth lacks what the rules read (check)."""
    if not min_cost > 0:
        raise Refused(f"min_cost_us {min_cost!r}: the cost error's floor must be above 0")
    check(named, truths)
    real = real_causes(truths, min_cost)
    top = named[0] if named else None
    right, strict, matched = top_right(top, real, tie)
    knob_real = [t for t in real if t["knob"] != "spikes"]
    right_knob = bool(top is not None and knob_real and matches(top, knob_real[0]))
    if not right:
        matched = knob_real[0] if right_knob else None
    costed = top is not None and not top.get("cost_not_established")
    error = cost_error(top["cost_us_per_launch"], matched["period"], min_cost) if matched and costed else None
    bound = top.get("cost_bound_us") if top else None
    bound_holds = bool(matched["period"] <= bound[1]) if bound and matched else None
    estimate_error, error = (error, None) if bound else (None, error)
    false_alarms, victims = alarms(named, truths, real, layout, min_cost)
    return Score(
        real=real,
        knob_real=knob_real,
        top=top,
        right=right,
        strict=strict,
        right_knob=right_knob,
        matched=matched,
        costed=costed,
        cost_error=error,
        cost_bound=bound,
        bound_holds=bound_holds,
        estimate_error=estimate_error,
        false_alarms=false_alarms,
        victims_blamed=victims,
    )


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _rank(value: Any) -> bool:
    """None or an integer (numpy's too)."""
    return value is None or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def _ranks(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(_rank(r) and r is not None for r in value)


def check(named: Sequence[Cause], truths: Sequence[Truth]) -> None:
    """Refuse (Refused, saying which and what) causes or truths the rules cannot read: a named cause needs evidence,
    rank (or None), node (or None), ranks and cost_us_per_launch, and late_ending_ranks and cost_bound_us (a pair) of
    the right type where present; a truth needs knob, evidence, ranks, rank, node, period and timed, and a slow link
    src_node and dst_node. Values may be any number (NaN included: the rules compare, they do not fail)."""
    for i, c in enumerate(named):
        if not isinstance(c, dict):
            raise Refused(f"named cause {i}: not a mapping ({type(c).__name__})")
        why = (
            "evidence" if not isinstance(c.get("evidence"), str) else
            "rank" if "rank" not in c or not _rank(c["rank"]) else
            "node" if "node" not in c or not _rank(c["node"]) else
            "ranks" if not _ranks(c.get("ranks")) else
            "cost_us_per_launch" if not _number(c.get("cost_us_per_launch")) else
            "late_ending_ranks" if c.get("late_ending_ranks") is not None and not _ranks(c["late_ending_ranks"]) else
            "cost_bound_us" if c.get("cost_bound_us") and not (
                isinstance(c["cost_bound_us"], list | tuple) and len(c["cost_bound_us"]) == 2
                and all(_number(x) for x in c["cost_bound_us"])
            ) else None
        )  # fmt: skip
        if why:
            raise Refused(f"named cause {i}: {why} missing or of the wrong type ({c.get(why)!r})")
    for i, t in enumerate(truths):
        if not isinstance(t, dict):
            raise Refused(f"true cause {i}: not a mapping ({type(t).__name__})")
        why = (
            "knob" if not isinstance(t.get("knob"), str) else
            "evidence" if not isinstance(t.get("evidence"), str) else
            "ranks" if not _ranks(t.get("ranks")) else
            "rank" if "rank" not in t or not _rank(t["rank"]) else
            "node" if "node" not in t or not _rank(t["node"]) else
            "period" if not _number(t.get("period")) else
            "timed" if not _number(t.get("timed")) else
            "src_node" if t["knob"] == "slow_link" and not _rank(t.get("src_node", "")) else
            "dst_node" if t["knob"] == "slow_link" and not _rank(t.get("dst_node", "")) else None
        )  # fmt: skip
        if why:
            raise Refused(f"true cause {i}: {why} missing or of the wrong type ({t.get(why)!r})")


def rate(rows: Sequence[dict[str, Any]], key: str) -> float:
    """The share of rows whose ``key`` is true (0 of none)."""
    return sum(bool(r[key]) for r in rows) / max(1, len(rows))


def median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What both benchmarks' summaries hold (each adds its own): runs and fault runs (a fault raised a true cause
    that costs); the share of fault runs whose top cause is right (within TIE), is the top knob cause, and of all runs
    right; the median and max cost error over the rows that have one; the fault runs whose top cost is a bound and
    those whose bound holds; victims blamed and false alarms over all rows."""
    faults = [r for r in rows if r["fault_run"]]
    errors = [r["cost_error"] for r in rows if r["cost_error"] is not None]
    return {
        "runs": len(rows),
        "fault_runs": len(faults),
        "top_right_fault_runs": rate(faults, "top_right"),
        "top_is_the_top_knob_cause_fault_runs": rate(faults, "top_right_knob"),
        "top_right_all_runs": rate(rows, "top_right"),
        "cost_error_median": median_or_none(errors),
        "cost_error_max": max(errors) if errors else None,
        "bounded_fault_runs": sum(r.get("bound_holds") is not None for r in faults),
        "bounds_holding": sum(bool(r.get("bound_holds")) for r in faults),
        "victims_blamed": sum(len(r["victims_blamed"]) for r in rows),
        "false_alarms": sum(len(r["false_alarms"]) for r in rows),
    }
