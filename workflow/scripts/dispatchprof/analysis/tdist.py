"""Student's t and normal tails for the comparison rows, from scipy.special: the functions scipy.stats' t and norm
evaluate (stdtr, stdtrit, ndtr, ndtri), called directly, without the distribution objects' argument checks (~0.2 ms
a call, a row's p-value and CI each: benchmarks/compare_scale.py)."""

from __future__ import annotations

import math

from scipy import special


def t_two_sided(t: float, dof: float) -> float:
    """P(|T| >= |t|) for Student's t with ``dof`` degrees of freedom."""
    if not math.isfinite(t):
        return 0.0
    return float(2 * special.stdtr(dof, -abs(t)))


def t_quantile(p: float, dof: float) -> float:
    """The p quantile of Student's t with ``dof`` degrees of freedom."""
    return float(special.stdtrit(dof, p))


def z_two_sided(z: float) -> float:
    return float(2 * special.ndtr(-abs(z)))


def z_quantile(p: float) -> float:
    return float(special.ndtri(p))
