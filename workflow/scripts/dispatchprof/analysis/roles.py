"""Per-core PMU metrics grouped by what each core does (the kernel's AIV roles, docs/formats.md §3).

The AIV index of a vector row is its position when a rank's vector rows are ordered by block_id, then by
vector sub-block; ``kernel.roles`` (counts in AIV order) maps indices to roles: a configured assumption.
Role statistics pool every (rank, core, launch) of the role across ranks and profiled launches (pmu.launch_count);
per-launch and per-rank breakdowns come beside them. A launch is msopprof's ``<n>`` folder, counted per device and
kernel: every launch is kept, each with its own AIV order, and nothing keeps only the first.
No threshold verdict: roles and cores are ordered by absolute time, with the miss rate beside it.

Busy time is a range, never a sum: the pipes (vector, scalar, MTE2, MTE3) overlap, so a core was busy between its
largest pipe time and min(sum of pipe times, aiv_time). The rest of aiv_time had no pipe active: polling a flag,
instruction fetch or stalls; it is not called "wait" (the PMU cannot tell them apart). Roles are compared with the
same role on other ranks, by busy time, because a core's aiv_time includes waiting for its peers; busiest ranks them
by relative excess without the scalar pipe (a polling loop spins there), against the role's measured spread.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dispatchprof.analysis.waits import binned_grid  # the heat-map binning the timeline uses too

ROLE_METRICS = {
    "aiv_time(us)": "aiv_time_us",
    "aiv_total_cycles": "aiv_total_cycles",
    "aiv_icache_miss_rate": "aiv_icache_miss_rate",
    "aiv_vec_ratio": "aiv_vec_ratio",
    "aiv_mte2_ratio": "aiv_mte2_ratio",
    "aiv_mte3_ratio": "aiv_mte3_ratio",
}
PIPES = ("vec", "scalar", "mte2", "mte3")
REPLAY_NOTE = (
    "msopprof replays the kernel per rank: the peers' waits inside a replayed launch are not the live run's (host "
    "lateness is gone, the tools' set-up skew takes its place); compare busy time, which waiting does not change"
)


def _launch_keys(long: pd.DataFrame) -> pd.DataFrame:
    """A table without a launch column holds one launch (the root layout has no ``<n>`` folder): launch 0."""
    out = long if "launch" in long else long.assign(launch=0)
    return out if "kernel" in out else out.assign(kernel="")


def per_core(long: pd.DataFrame, roles: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Wide table, one row per (rank, kernel, launch, vector core): aiv_index, role and the role metrics (NaN = not
    provided). The AIV order is counted within each launch, so every launch maps its cores to the same roles."""
    vec = _launch_keys(long[long["core_kind"] == "vector"])
    keys = ["rank", "node", "device", "kernel", "launch", "block_id", "sub_block_id", "core_index"]
    # groupby/unstack, not pivot_table(dropna=False), which would build the cartesian product of the keys. The launch
    # is a key: without it .first() would fold launches 1..n-1 into launch 0 (first non-NA value per metric).
    wide = vec.groupby(keys + ["metric"], sort=False)["value"].first().unstack("metric").reset_index()
    wide.columns.name = None
    wide = wide.sort_values(["rank", "kernel", "launch", "block_id", "core_index"], kind="stable")
    wide["aiv_index"] = wide.groupby(["rank", "kernel", "launch"]).cumcount()
    bounds = np.cumsum([int(r["count"]) for r in roles])
    names = [r["name"] for r in roles]
    wide["role"] = [
        names[int(np.searchsorted(bounds, i, side="right"))] if i < bounds[-1] else "unassigned"
        for i in wide["aiv_index"]
    ]
    for column in ROLE_METRICS:
        if column not in wide:
            wide[column] = np.nan
    wide = wide.rename(columns=ROLE_METRICS).reset_index(drop=True)
    return with_busy(wide)


