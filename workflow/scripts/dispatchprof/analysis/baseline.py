"""The baseline stage's analysis: the kernel-scope and full-API tables, their statistics, and bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from dispatchprof.analysis.latency import latency_statistics, name_slowest, select_measured
from dispatchprof.analysis.linkbound import link_bound
from dispatchprof.analysis.traffic import DEFINITIONS, bandwidths, byte_accounting, compare_bytes, csv_bytes, link_bytes
from dispatchprof.formats.latency_csv import LatencyTable, parse_api_csv

BOUNDARY = {
    "kernel": (
        "kernel scope: per rank the max over AIV cores of the kernel's "
        "own clock, after the entry barrier (outer barriers excluded)"
    ),
    "event": "event scope: the whole kernel between ACL events, outer barriers included",
    None: "unspecified legacy boundary (the CSV has no measurement column)",
}
# How per-rank differences read in each scope of a collective kernel (docs/formats.md §3).
INTERPRETATION = {
    "kernel": (
        "after the entry barrier: per-rank differences are the rank's "
        "own work plus waits inside the kernel (counts, incoming tokens)"
    ),
    "event": (
        "includes the entry barrier: a late rank shows as the shortest and the ranks that waited for it as the longest"
    ),
    None: "boundary unspecified (legacy CSV): per-rank differences cannot be read as own work or waiting",
}
API_SCOPE = "full-API scope: host wall time around dispatch(...) plus torch.npu.synchronize(), per call"


def load_api(run_dir: Path, max_us: float | None = None) -> pd.DataFrame | None:
    files = sorted((run_dir / "api").glob("*.csv"))
    if not files:
        return None
    return pd.concat([parse_api_csv(f, max_us) for f in files], ignore_index=True)


def api_boundary(run_dir: Path | None) -> str:
    """The full-API scope's label, naming the clock when it was not the host's wall clock (the driver's
    api/clock.json; the simulated cluster times its modelled host path)."""
    path = run_dir / "api" / "clock.json" if run_dir else None
    if path is None or not path.is_file():
        return API_SCOPE
    try:
        clock = json.loads(path.read_text(encoding="utf-8-sig")).get("clock", "time.perf_counter")
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        return f"{API_SCOPE}; clock unknown ({path} is not the driver's JSON: {exc})"
    if clock == "time.perf_counter":
        return API_SCOPE
    return f"{API_SCOPE}; timed on {clock} (DISPATCHPROF_HOST_CLOCK), a modelled host path, not wall time"


def load_json_dir(directory: Path) -> list[dict[str, Any]]:
    return (
        [json.loads(p.read_text(encoding="utf-8-sig")) for p in sorted(directory.glob("*.json"))]
        if directory.is_dir()
        else []
    )


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
    peaks: Mapping[str, Mapping[str, Any]] | None = None,
    far_below: float = 0.6,
) -> dict[str, Any]:
    boot = config["stats"]["bootstrap"]
    args = dict(
        resamples=boot["resamples"],
        seed=boot["seed"],
        akl_last_n=config["stats"]["akl_last_n"],
        tail_ci_ratio=config["stats"]["tail_ci_ratio"],
    )
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
    scopes["kernel"]["slowest_named"] = name_slowest(
        scopes["kernel"], kernel.measurement, config["stats"]["own_excess_min_us"]
    )
    scopes["api"] = (
        {**latency_statistics(api, **args), "boundary": api_scope}
        if api is not None
        else {"available": False, "reason": api_missing_reason}
    )
    traffic = bytes_section(kernel, routing, config)
    links = link_section(routing, config)
    return {
        "scopes": scopes,
        "bytes": traffic,
        "bandwidth": link_bound(links, peaks or {}, scopes["kernel"].get("per_iteration_max_us"), far_below),
    }


def routing_shape(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """hidden and dtype of the recorded routing: shape: when
    collected here, analyze.shape when imported (may be unknown)."""
    return config["shape"] if config["mode"] == "collect" else (config["analyze"].get("shape") or {})


def link_section(routing: list[Mapping[str, Any]], config: Mapping[str, Any]) -> dict[str, Any]:
    """Bytes per link class from the routing (traffic.link_bytes), or why there are none."""
    shape = routing_shape(config)
    if not routing:
        where = "analyze.routing_dir is not set" if config["mode"] == "analyze" else "the perf driver wrote no routing"
        return {"available": False, "reason": f"not provided ({where})"}
    if shape.get("hidden") is None or shape.get("dtype") is None:
        return {
            "available": False,
            "reason": "not provided: the imported routing's hidden and dtype are not known (analyze.shape)",
        }
    rpn = int(config["cluster"]["ranks_per_node"])
    return link_bytes(routing, int(shape["hidden"]), str(shape["dtype"]), rpn, int(config["cluster"]["nodes"]) * rpn)


def bytes_section(kernel: LatencyTable, routing: list[Mapping[str, Any]], config: Mapping[str, Any]) -> dict[str, Any]:
    """The computed accounting, the CSV's own byte columns beside it, and the bandwidths from one of them. The computed
    accounting is used when every rank's routing was recorded (its definition is known); otherwise the CSV's
    sent_bytes (docs/formats.md §3 names the column, not what it
    counts). Durations: kernel scope, complete measured iterations."""
    shape = routing_shape(config)
    if routing and (shape.get("hidden") is None or shape.get("dtype") is None):
        traffic: dict[str, Any] = {
            "available": False,
            "reason": "the imported routing's hidden and dtype are not known (analyze.shape)",
            "definitions": DEFINITIONS,
        }
    else:
        traffic = byte_accounting(routing, shape.get("hidden", 0), shape.get("dtype", "bf16"))
    measured = select_measured(kernel.frame).measured
    traffic["csv"] = csv_bytes(kernel.work, measured) if kernel.work is not None and len(measured) else None
    traffic["agreement"] = compare_bytes(traffic, traffic["csv"]) if traffic["available"] and traffic["csv"] else None
    if traffic["available"]:
        per_call = measured[["rank", "iteration"]].assign(
            bytes=[traffic["per_rank"].get(str(int(r)), {}).get("cross_rank_token_bytes", 0) for r in measured["rank"]]
        )
        traffic["used"], label = "computed", "cross-rank token bytes (computed from the recorded routing)"
        traffic["used_why"] = (
            "every rank's routing was recorded: the computed accounting, whose definition is known, is used"
        )
    elif traffic["csv"]:
        per_call = kernel.work[["rank", "iteration", "sent_bytes"]].rename(columns={"sent_bytes": "bytes"})
        traffic["used"], label = (
            "csv",
            "the CSV's sent_bytes (docs/formats.md §3; what the work callback counts is not documented)",
        )
        traffic["used_why"] = f"no computed accounting ({traffic['reason']}): the CSV's own sent_bytes are used"
    else:
        traffic["used"], traffic["used_why"] = None, "no bytes: neither routing nor CSV work columns"
        traffic["bandwidth"] = None  # every key present in every case: the report reads them without guessing
        return traffic
    traffic["bandwidth"] = bandwidths(per_call, measured, label) if len(measured) else None
    return traffic


def summary_section(stats: Mapping[str, Any]) -> dict[str, Any]:
    """The stable summary.json keys of the baseline stage."""
    kernel = stats["scopes"]["kernel"]
    api = stats["scopes"]["api"]
    per_iter = kernel.get("per_iteration_max_us")
    section: dict[str, Any] = {
        "per_iteration_max_us": per_iter,
        "per_rank": {
            r: {k: v[k] for k in ("median_us", "p95_us", "max_us", "fraction_slowest")}
            for r, v in kernel["per_rank"].items()
        },
        "slowest_rank": kernel.get("slowest_rank"),
        "slowest_named": kernel.get("slowest_named"),
        "per_iteration_spread_us": kernel.get("per_iteration_spread_us"),
        "api_latency_us": (
            {"median": api["per_iteration_max_us"]["median"], "p95": api["per_iteration_max_us"]["p95"]}
            if api.get("per_iteration_max_us")
            else None
        ),
        "bytes": (
            {k: stats["bytes"][k] for k in ("cross_rank_token_bytes", "logical_output_bytes")}
            if stats["bytes"].get("available")
            else None
        ),
        "bandwidth": bandwidth_summary(stats.get("bandwidth")),
    }
    return section


SUMMARY_LINK_KEYS = (
    "bytes_per_launch",
    "peak_gbps",
    "peak_kind",
    "peak_source",
    "bound_us",
    "achieved_gbps",
    "efficiency",
)
SUMMARY_BOUND_KEYS = (
    "bound_us",
    "efficiency",
    "efficiency_ci95",
    "measured_us",
    "sets_bound",
    "busiest",
    "far",
    "far_below",
    "definition",
    "reason",
    "warning",
)


def bandwidth_summary(bandwidth: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """summary.json's bandwidth: per class its bytes, peak, bound, average rate and own efficiency;
    the group's bound and efficiency. Keys absent in the stats (no bound, no warning) are null."""
    if bandwidth is None:
        return None
    links = bandwidth.get("links")
    return {
        "links": {c: {k: v.get(k) for k in SUMMARY_LINK_KEYS} for c, v in links.items()} if links else None,
        **{k: bandwidth.get(k) for k in SUMMARY_BOUND_KEYS},
    }
