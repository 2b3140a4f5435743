"""Median and linear-interpolation percentile of an array already in ascending order, bit for bit what np.median and
np.percentile(method="linear") return for it (tests/analysis/test_order_stats.py holds them to that).

Why not numpy's own: the parse job takes a median and a P95 of every rank and a median of every kernel of its call
chain, ~8 calls per rank at 20-50 us of numpy's per-call work each (more than the partition itself), and np.median
imports numpy.ma on its first call (14 ms in every job). Sorting once and reading the middle costs a few us.
"""

from __future__ import annotations

import math

import numpy as np


def sorted_median(ascending: np.ndarray) -> float:
    """np.median of a non-empty ascending array without NaN: the middle value, or the mean of the middle two (numpy
    takes np.mean of them: their float sum divided by 2)."""
    middle = len(ascending) // 2
    if len(ascending) % 2:
        return float(ascending[middle])
    return (float(ascending[middle - 1]) + float(ascending[middle])) / 2


def sorted_percentile(ascending: np.ndarray, q: float) -> float:
    """np.percentile(..., q, method="linear") of a non-empty ascending array without NaN. As numpy computes it: the
    virtual index (n - 1) * (q / 100), its floor and the next value, and the interpolation from whichever end is
    nearer (numpy's _lerp, which keeps the result between the two values)."""
    n = len(ascending)
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        return float(ascending[-1])
    below = math.floor(virtual)
    low, high = float(ascending[below]), float(ascending[below + 1])
    weight = virtual - below
    step = high - low
    return high - step * (1 - weight) if weight >= 0.5 else low + step * weight