def with_busy(cores: pd.DataFrame) -> pd.DataFrame:
    """Pipe times per core (the (us) columns, else ratio x aiv_time), the busy range and the no-pipe time."""
    aiv = cores["aiv_time_us"]
    times = []
    for pipe in PIPES:
        column = f"aiv_{pipe}_time(us)"
        ratio = f"aiv_{pipe}_ratio"
        t = cores[column] if column in cores else pd.Series(np.nan, index=cores.index)
        if ratio in cores:
            t = t.fillna(cores[ratio] * aiv)
        cores[f"{pipe}_us"] = t
        times.append(t)
    pipes = pd.concat(times, axis=1)
    known = pipes.notna().any(axis=1)
    cores["busy_us_low"] = pipes.max(axis=1).where(known)
    cores["busy_us_high"] = pd.concat([pipes.sum(axis=1, min_count=1), aiv], axis=1).min(axis=1).where(known)
    cores["no_pipe_us"] = (aiv - cores["busy_us_high"]).where(known)
    # Without the scalar pipe, where a core polling a flag spins: its upper bound, as busy_us_high.
    others = pd.concat([t for pipe, t in zip(PIPES, times) if pipe != "scalar"], axis=1)
    cores["nonscalar_us_high"] = (
        pd.concat([others.sum(axis=1, min_count=1), aiv], axis=1).min(axis=1).where(others.notna().any(axis=1))
    )
    cores["nonscalar_us_low"] = others.max(axis=1).where(others.notna().any(axis=1))
    return cores


def _stat(series: pd.Series, how: str) -> float | None:
    values = series.dropna()
    if values.empty:
        return None
    return float({"median": values.median, "max": values.max, "min": values.min}[how]())


def role_statistics(cores: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per role, pooled over every rank, core and launch in ``cores``: ``cores`` counts distinct (rank, AIV index),
    ``samples`` the (rank, core, launch) rows the medians are taken over."""
    out = {}
    for role, group in cores.groupby("role", sort=False):
        t = group["aiv_time_us"]
        out[str(role)] = {
            "cores": int(len(group[["rank", "aiv_index"]].drop_duplicates())),
            "ranks": int(group["rank"].nunique()),
            "launches": int(group["launch"].nunique()),
            "samples": int(len(group)),
            "aiv_time_us_median": _stat(t, "median"),
            "aiv_time_us_max": _stat(t, "max"),
            "aiv_time_us_spread": (_stat(t, "max") - _stat(t, "min")) if t.notna().any() else None,
            "aiv_total_cycles_median": _stat(group["aiv_total_cycles"], "median"),
            "aiv_icache_miss_rate_median": _stat(group["aiv_icache_miss_rate"], "median"),
            "aiv_icache_miss_rate_max": _stat(group["aiv_icache_miss_rate"], "max"),
            "aiv_vec_ratio_median": _stat(group["aiv_vec_ratio"], "median"),
            "aiv_mte2_ratio_median": _stat(group["aiv_mte2_ratio"], "median"),
            "aiv_mte3_ratio_median": _stat(group["aiv_mte3_ratio"], "median"),
            "busy_us_median_low": _stat(group["busy_us_low"], "median"),
            "busy_us_median_high": _stat(group["busy_us_high"], "median"),
            "no_pipe_us_median": _stat(group["no_pipe_us"], "median"),
        }
    return out


def role_statistics_by_launch(cores: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    """role_statistics of each launch alone (launch index as a string key), pooled over ranks only: a launch that
    differs from the others (a cold first launch, a replay artefact) shows here and is averaged away in the pool."""
    return {str(int(launch)): role_statistics(group) for launch, group in cores.groupby("launch", sort=True)}


def launches_per_rank(cores: pd.DataFrame) -> dict[int, list[int]]:
    """The launch indices found for each rank, to check that no rank lost a launch."""
    return {int(rank): sorted(int(n) for n in group.unique()) for rank, group in cores.groupby("rank")["launch"]}


def metric_set_by_role(long: pd.DataFrame, cores: pd.DataFrame) -> dict[str, Any]:
    """One more metric CSV (Memory, L2Cache...) per role: the median of each column over the role's vector cores on
    every rank and launch. Rows take the role of the same (rank, kernel, launch, block_id, sub_block_id) in the
    PipeUtilization cores table; aic_* columns are NA on vector rows and left out; a column NA on every vector row is
    listed as not provided, never shown as 0."""
    vec = _launch_keys(long[long["core_kind"] == "vector"])
    keys = ["rank", "kernel", "launch", "block_id", "sub_block_id"]
    vec = vec.merge(cores[keys + ["role"]], on=keys, how="left")
    vec["role"] = vec["role"].fillna("unassigned")  # a core PipeUtilization does not list has no AIV index
    vec = vec[~vec["metric"].str.startswith("aic_")]
    order = list(dict.fromkeys(vec["metric"]))
    medians = vec.dropna(subset=["value"]).groupby(["role", "metric"])["value"].median()
    provided = [m for m in order if m in medians.index.get_level_values("metric")]
    roles = list(dict.fromkeys(cores["role"])) + (
        ["unassigned"] if "unassigned" in set(vec["role"]) - set(cores["role"]) else []
    )
    return {
        "columns": provided,
        "not_provided": [m for m in order if m not in provided],
        "roles": {
            str(role): {m: (float(medians[(role, m)]) if (role, m) in medians.index else None) for m in provided}
            for role in roles
        },
        "definition": "median over the role's vector cores on every rank and launch",
    }


MIN_RANKS = 3  # with two ranks, one busier than the other may as well be the other one fast: nobody is named
MIN_PEERS_FOR_SPREAD = 4  # the spread between ranks is measured from at least this many other ranks, else not
MAD_SIGMA = 1.4826  # MAD x this = the standard deviation of a normal sample
MEDIAN_SE = 1.2533  # the standard error of a median of n normal values is this x sigma / sqrt(n)


def t_quantile(p: float, dof: float) -> float:
    """The p quantile of Student's t with ``dof`` degrees of freedom (Cornish-Fisher expansion about the normal
    quantile, within ~1% for dof >= 3 at the tails used here): a spread measured from few ranks is itself uncertain,
    and the z of an excess over it has heavier tails than the normal."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(p)
    if dof > 1e5:
        return z
    v = float(dof)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


