"""The baseline stage's analysis: the kernel-scope and full-API tables, their statistics, and bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from dispatchprof.analysis.latency import latency_statistics, name_slowest
from dispatchprof.analysis.traffic import bandwidth_gbps, byte_accounting
from dispatchprof.formats.latency_csv import LatencyTable, parse_api_csv

BOUNDARY = {
    "kernel": "kernel scope: per rank the max over AIV cores of the kernel's own clock, after the entry barrier (outer barriers excluded)",
    "event": "event scope: the whole kernel between ACL events, outer barriers included",
    None: "unspecified legacy boundary (the CSV has no measurement column)",
}
# How per-rank differences read in each scope of a collective kernel (shared/formats/deepep.md §1, §4b).
INTERPRETATION = {
    "kernel": "after the entry barrier: per-rank differences are the rank's own work plus waits inside the kernel (counts, incoming tokens)",
    "event": "includes the entry barrier: a late rank shows as the shortest and the ranks that waited for it as the longest",
    None: "boundary unspecified (legacy CSV): per-rank differences cannot be read as own work or waiting",
}
API_SCOPE = "full-API scope: host wall time around dispatch(...) plus torch.npu.synchronize(), per call"


def load_api(run_dir: Path) -> pd.DataFrame | None:
    files = sorted((run_dir / "api").glob("*.csv"))
    if not files:
        return None
    return pd.concat([parse_api_csv(f) for f in files], ignore_index=True)


def api_boundary(run_dir: Path | None) -> str:
    """The full-API scope's label, naming the clock when it was not the host's wall clock (the driver's
    api/clock.json; the simulated cluster times its modelled host path)."""
    path = run_dir / "api" / "clock.json" if run_dir else None
    if path is None or not path.is_file():
        return API_SCOPE
    try:
        clock = json.loads(path.read_text()).get("clock", "time.perf_counter")
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        return f"{API_SCOPE}; clock unknown ({path} is not the driver's JSON: {exc})"
    if clock == "time.perf_counter":
        return API_SCOPE
    return f"{API_SCOPE}; timed on {clock} (DISPATCHPROF_HOST_CLOCK), a modelled host path, not wall time"


def load_json_dir(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))] if directory.is_dir() else []


def tidy_table(experiment: str, kernel: pd.DataFrame, api: pd.DataFrame | None, ranks_per_node: int) -> pd.DataFrame:
    """experiment, scope, rank, node, iteration, warmup, us: one row per rank, call and scope."""
    parts = [kernel.assign(scope="kernel")]
    if api is not None:
        parts.append(api.assign(scope="api"))
    frame = pd.concat(parts, ignore_index=True)
    frame["experiment"] = experiment
    frame["node"] = frame["rank"] // ranks_per_node
    return frame[["experiment", "scope", "rank", "node", "iteration", "warmup", "us"]].astype(
        {"rank": "int64", "node": "int64", "iteration": "int64", "warmup": "bool", "us": "float64"}
    )


def analyse(
    kernel: LatencyTable,
    api: pd.DataFrame | None,
    routing: list[Mapping[str, Any]],
    config: Mapping[str, Any],
    api_missing_reason: str,
    api_scope: str = API_SCOPE,
) -> dict[str, Any]:
    boot = config["stats"]["bootstrap"]
    args = dict(resamples=boot["resamples"], seed=boot["seed"], akl_last_n=config["stats"]["akl_last_n"], tail_ci_ratio=config["stats"]["tail_ci_ratio"])
    scopes: dict[str, Any] = {
        "kernel": {
            **latency_statistics(kernel.frame, **args),
            "measurement": kernel.measurement,
            "clock_hz": kernel.clock_hz,
            "boundary": BOUNDARY.get(kernel.measurement, BOUNDARY[None]),
            "interpretation": INTERPRETATION.get(kernel.measurement, INTERPRETATION[None]),
            "source_file": kernel.path,
        }
    }
    scopes["kernel"]["slowest_named"] = name_slowest(scopes["kernel"], kernel.measurement, config["stats"]["own_excess_min_us"])
    scopes["api"] = {**latency_statistics(api, **args), "boundary": api_scope} if api is not None else {"available": False, "reason": api_missing_reason}
    traffic = byte_accounting(routing, config["shape"]["hidden"], config["shape"]["dtype"])
    per_iter = scopes["kernel"]["per_iteration_max_us"]
    if traffic["available"] and per_iter:
        traffic["bandwidth"] = {
            "cross_rank_gbps_at_median": bandwidth_gbps(traffic["cross_rank_token_bytes"], per_iter["median"]),
            "definition": "cross-rank token bytes of one call (all ranks) / median of the per-iteration max kernel latency; GB/s = 1e9 B/s",
        }
    return {"scopes": scopes, "bytes": traffic}


def summary_section(stats: Mapping[str, Any]) -> dict[str, Any]:
    """The stable summary.json keys of the baseline stage."""
    kernel = stats["scopes"]["kernel"]
    api = stats["scopes"]["api"]
    per_iter = kernel.get("per_iteration_max_us")
    section: dict[str, Any] = {
        "per_iteration_max_us": per_iter,
        "per_rank": {r: {k: v[k] for k in ("median_us", "p95_us", "max_us", "fraction_slowest")} for r, v in kernel["per_rank"].items()},
        "slowest_rank": kernel.get("slowest_rank"),
        "slowest_named": kernel.get("slowest_named"),
        "per_iteration_spread_us": kernel.get("per_iteration_spread_us"),
        "api_latency_us": (
            {"median": api["per_iteration_max_us"]["median"], "p95": api["per_iteration_max_us"]["p95"]} if api.get("per_iteration_max_us") else None
        ),
        "bytes": ({k: stats["bytes"][k] for k in ("cross_rank_token_bytes", "logical_output_bytes")} if stats["bytes"].get("available") else None),
    }
    return section
