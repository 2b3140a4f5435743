"""Rule history: this run's record in the history store, and the gate's verdict against the runs before it.

The record is built from the stages' own outputs (baseline stats and latency table, the timeline's cost account,
the PMU roles), so a run whose timeline or PMU is not ok still lands its latency. The run id is a hash of the series
and the measured latencies: a re-analysis of one collection keeps its id (its record is replaced), a new collection
gets a new one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dispatchprof.analysis.compare import maxima
from dispatchprof.analysis.history import GateSettings, gate
from dispatchprof.formats.history_store import COLUMNS, read_store, record_path, record_table
from dispatchprof.shell.atomic import write_table_parquet_atomic

LATENCY = (("kernel", "median"), ("kernel", "p95"), ("api", "median"), ("api", "p95"))


@dataclass(frozen=True)
class RunFiles:
    """What the record is built from; a layer whose stage was not ok is None."""

    latency: pd.DataFrame
    baseline: Mapping[str, Any]
    timeline: Mapping[str, Any] | None
    pmu: Mapping[str, Any] | None
    cores: pd.DataFrame | None  # the PMU's per-core table (rank, role, busy_us_high), when PMU is ok
    env: Mapping[str, Any]
    build: Mapping[str, Any]


def _row(kind: str, metric: str, value: Any, ci: Any = None, better: str = "") -> dict[str, Any]:
    low, high = ci if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None)
    return {"kind": kind, "metric": metric, "value": float(value), "ci_low": low, "ci_high": high, "better": better}


def _where(cause: Mapping[str, Any]) -> str:
    if cause.get("rank") is not None:
        return f"rank{cause['rank']}"
    if cause.get("node") is not None:
        return f"node{cause['node']}"
    ranks = cause.get("ranks") or []
    return "ranks" + "-".join(str(r) for r in ranks) if ranks else "group"


def value_rows(files: RunFiles) -> list[dict[str, Any]]:
    """The gated headlines, the causes' costs, the explaining layers and the raw per-iteration maxima."""
    rows = []
    for scope, stat in LATENCY:
        block = files.baseline.get("scopes", {}).get(scope, {}).get("per_iteration_max_us") or {}
        if block.get(stat) is not None:
            rows.append(_row("metric", f"latency.{scope}.{stat}", block[stat], block.get(f"{stat}_ci95"), "lower"))
    link = files.baseline.get("bandwidth") or {}
    if link.get("efficiency") is not None:
        rows.append(_row("metric", "links.efficiency", link["efficiency"], link.get("efficiency_ci95"), "higher"))
    for rank, block in (files.baseline.get("scopes", {}).get("kernel", {}).get("per_rank") or {}).items():
        rows.append(_row("layer", f"latency.rank{rank}.median", block["median_us"]))
    if files.timeline is not None:
        excess = (files.timeline.get("summary") or {}).get("excess") or {}
        if excess.get("period_us_per_launch") is not None:
            rows.append(_row("metric", "timeline.excess_us", excess["period_us_per_launch"], None, "lower"))
        for cause in files.timeline.get("causes") or []:
            if cause.get("cost_us_per_launch") is not None:
                name = f"cause.{cause.get('evidence', 'unknown')}.{_where(cause)}"
                rows.append(_row("cause", name, cause["cost_us_per_launch"], cause.get("cost_ci_us"), "lower"))
    for role, block in ((files.pmu or {}).get("roles") or {}).items():
        for key, metric in (("busy_us_median_high", "busy_us"), ("aiv_icache_miss_rate_median", "icache_miss")):
            if block.get(key) is not None:
                rows.append(_row("layer", f"pmu.{role}.{metric}", block[key]))
    rows += rank_role_rows(files.cores)
    for scope in ("kernel", "api"):
        for value in maxima(files.latency[files.latency["scope"] == scope]):
            rows.append(_row("sample", f"latency.{scope}.max_us", value))
    return rows


