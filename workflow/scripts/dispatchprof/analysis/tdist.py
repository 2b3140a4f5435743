"""Student's t and normal tails for the comparison rows, from scipy.stats (one well-kept implementation; the history
gate uses the same)."""

from __future__ import annotations

import math

from scipy import stats


def t_two_sided(t: float, dof: float) -> float:
    """P(|T| >= |t|) for Student's t with ``dof`` degrees of freedom."""
    if not math.isfinite(t):
        return 0.0
    return float(2 * stats.t.sf(abs(t), dof))


def t_quantile(p: float, dof: float) -> float:
    """The p quantile of Student's t with ``dof`` degrees of freedom."""
    return float(stats.t.ppf(p, dof))


def z_two_sided(z: float) -> float:
    return float(2 * stats.norm.sf(abs(z)))


def z_quantile(p: float) -> float:
    return float(stats.norm.ppf(p))
