"""A rank without data never makes the timeline name a cause the full data do not name (issue 58).

The end order is an order statistic over every rank: with one rank's files refused, its end (and arrival) is unknown
in every launch, and the ranks present cannot tell a rank that ends last by itself from one that ends last together
with the missing rank. In the event model's 2x8 (no fault) ranks end in pairs: rank 8 and rank 9 end the launch
~1 us apart, a late set of two, listed; with rank 9 left out, rank 8 ended "by itself" 10-40 us before the rest in 7
launches and owned both spikes of the pair, and was named (6.1 us per launch). So on partial coverage the account
costs the ranks present and lists every cause, naming none, with why (``not_named: ranks_missing``).

Two generators: the simulator's event model (benchmarks/localisation.py, the issue's case) and the hand-written
launch grids (tests/analysis/launch_grids.py, any shape and fault)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from launch_grids import COLUMNS, Shape, simulate

from dispatchprof.analysis import waits
from dispatchprof.report.cause_text import in_words

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import localisation as bench  # noqa: E402

SETTINGS = bench.SETTINGS  # the schema's defaults, as the timeline stage analyses with them
BOOT = {**bench.BOOT, "resamples": 300}
MODEL = bench.Shape(2, 8)
LAUNCHES = 200 + bench.SKIP  # the default timeline run's analysed launches


@functools.cache
def model_grid(seed: int, sync: bool) -> waits.LaunchGrid:
    """The event model's no-fault run as the timeline sees it (every rank, every analysed launch)."""
    knobs = bench.Knobs(seed=seed)
    launches, _ = bench.run(MODEL, knobs, LAUNCHES, sync)
    return bench.msprof_view(launches, knobs, MODEL)


def without(g: waits.LaunchGrid, rank: int) -> waits.LaunchGrid:
    """The same grid with one rank's column gone, as the merge builds it when that rank's files were refused."""
    keep = g.ranks != rank
    cut = lambda a: None if a is None else a[:, keep]  # noqa: E731
    return waits.LaunchGrid(
        g.launches,
        g.ranks[keep],
        g.nodes[keep],
        *(cut(getattr(g, name)) for name in ("start", "end", "duration", "barrier_start", "barrier_end")),
        cut(g.barrier_wait),
        cut(g.previous_end),
    )


def named(g: waits.LaunchGrid, missing: list[int]) -> set[tuple[str, tuple[int, ...], int | None]]:
    """The causes the account names above min_cost_us (evidence, ranks, node), as the stage words them."""
    strag = in_words(waits.analyse(g, SETTINGS, missing, BOOT), SETTINGS)["straggler"]
    return {
        (c["evidence"], tuple(c["ranks"]), c["node"])
        for c in strag["causes"]
        if max(c["cost_us_per_launch"], c["cost_timed_us_per_launch"]) > SETTINGS["min_cost_us"]
    }


@example(seed=0, sync=True, drop=9)  # the issue's case: rank 8's own work, 6.1 us per launch, named without rank 9
@example(seed=1, sync=True, drop=14)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 4), st.booleans(), st.integers(0, MODEL.world - 1))
def test_a_no_fault_run_with_any_one_rank_dropped_names_nothing_the_full_data_do_not(seed, sync, drop):
    g = model_grid(seed, sync)
    full = named(g, [])
    partial = named(without(g, drop), [drop])
    assert partial <= full, (partial, full)


@st.composite
def faulted(draw: st.DrawFn) -> tuple[Shape, int]:
    nodes = draw(st.integers(1, 3))
    per_node = draw(st.integers(2, 8))
    world = nodes * per_node
    rank = st.integers(0, world - 1)
    late_us = st.sampled_from([8.0, 40.0, 150.0])
    shape = Shape(
        nodes=nodes,
        ranks_per_node=per_node,
        launches=draw(st.integers(20, 200)),
        coupled=draw(st.booleans()),
        barrier=draw(st.booleans()),
        end_jitter_us=draw(st.sampled_from([0.0, 0.5, 3.0])),
        own_extra=draw(st.dictionaries(rank, late_us, max_size=2)),
        host_late=draw(st.dictionaries(rank, late_us, max_size=2)),
        spike_extra=draw(st.dictionaries(st.tuples(rank, st.integers(0, 19)), late_us, max_size=4)),
        clock_offset_us=tuple(draw(st.lists(st.sampled_from([0.0, 350_000.0]), min_size=nodes, max_size=nodes))),
        seed=draw(st.integers(0, 3)),
    )
    return shape, draw(rank)


def grid_of(shape: Shape) -> waits.LaunchGrid:
    columns, _ = simulate(shape)
    return waits.grid(
        columns["rank"], columns["launch"], {c: columns[c].astype(float) for c in COLUMNS}, shape.ranks_per_node
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulted())
def test_any_run_with_any_one_rank_dropped_names_nothing_the_full_data_do_not(case):
    shape, drop = case
    g = grid_of(shape)
    assert named(without(g, drop), [drop]) <= named(g, [])


def test_on_partial_coverage_the_causes_are_costed_and_listed_with_why_and_the_ranks_without_data():
    """A rank 40 us slower in every launch is named on full data; with another rank's files refused the same cause is
    costed over the ranks present and listed, saying which ranks have no data and why that stops the naming."""
    shape = Shape(nodes=2, ranks_per_node=4, launches=120, own_extra={3: 40.0})
    g = grid_of(shape)
    full = in_words(waits.analyse(g, SETTINGS, [], BOOT), SETTINGS)["straggler"]
    assert [(c["evidence"], c["ranks"]) for c in full["causes"]] == [("own_work", [3])], full["causes"]
    partial = in_words(waits.analyse(without(g, 5), SETTINGS, [5], BOOT), SETTINGS)["straggler"]
    assert partial["causes"] == [] and partial["evidence"] == "none"
    [listed] = [c for c in partial["unnamed"] if c["ranks"] == [3]]
    assert listed["evidence"] == "own_work" and listed["missing_ranks"] == [5]
    assert np.isclose(listed["cost_us_per_launch"], full["causes"][0]["cost_us_per_launch"], rtol=0.05)
    assert "ranks without data" in listed["not_named"] and "who ends last" in listed["not_named"]
    said = partial["explanation"]
    assert said.startswith("no cause is named: rank 5 has no data, so who ends or arrives last among all ranks is not")
    assert "rank 3 own_work (" in said and "us per launch over the ranks with data" in said, said
