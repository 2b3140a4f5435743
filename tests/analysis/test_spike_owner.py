"""Whose is a spike (analysis/waits/in_kernel.py owns_its_spikes): a rank that ends a slow launch owns it unless it
ends launches anyway (more than an exchangeable rank's share of the typical ones) and ends the slow ones no more often
than that share predicts (a one-sided binomial tail)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.waits.in_kernel import owns_its_spikes
from dispatchprof.analysis.waits.paces_end import binomial_tails

ALPHA = 0.001  # the schema's default timeline.waits.alpha


def end_orders(typical: dict[int, int], spikes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The last rank of each row (typical rows first, then the spike rows) and which rows are spikes."""
    last = np.array([j for j, n in typical.items() for _ in range(n)] + spikes)
    spike = np.arange(len(last)) >= len(last) - len(spikes)
    return last, spike


def test_the_ranks_that_end_launches_anyway_do_not_own_the_slow_launches_they_end():
    """Twelve ranks, 194 typical launches ended by ranks 7, 10, 4 and 1, six spikes ended by ranks 1 (three), 9 (two)
    and 2 (one): the workflow simulator's 3x4 seed 1, where rank 1's three are link contention (no cause struck) and
    ranks 9's and 2's are their own work. Rank 1 ends a sixth of the typical launches (twice an exchangeable rank's
    share), and three of six slow ones is what that share predicts (p ~ 0.06): not its own. Ranks 9 and 2 never end a
    typical launch: theirs."""
    last, spike = end_orders({7: 71, 10: 56, 4: 35, 1: 32}, [1, 9, 2, 9, 1, 1])
    owns = owns_its_spikes(last, spike, 12, ALPHA)
    assert owns[[9, 2]].all() and not owns[[1, 7, 10, 4]].any()


def test_the_rank_that_ends_every_typical_launch_owns_none_of_the_slow_ones():
    """A slow link's last-served rank ends every launch, the slow ones too (2x8, sim.slow_link without the barrier)."""
    last, spike = end_orders({15: 190, 14: 4}, [15] * 6)
    assert not owns_its_spikes(last, spike, 16, ALPHA)[15]


def test_a_rank_that_ends_launches_anyway_still_owns_spikes_it_ends_far_more_often():
    """sim.spiky_rank on a rank that ends a third of the typical launches: it ends all 16 spikes (8% of 200 launches)."""
    last, spike = end_orders({0: 50, 3: 60, 14: 74}, [14] * 16)
    assert owns_its_spikes(last, spike, 16, ALPHA)[14]


def test_in_an_even_end_order_each_rank_owns_the_one_off_spikes_it_ends():
    """Sixteen ranks that end the typical launches about equally often (the workflow simulator's 2x8, late_rank_10,
    seed 1: 8 to 14 of 187 each), thirteen one-off spikes of ten ranks, each its own work: a rank's share a little
    above 1/16 is chance, so each keeps the spikes it ends."""
    typical = {j: 12 for j in range(16)} | {0: 8, 5: 14, 9: 14, 3: 12, 15: 9}
    last, spike = end_orders(typical, [1, 2, 2, 3, 4, 5, 5, 6, 9, 11, 13, 14, 14])
    assert owns_its_spikes(last, spike, 16, ALPHA).all()


def test_every_rank_that_ends_a_spike_is_a_test_of_its_own():
    """Two ranks end half the typical launches each; rank 0 ends 13 of 14 spikes, rank 1 one. Rank 0's tail (about
    9e-4) is below alpha but not below alpha / 2, the level of two ranks tested: its spikes stay the group's."""
    last, spike = end_orders({0: 100, 1: 100}, [0] * 13 + [1])
    share = 100.5 / (200 + 0.5 * 12)
    tail = binomial_tails(14, share)[13]
    assert ALPHA / 2 < tail < ALPHA
    assert not owns_its_spikes(last, spike, 12, ALPHA)[0]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    world=st.integers(1, 24),
    data=st.data(),
)
def test_any_end_order_gives_one_verdict_per_rank_and_ending_more_typical_launches_never_makes_an_owner(world, data):
    """Any rows, any spikes (none, all, ties of counts): a verdict per rank; a rank that ends no typical launch owns
    its spikes; a rank that does not own them does not for ending one more typical launch."""
    rows = data.draw(st.integers(0, 60))
    last = np.array(data.draw(st.lists(st.integers(0, world - 1), min_size=rows, max_size=rows)), dtype=int)
    spike = np.array(data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), dtype=bool)
    owns = owns_its_spikes(last, spike, world, ALPHA)
    assert owns.shape == (world,) and owns.dtype == bool
    assert owns[np.bincount(last[~spike], minlength=world) == 0].all()
    for j in np.flatnonzero(~owns).tolist():
        assert not owns_its_spikes(np.append(last, j), np.append(spike, False), world, ALPHA)[j]
