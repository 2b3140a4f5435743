"""Per-core PMU metrics grouped by what each core does (the kernel's AIV roles, shared/formats/deepep.md §4).

The AIV index of a vector row is its position when a rank's vector rows are ordered by block_id, then by
vector sub-block; ``kernel.roles`` (counts in AIV order) maps indices to roles: a configured assumption.
Role statistics pool every (rank, core) of the role across ranks; per-rank breakdowns come beside them.
No threshold verdict: roles and cores are ordered by absolute time, with the miss rate beside it.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

ROLE_METRICS = {
    "aiv_time(us)": "aiv_time_us",
    "aiv_total_cycles": "aiv_total_cycles",
    "aiv_icache_miss_rate": "aiv_icache_miss_rate",
    "aiv_vec_ratio": "aiv_vec_ratio",
    "aiv_mte2_ratio": "aiv_mte2_ratio",
    "aiv_mte3_ratio": "aiv_mte3_ratio",
}


def per_core(long: pd.DataFrame, roles: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Wide table, one row per (rank, vector core): aiv_index, role and the role metrics (NaN = not provided)."""
    vec = long[long["core_kind"] == "vector"]
    keys = ["rank", "node", "device", "block_id", "sub_block_id", "core_index"]
    # groupby/unstack, not pivot_table(dropna=False), which would build the cartesian product of the keys.
    wide = vec.groupby(keys + ["metric"], sort=False)["value"].first().unstack("metric").reset_index()
    wide.columns.name = None
    wide = wide.sort_values(["rank", "block_id", "core_index"], kind="stable")
    wide["aiv_index"] = wide.groupby("rank").cumcount()
    bounds = np.cumsum([int(r["count"]) for r in roles])
    names = [r["name"] for r in roles]
    wide["role"] = [names[int(np.searchsorted(bounds, i, side="right"))] if i < bounds[-1] else "unassigned" for i in wide["aiv_index"]]
    for column in ROLE_METRICS:
        if column not in wide:
            wide[column] = np.nan
    return wide.rename(columns=ROLE_METRICS).reset_index(drop=True)


def _stat(series: pd.Series, how: str) -> float | None:
    values = series.dropna()
    if values.empty:
        return None
    return float({"median": values.median, "max": values.max, "min": values.min}[how]())


def role_statistics(cores: pd.DataFrame) -> dict[str, dict[str, Any]]:
    out = {}
    for role, group in cores.groupby("role", sort=False):
        t = group["aiv_time_us"]
        out[str(role)] = {
            "cores": int(len(group)),
            "ranks": int(group["rank"].nunique()),
            "aiv_time_us_median": _stat(t, "median"),
            "aiv_time_us_max": _stat(t, "max"),
            "aiv_time_us_spread": (_stat(t, "max") - _stat(t, "min")) if t.notna().any() else None,
            "aiv_total_cycles_median": _stat(group["aiv_total_cycles"], "median"),
            "aiv_icache_miss_rate_median": _stat(group["aiv_icache_miss_rate"], "median"),
            "aiv_icache_miss_rate_max": _stat(group["aiv_icache_miss_rate"], "max"),
            "aiv_vec_ratio_median": _stat(group["aiv_vec_ratio"], "median"),
            "aiv_mte2_ratio_median": _stat(group["aiv_mte2_ratio"], "median"),
            "aiv_mte3_ratio_median": _stat(group["aiv_mte3_ratio"], "median"),
        }
    return out


def ordering(stats: Mapping[str, Mapping[str, Any]], key: str) -> list[str]:
    """Roles by a statistic, largest first; roles where it is not provided go last."""
    return sorted(stats, key=lambda r: (stats[r][key] is None, -(stats[r][key] or 0.0)))


def longest_cores(cores: pd.DataFrame, n: int = 5) -> list[dict[str, Any]]:
    top = cores.dropna(subset=["aiv_time_us"]).nlargest(n, "aiv_time_us")
    return [
        {
            "rank": int(r.rank),
            "aiv_index": int(r.aiv_index),
            "role": r.role,
            "aiv_time_us": float(r.aiv_time_us),
            "aiv_icache_miss_rate": None if pd.isna(r.aiv_icache_miss_rate) else float(r.aiv_icache_miss_rate),
        }
        for r in top.itertuples()
    ]


def per_rank_roles(cores: pd.DataFrame) -> dict[str, dict[str, dict[str, float | None]]]:
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for (rank, role), group in cores.groupby(["rank", "role"], sort=True):
        out.setdefault(str(int(rank)), {})[str(role)] = {
            "aiv_time_us_median": _stat(group["aiv_time_us"], "median"),
            "aiv_icache_miss_rate_median": _stat(group["aiv_icache_miss_rate"], "median"),
        }
    return out
