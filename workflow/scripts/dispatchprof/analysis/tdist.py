"""Student's t and the normal distribution without scipy (not a dependency of the workflow): the two-sided tail of
t from the regularized incomplete beta function (Lentz's continued fraction, Numerical Recipes 6.4), its quantile
by bisection. Exact to ~1e-10, enough for p-values and CI bounds of a comparison."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

NORMAL = NormalDist()


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-14
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided(t: float, dof: float) -> float:
    """P(|T| >= |t|) for Student's t with ``dof`` degrees of freedom."""
    if not math.isfinite(t):
        return 0.0
    return beta_inc(dof / 2, 0.5, dof / (dof + t * t))


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, dof: float) -> float:
    """The p quantile (p > 0.5) of Student's t, by bisection of its tail (to 1e-12 of 1000)."""
    lo, hi = 0.0, 1e3
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_two_sided(mid, dof) / 2 > 1 - p else (lo, mid)
    return (lo + hi) / 2


def z_two_sided(z: float) -> float:
    return 2 * (1 - NORMAL.cdf(abs(z)))


def z_quantile(p: float) -> float:
    return NORMAL.inv_cdf(p)