def rank_role_rows(cores: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Each rank's busy time per role (median over its cores and launches, net of polling): what names the rank
    whose own work moved when the timeline sees only ranks ending late together."""
    if cores is None or cores.empty or not {"rank", "role", "busy_us_high"} <= set(cores.columns):
        return []
    busy = cores.dropna(subset=["role"]).groupby(["rank", "role"])["busy_us_high"].median().dropna()
    return [_row("layer", f"pmu.rank{rank}.{role}.busy_us", value) for (rank, role), value in busy.items()]


def identity(files: RunFiles, experiment: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """Who made the run and on what: what may explain a change that no layer shows."""
    nodes = files.env.get("nodes") or []
    versions = {
        f"node{n.get('node')}.{name}": (v or {}).get("version")
        for n in nodes
        for name, v in (n.get("versions") or {}).items()
        if isinstance(v, Mapping)
    }
    return {
        "experiment": experiment,
        "hosts": [n.get("hostname") for n in nodes],
        "versions": versions,
        "deepep_sha": files.build.get("sha") or files.build.get("repo_commit"),
        "libraries": {lib.get("path"): lib.get("sha256") for lib in files.build.get("libraries") or []},
        "shape": dict(config.get("shape") or {}),
    }


def toolchain_of(config: Mapping[str, Any]) -> str:
    """sim or cann for a collection; none for imported data (what the workflow knows of how it was made)."""
    return "none" if config.get("mode") == "analyze" else str(config.get("toolchain"))


def comparable_key(files: RunFiles, config: Mapping[str, Any]) -> dict[str, Any]:
    """What two runs must share to be compared: kernel, shape, cluster size, toolchain, chip."""
    chips = sorted((files.timeline or {}).get("chips") or [])
    cluster = config.get("cluster") or {}
    return {
        "kernel": (config.get("kernel") or {}).get("name"),
        "shape": json.dumps(config.get("shape") or {}, sort_keys=True),
        "nodes": cluster.get("nodes"),
        "ranks_per_node": cluster.get("ranks_per_node"),
        "toolchain": toolchain_of(config),
        "chip": chips[0] if chips else None,
    }


def run_id(series: str, latency: pd.DataFrame) -> str:
    digest = hashlib.sha256(series.encode())
    digest.update(np.ascontiguousarray(latency["us"].to_numpy(dtype=float)).tobytes())
    return digest.hexdigest()[:16]


def record(files: RunFiles, series: str, recorded_at: str, config: Mapping[str, Any], experiment: str) -> pd.DataFrame:
    values = pd.DataFrame(value_rows(files))
    ident = {
        "run_id": run_id(series, files.latency),
        "series": series,
        "recorded_at": recorded_at,
        "toolchain": toolchain_of(config),
        "comparable": json.dumps(comparable_key(files, config), sort_keys=True),
        "identity": json.dumps(identity(files, experiment, config), sort_keys=True, default=str),
    }
    return values.assign(**ident).loc[:, list(COLUMNS)]


def write_record(root: Path, series: str, run_id: str, rows: pd.DataFrame) -> Path:
    """One run's record, atomically (a reader sees the old file or the new one; concurrent runs each land theirs)."""
    target = record_path(root, series, run_id, str(rows["recorded_at"].iloc[0]))
    write_table_parquet_atomic(target, record_table(rows, run_id))
    return target


def environment_changes(rows: pd.DataFrame, newest: str) -> list[str]:
    """Identity keys (versions, hosts, the ascend_deepep sha) that differ between the newest run and the reference
    run just before it: a change no layer shows may come from them."""
    runs = rows.drop_duplicates("run_id").set_index("run_id")[["recorded_at", "identity"]].sort_values("recorded_at")
    earlier = runs[runs.index != newest]
    if earlier.empty:
        return []
    mine, theirs = json.loads(runs.loc[newest, "identity"]), json.loads(earlier["identity"].iloc[-1])
    changed = []
    for key in ("hosts", "deepep_sha", "versions", "libraries"):
        if mine.get(key) != theirs.get(key):
            changed.append(f"{key}: {theirs.get(key)} -> {mine.get(key)}")
    return changed


def land_and_gate(root: Path, rows: pd.DataFrame, settings: GateSettings) -> dict[str, Any]:
    """Write this run's record, read the series back (the record included) and decide."""
    series, newest = rows["series"].iloc[0], rows["run_id"].iloc[0]
    notes = []
    try:
        path = write_record(root, series, newest, rows)
    except OSError as exc:
        path = None
        notes.append(f"the record could not be written under {root} ({exc}); the gate used the store as it is")
    # the gate looks at the last `window` comparable runs: read a few times that many, the newest included
    store = read_store(root, series, last=3 * settings.window)
    notes.extend(store.skipped)
    history = store.rows
    if newest not in set(history["run_id"]):
        history = pd.concat([history, rows[rows["kind"] != "sample"]], ignore_index=True)
    result = gate(history, newest, settings)
    result.update(
        run_id=newest,
        series=series,
        record=str(path) if path else None,
        environment_changes=environment_changes(history, newest),
        notes=notes,
    )
    return result
