"""The timeline analysis on generated launch grids (issue 45): every grid ends in a result, never an exception.

The grids are what the merge stage hands analysis.waits (stages/timeline.timeline_stats): 1 to 64 ranks over 1 to 8
nodes, 1 to 300 launches; ends tied to the nanosecond, every rank late, one or two ranks late (own work or host) in
every launch, missing ranks and launches, NaN timestamps, node clocks seconds apart, coupled and uncoupled kernels.
CI runs ``TIMELINE_GRIDS`` examples (150 by default); the acceptance run set it to 2,000.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from launch_grids import COLUMNS, Shape, simulate

from dispatchprof.analysis import waits
from dispatchprof.report.cause_text import in_words
from dispatchprof.stages.timeline import longest_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _defaults import timeline_settings  # noqa: E402

SETTINGS, DEFAULT_BOOT = timeline_settings()  # the schema's defaults, as the benchmarks analyse with them
BOOT = {**DEFAULT_BOOT, "resamples": 40}  # fewer, for speed: the bootstrap's size changes no path through the analysis
EXAMPLES = int(os.environ.get("TIMELINE_GRIDS", "150"))


def analyse_as_the_stage(
    columns: dict[str, np.ndarray], ranks_per_node: int, missing: list[int], boot=BOOT, settings=SETTINGS
) -> dict:
    """What stages/timeline.timeline_stats does with the used launches: the grid, the waits, the longest view, and
    the stats as JSON text (a NaN or an object JSON cannot hold would fail there too)."""
    g = waits.grid(columns["rank"], columns["launch"], {c: columns[c].astype(float) for c in COLUMNS}, ranks_per_node)
    waited = in_words(waits.analyse(g, settings, missing, boot), settings)
    strag = waited["straggler"]
    causes = strag.pop("causes")
    longest = longest_of(g, waited, causes)
    summary = {
        "causes": [{k: c.get(k) for k in waits.CAUSE_KEYS} for c in causes],
        "straggler": {k: strag.get(k) for k in (*waits.STRAGGLER_KEYS, "explanation")},
    }
    json.dumps({**waited, "longest": longest, "summary": summary}, default=str)
    return {**waited, "causes": causes, "longest": longest}


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    nodes = draw(st.integers(1, 8))
    per_node = draw(st.integers(1, 64 // nodes))
    world, launches = nodes * per_node, draw(st.integers(1, 300))
    rank = st.integers(0, world - 1)
    late_us = st.sampled_from([0.9, 8.0, 15.0, 40.0, 150.0])
    own = draw(st.dictionaries(rank, late_us, max_size=2))
    host = draw(st.dictionaries(rank, late_us, max_size=2))
    if draw(st.booleans()) and world > 1:  # every rank late by its host
        host = {r: draw(late_us) for r in range(world)}
    lost_ranks = draw(st.lists(rank, max_size=max(0, world - 1), unique=True))
    return Shape(
        nodes=nodes,
        ranks_per_node=per_node,
        launches=launches,
        coupled=draw(st.booleans()),
        barrier=draw(st.booleans()),
        common_sd_us=draw(st.sampled_from([0.0, 6.0, 30.0])),
        end_jitter_us=draw(st.sampled_from([0.0, 0.5, 3.0])),
        own_extra=own,
        own_factor=draw(st.dictionaries(rank, st.sampled_from([1.05, 1.15, 2.0]), max_size=2)),
        rank_work_sd_us=draw(st.sampled_from([0.0, 10.0])),
        host_late=host,
        clock_offset_us=tuple(
            draw(st.lists(st.sampled_from([0.0, 350_000.0, -2e6, 5e6]), min_size=nodes, max_size=nodes))
        ),
        missing_ranks=tuple(lost_ranks),
        missing_launches=tuple(
            draw(st.lists(st.integers(0, launches - 1), max_size=min(launches - 1, 20), unique=True))
        ),
        nan_cells=draw(st.sampled_from([0, 0, 1, 7])),
        seed=draw(st.integers(0, 2**16)),
    )


# The grids that failed before issue 45's fixes, kept as they were drawn.
@example(
    Shape(nodes=3, ranks_per_node=8, own_extra={5: 40.0})
)  # one rank slower in every launch, the others end together
@example(Shape(nodes=2, ranks_per_node=8, own_extra={5: 40.0}))
@example(Shape(nodes=3, ranks_per_node=8, own_extra={5: 8.0}))
@example(Shape(nodes=3, ranks_per_node=8, own_extra={5: 40.0, 13: 15.0}))  # two such ranks
# found by the 2000-grid run of stop 54: no jitter, so every other rank ends as one with rank 0 (all its followers)
@example(
    Shape(
        nodes=2,
        ranks_per_node=19,
        launches=224,
        work_us=260.0,
        common_sd_us=0.0,
        end_jitter_us=0.0,
        own_factor={0: 1.05},
        rank_work_sd_us=0.0,
        clock_offset_us=(0.0, 0.0),
        missing_ranks=(1,),
        seed=0,
    )
)
@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(shapes())
def test_every_generated_grid_ends_in_a_result(shape: Shape):
    columns, _ = simulate(shape)
    result = analyse_as_the_stage(columns, shape.ranks_per_node, list(shape.missing_ranks))
    strag = result["straggler"]
    assert isinstance(strag["explanation"], str) and strag["explanation"]
    for cause in result["causes"]:  # a cause is named on the scope it is shown in, never below min_cost_us
        if cause.get("cost_not_established"):  # named without a cost (a rank that paces the group's end): says so
            assert cause["paces_end"] and "cost is not established" in cause["explanation"], cause
            continue
        assert shown_cost(cause) > SETTINGS["min_cost_us"], cause
    assert not set(strag["waiting"]["ranks"]) & {r for c in result["causes"] for r in c["ranks"]}


def shown_cost(cause: dict) -> float:
    """The cost a named cause's explanation leads with: the scope it was named on."""
    return cause["cost_timed_us_per_launch"] if cause.get("named_on") == "timed" else cause["cost_us_per_launch"]
