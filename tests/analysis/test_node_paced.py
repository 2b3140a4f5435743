"""A late set larger than half of the ranks when its shape says who is late (end_order.node_shaped): every rank of a
whole node ends late with an off-node rank whose node mates end early, so the node waits for that rank's data. Ranks
that end first by the kernel's own structure make no majority late set."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dispatchprof.analysis import waits
from dispatchprof.analysis.waits.account import Account
from dispatchprof.analysis.waits.end_order import late_sets, node_shaped
from dispatchprof.report.cause_text import in_words

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _defaults import timeline_settings  # noqa: E402

SETTINGS, DEFAULT_BOOT = timeline_settings()
BOOT = {**DEFAULT_BOOT, "resamples": 200}
OWN_MIN = float(SETTINGS["own_work_min_us"])
COLUMNS = ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")


def account_of(end: np.ndarray) -> Account:
    """An account of these ends alone (arrivals all equal, every launch following the previous)."""
    n, world = end.shape
    end = end - end.max(axis=1, keepdims=True)
    zeros = np.zeros((n, world))
    return Account(zeros, end, zeros, np.ones(n, bool), "", "", True, end + 100.0, np.full(n, 100.0))


def grid_of(lateness: np.ndarray, per_node: int, seed: int = 3):
    """A barrier-released collective on one clock: each rank runs 118 us (0.3 us own noise) plus its ``lateness``
    (per launch and rank, µs), the next launch's arrivals 8 us after the ends."""
    rng = np.random.default_rng(seed)
    launches, world = lateness.shape
    prev = np.zeros(world)
    cols: dict[str, list[float]] = {k: [] for k in ("rank", "launch", *COLUMNS)}
    for i in range(launches):
        arrive = prev + 25.0 + rng.uniform(0, 4, world)
        release = arrive.max() + 3.0
        start = release + 1.5 + rng.uniform(0, 0.2, world)
        end = start.max() + 120.0 + rng.normal(0.0, 0.3, world) + lateness[i]
        for r in range(world):
            row = (r, i, start[r], end[r] - start[r], arrive[r], release - arrive[r])
            for k, v in zip(("rank", "launch", *COLUMNS), row):
                cols[k].append(v if k in ("rank", "launch") else round(v * 1000.0))
        prev = end + 8.0
    columns = {k: np.array(v, dtype=float) for k, v in cols.items() if k not in ("rank", "launch")}
    return waits.grid(np.array(cols["rank"], int), np.array(cols["launch"], int), columns, per_node)


def paced_lateness(launches: int = 150, seed: int = 5) -> np.ndarray:
    """2x8: rank 11 (node 1) ends ~110 us late, node 0's eight ranks wait for its data and end 2-3 us after it; rank
    11's node mates end on time."""
    rng = np.random.default_rng(seed)
    late = np.zeros((launches, 16))
    pacer = 110.0 + rng.normal(0.0, 2.0, launches)
    late[:, 11] = pacer
    late[:, :8] = pacer[:, None] + rng.uniform(2.0, 3.0, (launches, 8))
    return late


def test_a_whole_node_waiting_for_an_off_node_rank_is_named_with_that_rank_as_the_likely_pacer():
    lateness = paced_lateness()
    result = in_words(waits.analyse(grid_of(lateness, 8), SETTINGS, [], BOOT), SETTINGS)
    top = result["straggler"]["causes"][0]
    assert sorted(top["late_ending_ranks"]) == [*range(8), 11]
    assert top["likely_pacer"] == [11] and top["waiting_nodes"] == [0]
    assert "rank 11 is the likely pacer" in top["explanation"]
    # the set brought down to the others' last end: the launch's last end's lead over node 1's other ranks
    lead = np.median(lateness.max(axis=1))
    assert abs(top["cost_us_per_launch"] - lead) < 0.1 * lead


def test_structural_first_enders_do_not_make_a_late_majority():
    # 3x4: ranks 0, 3 and 6 end 60 us before the others in every launch, no whole node with them
    lateness = np.full((150, 12), 60.0) + np.random.default_rng(2).normal(0.0, 0.3, (150, 12))
    lateness[:, [0, 3, 6]] = 0.0
    nodes = np.repeat(np.arange(3), 4)
    assert not node_shaped(np.array([1, 2, 4, 5, 7, 8, 9, 10, 11]), nodes)
    size, _, _ = late_sets(account_of(lateness), OWN_MIN, nodes)
    assert size.max() <= 6  # never more than half
    result = in_words(waits.analyse(grid_of(lateness, 4), SETTINGS, [], BOOT), SETTINGS)
    assert not [c for c in result["straggler"]["causes"] if len(c.get("late_ending_ranks", [])) > 6]


def test_the_node_shape():
    nodes = np.repeat(np.arange(2), 8)
    assert node_shaped(np.array([*range(8), 11]), nodes)
    assert node_shaped(np.array([*range(8), 9, 10, 11, 12]), nodes)  # half of the other node
    assert not node_shaped(np.array([*range(8), 9, 10, 11, 12, 13]), nodes)  # more than half
    assert not node_shaped(np.arange(8), nodes)  # a whole node alone: no off-node rank
    assert not node_shaped(np.array([*range(7), 11]), nodes)  # no whole node