def _spread(peers: np.ndarray) -> tuple[float, int]:
    """The spread between ranks: the standard deviation of the peers, and its degrees of freedom. Not trimmed: the
    per-rank medians of a role with few cores have heavy tails, and a cut at a few MADs (tried: 3.5) named the
    tail of a no-fault run; a second slow rank widens it, which can only hide an excess, never invent one."""
    return (float(np.std(peers, ddof=1)) if len(peers) > 1 else 0.0), len(peers) - 1


LARGE_GROUP = 64  # ranks of a role beyond which the spread of all stands for each leave-one-out spread


def _median_without(order: np.ndarray, value: float) -> float:
    """The median of the sorted ``order`` with one element equal to ``value`` left out."""
    n = len(order) - 1
    if n <= 0:
        return float("nan")
    i = int(np.searchsorted(order, value))

    def rest(k: int) -> float:  # the k-th of the rest, without a copy
        return float(order[k] if k < i else order[k + 1])

    return rest(n // 2) if n % 2 else (rest(n // 2 - 1) + rest(n // 2)) / 2


def _rank_table(known: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per (role, rank): the median of ``column`` over the role's cores and launches, the peers' median (the other
    ranks, leave-one-out) and the noise of that comparison: the spread between ranks (_spread of the peers, from at
    least MIN_PEERS_FOR_SPREAD of them, with its degrees of freedom: a spread between few ranks may read low by
    chance), else the standard error of the rank's median from the spread of its role's cores (pooled MAD of each
    core about its rank's median), both widened for the peers' median's own error. ``spread_measured`` is False with
    fewer peers: then a difference between whole ranks (a clock, a thermal state) is not told from an excess."""
    data = known.dropna(subset=[column])
    per = (
        data.groupby(["role", "rank"])[column]
        .agg(["median", "size"])
        .rename(columns={"median": "value", "size": "n"})
        .reset_index()
    )
    residual = (data[column] - data.groupby(["role", "rank"])[column].transform("median")).abs()
    # residuals about a median fitted to n cores run small by about sqrt((n - 1) / n): undone per (role, rank)
    size = data.groupby(["role", "rank"])[column].transform("size").to_numpy(dtype=float)
    residual = residual * np.sqrt(size / np.maximum(size - 1, 1))
    core_sigma = (MAD_SIGMA * residual.groupby(data["role"]).median()).to_dict()
    rows = []
    for role, g in per.groupby("role", sort=True):
        values = g["value"].to_numpy(dtype=float)
        # Many ranks: one rank hardly moves its peers' spread (an outlier is cut from it anyway); the spread of all
        # ranks stands for every leave-one-out one, and the leave-one-out median is read from the sorted values.
        shared = _spread(values) if len(values) > LARGE_GROUP else None
        order = np.sort(values)
        for i, row in enumerate(g.itertuples()):
            peers = np.delete(values, i) if shared is None else values
            median = float(np.median(peers)) if shared is None and len(peers) else _median_without(order, values[i])
            measured = len(values) - 1 >= MIN_PEERS_FOR_SPREAD
            spread, dof = (shared if shared is not None else _spread(peers)) if measured else (0.0, 0)
            widen = float(np.sqrt(1.0 + np.pi / (2 * max(len(values) - 1, 1))))  # the peers' median has its own error
            spread *= widen
            from_cores = widen * MEDIAN_SE * core_sigma.get(role, 0.0) / np.sqrt(max(int(row.n), 1))
            # measured, the spread between ranks holds the cores' noise of each rank's median and whatever differs
            # between whole ranks; the cores' spread (which holds their fixed differences too: a send core's share
            # of destinations) stands in only when too few ranks give a spread
            noise, dof = (spread, dof) if measured else (from_cores, 10**6)
            rows.append((role, int(row.rank), float(row.value), median, noise, dof, measured, len(values) - 1))
    out = pd.DataFrame(rows, columns=["role", "rank", "value", "peers", "noise", "dof", "spread_measured", "n_peers"])
    out["excess"] = out["value"] - out["peers"]
    out["ratio"] = out["excess"] / out["peers"].where(out["peers"] > 0)
    out["z"] = out["excess"] / out["noise"].where(out["noise"] > 0)
    out.loc[(out["noise"] <= 0) & (out["excess"] > 0), "z"] = np.inf  # identical peers and cores: any excess stands out
    return out


def _every_role(mine: pd.DataFrame) -> str | None:
    """Whether every role of one rank exceeds its peers, and how: by about the same µs ("same_us": the part every
    core runs alike, LocalWindowCopy) or by about the same fraction ("same_fraction": the rank's own work as a
    whole); None when not every role exceeds. All roles but at most one must stand out on their own (with two roles
    both), and none fall short of its peers beyond its noise (a long role's noise may hide the shift). The pattern is
    the better of two one-parameter fits of the roles' excesses, weighted by their
    noise: a constant (µs) or a multiple of the peers' median (fraction)."""
    n = len(mine)
    if n < 2 or not (mine["excess"] > -mine["z_min"] * mine["noise"]).all() or int(mine["out"].sum()) < max(n - 1, 2):
        return None
    us, noise, base = (mine[c].to_numpy(float) for c in ("excess", "noise", "peers"))
    w = 1.0 / np.maximum(noise, 1e-9 * np.maximum(base, 1.0)) ** 2  # identical cores and peers: equal weights
    constant = float((us * w).sum() / w.sum())
    share = float((us * base * w).sum() / (base**2 * w).sum())
    misfit_us, misfit_fraction = float((w * (us - constant) ** 2).sum()), float((w * (us - share * base) ** 2).sum())
    return "same_us" if misfit_us <= misfit_fraction else "same_fraction"


def _excess_on(known: pd.DataFrame, rank: int, roles: Sequence[str], column: str) -> float | None:
    """The named rank's excess on one busy-time column: the median over ``roles`` of (the rank's median - the
    other ranks' median of the same role)."""
    if column not in known:
        return None
    per = known.dropna(subset=[column]).groupby(["role", "rank"])[column].median()
    excess = []
    for role in roles:
        if role not in per.index.get_level_values("role"):
            continue
        values = per.loc[role]
        if rank in values.index and len(values) > 1:
            excess.append(float(values[rank] - values.drop(rank).median()))
    return float(np.median(excess)) if excess else None


MAX_SLOPE_PAIRS = 20_000  # rank pairs a Theil-Sen slope is read from (all of them below ~200 ranks)


def poll_slopes(known: pd.DataFrame, column: str) -> dict[str, tuple[float, float]]:
    """Per role, how much ``column`` rises per µs of aiv_time across ranks: the Theil-Sen slope (median over rank
    pairs) of the per-rank medians, at least 0. A core that waits longer polls longer; if its polling loop shows on
    these pipes (a flag read through MTE2, say), every waiting rank looks busier by slope x its extra wait. The
    slope is read from the data: most ranks differ by their waits, and a slow rank is one outlier the median of
    pair slopes does not follow. Beside it its standard error (the residuals' MAD-sigma over the spread of aiv_time,
    as for a least-squares slope): a rank far from the typical wait carries that error times its distance."""
    per = known.dropna(subset=[column, "aiv_time_us"]).groupby(["role", "rank"])[[column, "aiv_time_us"]].median()
    out = {}
    rng = np.random.default_rng(0)
    for role, g in per.groupby(level="role"):
        x, y = g["aiv_time_us"].to_numpy(float), g[column].to_numpy(float)
        i, j = np.triu_indices(len(x), 1)
        if len(i) > MAX_SLOPE_PAIRS:
            pick = rng.choice(len(i), MAX_SLOPE_PAIRS, replace=False)
            i, j = i[pick], j[pick]
        dx = x[j] - x[i]
        ok = dx != 0
        slope = float(np.median((y[j] - y[i])[ok] / dx[ok])) if ok.any() else 0.0
        residual = y - np.median(y) - slope * (x - np.median(x))
        sxx = float(((x - x.mean()) ** 2).sum())
        se = MAD_SIGMA * float(np.median(np.abs(residual - np.median(residual)))) / np.sqrt(sxx) if sxx > 0 else 0.0
        out[str(role)] = (max(0.0, slope), se)
    return out


def net_of_polling(known: pd.DataFrame, column: str, slopes: Mapping[str, tuple[float, float]]) -> pd.Series:
    """``column`` per core less slope x (its aiv_time - the role's median aiv_time): what its pipes did beyond what
    waiting as long as a typical core of its role would show there."""
    slope = known["role"].map({role: s for role, (s, _) in slopes.items()}).fillna(0.0)
    typical = known.groupby("role")["aiv_time_us"].transform("median")
    return known[column] - slope * (known["aiv_time_us"] - typical).fillna(0.0)


def _net_of_polling_table(known: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, tuple[float, float]]]:
    """The cores with the non-scalar bounds net of polling (``nonscalar_net_us_high``/``_low``), their _rank_table
    with the slope's own error added to the noise (times how far the rank's wait is from its role's typical one),
    and the slopes."""
    slopes = poll_slopes(known, "nonscalar_us_high")
    known = known.assign(
        nonscalar_net_us_high=net_of_polling(known, "nonscalar_us_high", slopes),
        nonscalar_net_us_low=net_of_polling(known, "nonscalar_us_low", slopes),
    )
    table = _rank_table(known, "nonscalar_net_us_high")
    aiv = known.groupby(["role", "rank"])["aiv_time_us"].median()
    far = (aiv - aiv.groupby(level="role").transform("median")).abs()
    se = pd.Series([slopes[str(r)][1] for r, _ in far.index], index=far.index)
    extra = (se * far).reindex(pd.MultiIndex.from_frame(table[["role", "rank"]])).fillna(0.0).to_numpy()
    table = table.assign(noise=np.sqrt(table["noise"] ** 2 + extra**2))
    table = table.assign(z=table["excess"] / table["noise"].where(table["noise"] > 0))
    table.loc[(table["noise"] <= 0) & (table["excess"] > 0), "z"] = np.inf  # identical peers and cores
    return known, table, slopes


def standing_out(table: pd.DataFrame, min_excess: float, alpha: float) -> pd.DataFrame:
    """``table`` with z_min (the one-sided quantile of ``alpha`` shared over its rows, Bonferroni, Student's t at each
    row's degrees of freedom) and ``out``: an excess above zero, at least ``min_excess`` of the peers' median and at
    least z_min noise units."""
    table = table.assign(z_min=[t_quantile(1.0 - alpha / max(len(table), 1), dof) for dof in table["dof"]])
    return table.assign(out=(table["excess"] > 0) & (table["ratio"] >= min_excess) & (table["z"] >= table["z_min"]))


def excess_entry(table: pd.DataFrame, rank: int, role: str) -> dict[str, Any] | None:
    """One (rank, role) row of a comparison table as the summary gives it; None where the table has no such row."""
    hit = table[(table["rank"] == rank) & (table["role"] == role)]
    if hit.empty:
        return None
    h = hit.iloc[0]
    return {
        "us": float(h["value"]),
        "peers_median_us": float(h["peers"]),
        "excess_us": float(h["excess"]),
        "excess_ratio": None if pd.isna(h["ratio"]) else float(h["ratio"]),
        "noise_us": float(h["noise"]),
        "z": None if pd.isna(h["z"]) else (float(h["z"]) if np.isfinite(h["z"]) else None),
    }


def busiest(cores: pd.DataFrame, min_excess: float, alpha: float = 0.01) -> dict[str, Any] | None:
    """The (rank, role) whose busy time exceeds the same role on the other ranks by the largest RELATIVE excess,
    among those that stand out of the noise; None when none does, no pipe time is provided or there are fewer than
    MIN_RANKS ranks.

    Busy time is compared twice: the upper bound with every pipe (``busy_us_high``), and without the scalar pipe
    (``nonscalar_us_high``): a core spinning on a flag runs a scalar loop, so a waiting core's scalar time rises
    with its wait, and only the non-scalar comparison is blind to that. The rank is chosen on the non-scalar
    comparison when the role's vector/MTE pipes are provided, else on busy time; both are given. The non-scalar
    comparison is net of polling (poll_slopes): a poll that shows on MTE2 does not make a waiting rank busier.

    A (rank, role) stands out when its excess is (a) at least ``min_excess`` of the peers' median (a floor; 0 lets
    the noise alone decide) and (b) at least z_min noise units, where the noise is the measured spread of the same
    role (_rank_table) and z_min the one-sided quantile of ``alpha`` shared over every (role, rank) compared
    (Bonferroni), of Student's t at the spread's degrees of freedom (normal when the cores' spread decides): with no
    fault, a rank is named in at most about ``alpha`` of runs. With fewer than MIN_PEERS_FOR_SPREAD + 1 ranks the
    spread between ranks is not measured (``spread_measured`` false): the cores' spread alone cannot tell a
    difference between whole ranks from an excess, and the output says so.

    LocalWindowCopy runs on every core after its role: when every role of the named rank stands out by about the
    same µs, the slow part is LocalWindowCopy (the receive side); by about the same fraction, the rank's own work
    as a whole (``every_role``); the PMU cannot split a core's time between its role and LocalWindowCopy."""
    known = cores.dropna(subset=["busy_us_high"])
    known = known[known["role"] != "unassigned"]
    if known.empty or known["rank"].nunique() < MIN_RANKS:
        return None
    busy = _rank_table(known, "busy_us_high")
    slopes: dict[str, tuple[float, float]] = {}
    nonscalar = busy.iloc[0:0]
    if "nonscalar_us_high" in known and known["nonscalar_us_high"].notna().any():
        known, nonscalar, slopes = _net_of_polling_table(known)
    ranked_by = "nonscalar_us_high" if not nonscalar.empty else "busy_us_high"
    table = nonscalar if ranked_by == "nonscalar_us_high" else busy
    net = "nonscalar_net_us" if ranked_by == "nonscalar_us_high" else "busy_us"  # the columns the excess is read from
    table = standing_out(table, min_excess, alpha)
    standing = table[table["out"]].sort_values(["ratio", "excess"], ascending=False)
    if standing.empty:
        return None
    top = standing.iloc[0]
    rank = int(top["rank"])
    # Once the rank is named, whether its other roles exceed too is a family of its own roles only.
    mine = standing_out(table[table["rank"] == rank], min_excess, alpha)
    pattern = _every_role(mine)
    role = "LocalWindowCopy" if pattern == "same_us" else str(top["role"])
    shared = list(mine["role"]) if pattern == "same_us" else [str(top["role"])]

    top_role = str(top["role"])
    b = excess_entry(busy, rank, top_role)
    return {
        "rank": rank,
        "role": role,
        "role_on_top": top_role,
        "busy_us_high": b["us"],
        "peers_median_us": b["peers_median_us"],
        "excess_us": b["excess_us"],
        "excess_ratio": b["excess_ratio"],
        "nonscalar": excess_entry(nonscalar, rank, top_role),
        "ranked_by": ranked_by,
        "ranked_excess_ratio": float(top["ratio"]),
        # the role's cost side, per core and launch (for LocalWindowCopy the µs its rank's roles share), on the ranked
        # busy time: its upper bound (pipes summed) and lower bound (the largest pipe); pipes overlap, the work's
        # excess on those pipes lies between. Without the scalar pipe, a role's scalar work is left out too.
        "excess_us_per_launch": _excess_on(known, rank, shared, f"{net}_high"),
        "excess_us_per_launch_low": _excess_on(known, rank, shared, f"{net}_low"),
        "poll_slope": {role: s for role, (s, _) in slopes.items()},
        "poll_slope_stderr": {role: e for role, (_, e) in slopes.items()},
        "z_min": float(top["z_min"]),
        "alpha": alpha,
        "spread_measured": bool(top["spread_measured"]),
        "every_role": pattern is not None,
        "every_role_pattern": pattern,
        "roles_standing_out": [
            {"role": str(r.role), "excess_us": float(r.excess), "excess_ratio": float(r.ratio)}
            for r in mine[mine["out"]].sort_values("ratio", ascending=False).itertuples()
        ],
        "definition": (
            "per rank and role the median busy-time upper bound over the role's cores and launches, against the same "
            "role's median on the other ranks; the largest relative excess among those at least "
            "pmu.busiest_min_excess of the peers' median and z_min noise units (the spread between ranks, or the "
            "cores' spread; z_min: pmu.busiest_alpha shared over every role and rank, Student's t); ranked without "
            "the scalar pipe (a polling loop runs there) when vector/MTE times are provided, net of polling "
            "(poll_slope x the core's aiv_time beyond its role's median); excess_us_per_launch is the named rank's "
            "excess per core and launch on the ranked busy time's upper bound (pipes summed), "
            "excess_us_per_launch_low on its lower bound (the largest pipe): pipes overlap, the excess of the work on "
            "those pipes lies between; without the scalar pipe a role's "
            "scalar work is left out (excess_us keeps it, polls included)"
        ),
    }


def role_boundaries(cores: pd.DataFrame, roles: Sequence[Mapping[str, Any]], jump: float = 0.3) -> dict[str, Any]:
    """Check kernel.roles against the data: the per-core profile (each pipe's share of the pipe time, median over
    ranks by AIV index; shares, because waiting dilutes raw ratios) should change where the configured roles change
    and stay alike inside a role. A boundary is observed between AIV i and i+1 when the shares move by more than
    ``jump`` (sum of absolute differences, at most 2)."""
    ratios = [f"aiv_{p}_ratio" for p in PIPES if f"aiv_{p}_ratio" in cores and cores[f"aiv_{p}_ratio"].notna().any()]
    configured = [int(b) for b in np.cumsum([int(r["count"]) for r in roles])[:-1]]
    if not ratios:
        return {"checked": False, "reason": "no pipe ratios provided", "configured": configured}
    shares = cores[ratios].div(cores[ratios].sum(axis=1), axis=0).assign(aiv_index=cores["aiv_index"])
    profile = shares.groupby("aiv_index")[ratios].median().sort_index()
    steps = profile.diff().abs().sum(axis=1).iloc[1:]
    observed = [int(i) for i, v in steps.items() if v > jump]
    unexpected = sorted(set(observed) - set(configured))
    # Inside a role the profile can change for the kernel's own reasons: a role with more cores than work (URMASendToken
    # serves a range of destination ranks per core, docs/formats.md §3) leaves its last cores polling. What
    # tells the two apart is how busy the cores on each side are: given as facts, not judged here.
    busy = (cores[ratios].sum(axis=1)).groupby(cores["aiv_index"]).median()
    edges = [0, *configured, int(cores["aiv_index"].max()) + 1]
    names = [str(r["name"]) for r in roles]
    detail = []
    for b in unexpected:
        k = int(np.searchsorted(edges, b, side="right")) - 1
        lo, hi = edges[k], edges[k + 1]
        cuts = [c for c in observed if lo < c < hi]
        left, right = max([lo, *[c for c in cuts if c < b]]), min([hi, *[c for c in cuts if c > b]])
        detail.append(
            {
                "aiv": b,
                "role": names[k] if k < len(names) else None,
                "role_aiv": [lo, hi - 1],
                "before_aiv": [left, b - 1],
                "from_aiv": [b, right - 1],
                "busy_share_before": float(busy.loc[left : b - 1].median()),
                "busy_share_from": float(busy.loc[b : right - 1].median()),
            }
        )
    check = {
        "checked": True,
        "configured": configured,
        "observed": observed,
        "unexpected": unexpected,
        "unexpected_detail": detail,
        "not_seen": sorted(set(configured) - set(observed)),
        "definition": (
            f"AIV index where the median pipe-share profile moves by more than {jump} from the core "
            "before it; busy share: a core's pipe ratios summed (median over ranks and launches)"
        ),
    }
    return {**check, "sentence": boundaries_sentence(check)}


def boundaries_sentence(check: Mapping[str, Any]) -> str:
    """kernel.roles against the data in words: where they agree, and for each boundary they do not share, what the
    cores on either side do (a role's idle cores and a missing boundary both show; the reader knows which to expect)."""
    text = (
        f"kernel.roles against the data: configured role boundaries at AIV {', '.join(map(str, check['configured']))}; "
        f"the per-core pipe-share profile changes at {', '.join(map(str, check['observed'])) or 'none'}"
    )
    if not check["unexpected"] and not check["not_seen"]:
        return text + ": they agree."
    parts = []
    described = {d["aiv"] for d in check.get("unexpected_detail", [])}
    parts += [f"an unexpected change at AIV {b}" for b in check["unexpected"] if b not in described]

    def span(lo_hi: Sequence[int]) -> str:
        return f"AIV {lo_hi[0]}" if lo_hi[0] == lo_hi[1] else f"AIV {lo_hi[0]}-{lo_hi[1]}"

    for d in check.get("unexpected_detail", []):
        role = f"inside {d['role']} ({span(d['role_aiv'])}) " if d["role"] else ""
        parts.append(
            f"{role}the profile changes at AIV {d['aiv']}: {span(d['from_aiv'])} keep their pipes busy "
            f"{100 * d['busy_share_from']:.0f}% of the time against {100 * d['busy_share_before']:.0f}% for "
            f"{span(d['before_aiv'])}: idle cores of the role (more cores than work: URMASendToken "
            "serves a range of destination ranks per core) or a role boundary that kernel.roles lacks"
        )
    if check["not_seen"]:
        parts.append(
            f"no change at configured AIV {', '.join(map(str, check['not_seen']))}: "
            "two roles alike there, or kernel.roles off by some cores"
        )
    said = "; ".join(parts)
    return f"{text}. {said[0].upper()}{said[1:]}. Check kernel.roles where that is not what the kernel does."


def ordering(stats: Mapping[str, Mapping[str, Any]], key: str) -> list[str]:
    """Roles by a statistic, largest first; roles where it is not provided go last."""
    return sorted(stats, key=lambda r: (stats[r][key] is None, -(stats[r][key] or 0.0)))


def longest_cores(cores: pd.DataFrame, n: int = 5) -> list[dict[str, Any]]:
    """The n longest (rank, core, launch) rows: with several launches one core may appear once per launch."""
    top = cores.dropna(subset=["aiv_time_us"]).nlargest(n, "aiv_time_us")
    return [
        {
            "rank": int(r.rank),
            "launch": int(r.launch),
            "aiv_index": int(r.aiv_index),
            "role": r.role,
            "aiv_time_us": float(r.aiv_time_us),
            "aiv_icache_miss_rate": None if pd.isna(r.aiv_icache_miss_rate) else float(r.aiv_icache_miss_rate),
        }
        for r in top.itertuples()
    ]


def per_rank_roles(cores: pd.DataFrame) -> dict[str, dict[str, dict[str, float | None]]]:
    """Per rank and role, medians pooled over the role's cores and every launch of that rank."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for (rank, role), group in cores.groupby(["rank", "role"], sort=True):
        out.setdefault(str(int(rank)), {})[str(role)] = {
            "aiv_time_us_median": _stat(group["aiv_time_us"], "median"),
            "aiv_icache_miss_rate_median": _stat(group["aiv_icache_miss_rate"], "median"),
        }
    return out


def core_grids(cores: pd.DataFrame, roles: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """rank x AIV index heat maps of busy time (upper bound) and no-pipe time, ranks binned for large clusters, with
    the configured role bands (AIV index ranges). A cell is the median over the core's launches."""
    bands, start = [], 0
    for role in roles:
        bands.append({"role": role["name"], "first": start, "last": start + int(role["count"]) - 1})
        start += int(role["count"])
    out: dict[str, Any] = {"role_bands": bands}
    for key, column in (("busy_us", "busy_us_high"), ("no_pipe_us", "no_pipe_us")):
        wide = cores.pivot_table(index="rank", columns="aiv_index", values=column, aggfunc="median")
        out[key] = binned_grid(wide.to_numpy(), wide.index.to_numpy(), wide.columns.to_numpy(), max_columns=512)
    return out
