"""Each layer's figure for one cause: the timeline's group saving beside the PMU's role excess and DebugClock's slot
excess, each with what it measures, and the one that best estimates the cause's cost.

The three are different quantities (docs/architecture.md, "The answer is a cost account"):
- the timeline's cost is the group time per launch its removal gives back, replayed on what msprof saw; where the
  cause is a set of ranks that end late together, or a rank late in most launches, the receivers end with it and the
  lead it is costed on is a lower estimate of the delay;
- DebugClock's slot excess is the delay one work slot adds on the instrumented run's launches (device clocks): the
  group saves it if the slot is on the critical path;
- the PMU's role excess is the busy time a role adds on one replayed launch, polling included: an estimate of the
  role's own delay, not of a group saving (one launch, and a busy core may be waiting).
They are given side by side, never folded into the timeline's CI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# the timeline's evidence whose cost is a lead over the others' ends: the ranks that wait for it end with it
LEAD_ONLY = frozenset({"in_kernel", "late_ending_node"})

TIMELINE = "group time saved without it (msprof timeline)"
DEBUGCLOCK = "slot excess on the DEBUG_CLOCK_ON run, if that slot is on the critical path"
PMU = "role busy-time excess on one replayed launch, if that role is on the critical path"
NOT_ESTABLISHED = (
    "not established by the timeline (the other ranks' own work is hidden behind their wait for this rank's data): "
    "0 is no estimate"
)


@dataclass(frozen=True, kw_only=True)
class LayerFigure:
    """One layer's figure for a cause, in µs per launch (a range where the layer gives one)."""

    layer: str  # "timeline", "DebugClock" or "PMU"
    us_per_launch: float
    low_us: float | None  # the low end of a range (the PMU: pipes overlap), else None
    measures: str  # what the figure is, and the assumption it rests on

    def as_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "us_per_launch": self.us_per_launch,
            "low_us": self.low_us,
            "measures": self.measures,
        }


def cause_ranks(cause: Mapping[str, Any]) -> set[int]:
    """The ranks a cause is about: its rank, or its listed ranks (a node's, or a late-ending set)."""
    ranks = {int(r) for r in cause.get("ranks") or []}
    return ranks | ({int(cause["rank"])} if cause.get("rank") is not None else set())


def debugclock_figure(cause: Mapping[str, Any], debugclock: Mapping[str, Any] | None) -> LayerFigure | None:
    """DebugClock's busiest node when it is the cause's node or holds its ranks, else its busiest rank when that is
    among the cause's ranks."""
    if not debugclock:
        return None
    node, best = debugclock.get("busiest_node"), debugclock.get("busiest")
    ranks = cause_ranks(cause)
    if node and (node.get("node") == cause.get("node") or ranks & {int(r) for r in node.get("ranks") or []}):
        return LayerFigure(layer="DebugClock", us_per_launch=float(node["excess_us"]), low_us=None, measures=DEBUGCLOCK)
    if best and int(best["rank"]) in ranks:
        return LayerFigure(layer="DebugClock", us_per_launch=float(best["excess_us"]), low_us=None, measures=DEBUGCLOCK)
    return None


def pmu_figure(cause: Mapping[str, Any], busiest: Mapping[str, Any] | None) -> LayerFigure | None:
    """The PMU's busiest (rank, role) when its rank is among the cause's ranks."""
    if not busiest or int(busiest["rank"]) not in cause_ranks(cause):
        return None
    high = float(busiest.get("excess_us_per_launch", busiest["excess_us"]))
    low = busiest.get("excess_us_per_launch_low")
    return LayerFigure(
        layer="PMU", us_per_launch=high, low_us=float(low) if low is not None and low < high else None, measures=PMU
    )


def layer_figures(
    cause: Mapping[str, Any], pmu_busiest: Mapping[str, Any] | None, debugclock: Mapping[str, Any] | None
) -> list[LayerFigure]:
    """The timeline's figure first, then each lower layer that saw the same ranks or node."""
    timeline = LayerFigure(
        layer="timeline",
        us_per_launch=float(cause["cost_us_per_launch"]),
        low_us=None,
        measures=NOT_ESTABLISHED if cause.get("cost_not_established") else TIMELINE,
    )
    lower = [debugclock_figure(cause, debugclock), pmu_figure(cause, pmu_busiest)]
    return [timeline, *(f for f in lower if f is not None)]


def best_figure(cause: Mapping[str, Any], figures: list[LayerFigure]) -> LayerFigure:
    """The figure that best estimates the cause's cost. The timeline's, which is a group saving, unless it is only a
    lead (ranks ending late together, a late-ending node) and DebugClock, timing the same launches' work slots on
    device clocks, sees a larger delay on the same ranks: the lead then misses what the receivers waited with it. A
    bound stays the timeline's (its own statement). The PMU never replaces it: one replayed launch's busy time,
    polling included, is no group saving (in the localisation benchmark it ran 1.5-11x the event truth), except where
    the timeline has no figure at all (a cause named with its cost not established, a rank that paces the group's
    end): DebugClock's then, else the PMU's, each with what it measures."""
    timeline = figures[0]
    if cause.get("cost_not_established"):
        lower = [f for layer in ("DebugClock", "PMU") for f in figures if f.layer == layer]
        return lower[0] if lower else timeline
    if cause.get("cost_bound_us") or cause.get("evidence") not in LEAD_ONLY:
        return timeline
    deeper = [f for f in figures if f.layer == "DebugClock" and f.us_per_launch > timeline.us_per_launch]
    return deeper[0] if deeper else timeline


def with_layer_figures(
    timeline: Mapping[str, Any], pmu: Mapping[str, Any] | None, debugclock: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A copy of the timeline's summary section whose costed causes (and straggler) carry ``layer_figures`` (each
    layer's figure, timeline first) and ``cost_layer`` (the layer whose figure best estimates the cost)."""
    busiest = (pmu or {}).get("busiest")

    def annotated(cause: Mapping[str, Any]) -> dict[str, Any]:
        if cause.get("cost_us_per_launch") is None:
            return dict(cause)
        found = layer_figures(cause, busiest, debugclock)
        return {**cause, "layer_figures": [f.as_json() for f in found], "cost_layer": best_figure(cause, found).layer}

    out = dict(timeline)
    out["causes"] = [annotated(c) for c in timeline.get("causes") or []]
    if timeline.get("straggler"):
        out["straggler"] = annotated(timeline["straggler"])
    return out
