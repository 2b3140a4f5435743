"""Stage baseline: parse dispatch_latency.csv (and the API latency), statistics, plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from dispatchprof.analysis.baseline import analyse, api_boundary, load_api, load_json_dir, summary_section, tidy_table
from dispatchprof.analysis.latency import per_iteration_max, select_measured
from dispatchprof.shell.atomic import write_json_atomic, write_parquet_atomic
from dispatchprof.shell.config import world_ranks
from dispatchprof.formats.latency_csv import LatencyCsvError, parse_latency_csv, release_memory
from dispatchprof.report import plots
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation
from dispatchprof.tools.toolchain import configured_link_peaks, sim_link_peaks


def baseline(run: StageRun, parts: Mapping[str, Status]) -> Status:
    cfg = run.config
    csv = (
        Path(run.config["analyze"]["latency_csv"])
        if run.config["mode"] == "analyze"
        else Path(run.params["run_dir"]) / "latency" / "dispatch_latency.csv"
    )
    run_dir = Path(run.params["run_dir"]) if run.params["run_dir"] else None
    try:
        max_us = float(cfg["stats"]["max_plausible_us"])
        kernel = parse_latency_csv(csv, max_us)
        api = load_api(run_dir, max_us) if run_dir else None
    except LatencyCsvError as exc:
        return run.status("invalid", str(exc), upstream={k: p.state for k, p in parts.items()})
    world = world_ranks(cfg)
    ranks = kernel.frame["rank"].nunique()
    if ranks != world:
        return run.status("invalid", f"{csv} holds {ranks} ranks but the config has {world} (nodes x ranks_per_node)")
    routing = load_routing(cfg, run_dir)
    api_reason = "not collected in analyze mode" if run_dir is None else "the driver wrote no api latency files"
    stats = analyse(
        kernel,
        api,
        routing,
        cfg,
        api_reason,
        api_boundary(run_dir),
        link_peaks(cfg, run.toolchain),
        cfg["hardware"]["far_below"],
    )
    stats.update(
        toolchain=run.toolchain,
        source=run.source,
        identity=load_json_dir(run_dir / "identity") if run_dir else [],
        policy={
            "warmup": int(kernel.frame.groupby("iteration")["warmup"].all().sum()),
            "iterations": int(kernel.frame["iteration"].nunique()),
            "synchronize_start": (
                "requested (profile_dispatch_latency(synchronize_start=True): "
                "an untimed cross-rank barrier before each timed launch)"
                if cfg["baseline"]["synchronize_start"]
                else "off (baseline.synchronize_start: false): host lateness lands in the kernel's entry barrier"
            )
            if run_dir
            else "unknown (imported)",
            "after_each_call": "torch.npu.synchronize()" if run_dir else "unknown (imported)",
        },
    )
    stats["summary"] = summary_section(stats)
    # the tidy table (a copy of every row, its strings in Arrow memory) lives only while it is written
    write_parquet_atomic(
        run.outputs["latency"],
        tidy_table(run.experiment, kernel.frame, api, cfg["cluster"]["ranks_per_node"]),
        {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source},
    )
    release_memory()
    write_json_atomic(run.outputs["stats"], stats)

    draw_plots(run.outputs["plots"], run.toolchain, kernel.frame, api, stats["scopes"]["kernel"])
    kernel_scope = stats["scopes"]["kernel"]
    validations = latency_validations(stats, csv, str(cfg["kernel"]["clock_hz"]))
    per_iter_stats = kernel_scope["per_iteration_max_us"]
    if not per_iter_stats:
        return run.status("invalid", f"{csv}: " + "; ".join(kernel_scope["warnings"]), validations=validations)
    named = kernel_scope["slowest_named"]
    spread = kernel_scope["per_iteration_spread_us"]
    reason = (
        f"{per_iter_stats['n']} measured iterations on {ranks} ranks; per-iteration max median "
        f"{per_iter_stats['median']:.1f} us, P95 {per_iter_stats['p95']:.1f} "
        f"us, spread over ranks median {spread['median']:.1f} us; "
        + (
            f"slow by itself: rank {named['rank']}"
            if named["rank"] is not None
            else f"no rank named slow ({named['why']})"
        )
    )
    return run.status(
        "ok",
        reason,
        validations=validations,
        upstream={k: p.state for k, p in parts.items()},
        artifacts=[str(p) for p in run.outputs.values()],
    )


def load_routing(cfg: Mapping[str, Any], run_dir: Path | None) -> list[dict[str, Any]]:
    """The perf driver's routing records: its run directory's routing/
    when collected here, analyze.routing_dir when imported."""
    if run_dir:
        return load_json_dir(run_dir / "routing")
    imported = cfg["analyze"].get("routing_dir")
    return load_json_dir(Path(imported)) if imported else []


def link_peaks(cfg: Mapping[str, Any], toolchain: str) -> dict[str, dict[str, Any]]:
    """The peaks the bound uses: the simulator's capacities (sim.link_gbps) under toolchain sim (hardware.links shown
    beside them, not used: a simulated run has no hardware), else hardware.links as configured (null = "peak not
    configured")."""
    configured = configured_link_peaks(cfg["hardware"])
    if toolchain != "sim":
        return configured
    peaks = sim_link_peaks(cfg["sim"])
    for c, peak in peaks.items():
        peak["configured_peak_gbps"] = configured.get(c, {}).get("peak_gbps")
    return peaks


def draw_plots(
    plot_dir: Path, toolchain: str, frame: pd.DataFrame, api: pd.DataFrame | None, kernel_scope: Mapping[str, Any]
) -> None:
    """The baseline's PNGs: latency per rank, per-iteration max, how often each rank is the longest, the API scope."""
    label = "SIMULATED " if toolchain == "sim" else ""
    plots.rank_distributions(frame, f"{label}kernel-scope latency per rank", plot_dir / "kernel_per_rank.png")
    if kernel_scope["per_iteration_max_us"]:
        per_iter = per_iteration_max(select_measured(frame))
        plots.iteration_max_series(
            per_iter,
            0,
            f"{label}per-iteration max over ranks (kernel scope, measured iterations)",
            plot_dir / "kernel_iteration_max.png",
        )
        plots.slowest_rank_histogram(
            {r: v["fraction_slowest"] for r, v in kernel_scope["per_rank"].items()},
            f"{label}how often each rank is the longest",
            plot_dir / "slowest_rank.png",
        )
    if api is not None:
        plots.rank_distributions(api, f"{label}full-API latency per rank", plot_dir / "api_per_rank.png")


def latency_validations(stats: Mapping[str, Any], csv: Path, configured_hz: str) -> list[Validation]:
    """Warnings on the statistics, the tail, the device clock and the byte accounting (none makes the stage invalid)."""
    kernel_scope = stats["scopes"]["kernel"]
    validations = [Validation("latency statistics", True, "warning", w) for w in kernel_scope["warnings"]]
    if kernel_scope.get("tail_hint"):
        validations.append(Validation("tail stability", False, "warning", kernel_scope["tail_hint"]))
    if kernel_scope.get("clock_hz") not in (None, configured_hz):
        validations.append(
            Validation(
                "device clock",
                False,
                "warning",
                f"{csv}: clock_hz {kernel_scope['clock_hz']} differs from kernel.clock_hz "
                f"{configured_hz}: the build converted ticks with its own value",
            )
        )
    if not stats["bytes"].get("available"):
        validations.append(
            Validation("byte accounting", False, "warning", f"{stats['bytes']['reason']}; {stats['bytes']['used_why']}")
        )
    warning = (stats.get("bandwidth") or {}).get("warning")
    if warning:
        validations.append(Validation("link bound", False, "warning", warning))
    agreement = stats["bytes"].get("agreement")
    if agreement and not agreement["agree"]:
        differ = {c: p["mismatch"] for c, p in agreement["pairs"].items() if not p["agree"]}
        validations.append(
            Validation(
                "CSV bytes",
                False,
                "warning",
                f"{csv}: the CSV's byte columns differ from the computed accounting [csv, computed] per rank: {differ}",
            )
        )
    return validations
