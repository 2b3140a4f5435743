"""The ranks brought down with the late-ending ranks of most launches (end_order.persistent_group): the ranks whose end
moves with theirs launch after launch, and no rank late by its own slowdown."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.waits.end_order import persistent_group

OWN_MIN = 5.0  # timeline.waits.own_work_min_us's default


def ends(seed: int, launches: int = 200) -> tuple[np.ndarray, np.random.Generator]:
    """16 ranks ending together about 1300 us (1 us jitter each)."""
    rng = np.random.default_rng(seed)
    return 1300.0 + rng.normal(0.0, 1.0, (launches, 16)), rng


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(20.0, 150.0), st.integers(2, 5))
def test_a_staircase_of_receivers_is_brought_down_with_the_sender_that_paces_it(seed, step, steps):
    # a slow sender (column 6, late by a varying amount each launch) serves its receivers in turn: each lower step
    # ends a constant lag before it (its own tail jitter only); the late sets of most launches hold the top two
    end, rng = ends(seed)
    sender = 1300.0 + (steps + 1) * step + rng.normal(0.0, 10.0, len(end))
    end[:, 6] = sender
    for k in range(1, steps + 1):
        end[:, 6 - k] = sender - k * step + rng.normal(0.0, 0.3, len(end))
    group = persistent_group(end, np.array([5, 6]), OWN_MIN)
    assert set(group.tolist()) == set(range(6 - steps, 7))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(10.0, 30.0))
def test_two_independently_slow_ranks_stay_apart(seed, second):
    # rank 5 +40 us and rank 13 +second us in every launch, each with its own jitter: no follower of the other
    end, rng = ends(seed)
    end[:, 5] += 40.0 + rng.normal(0.0, 3.0, len(end))
    end[:, 13] += second + rng.normal(0.0, 3.0, len(end))
    assert persistent_group(end, np.array([5]), OWN_MIN).tolist() == [5]
    assert persistent_group(end, np.array([5, 13]), OWN_MIN).tolist() == [5, 13]


def test_no_persistent_rank_has_no_group():
    end, _ = ends(0)
    assert persistent_group(end, np.zeros(0, int), OWN_MIN).tolist() == []
