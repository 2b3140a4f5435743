"""The report's pictures of what the stages computed, drawn at report time: embedded in report.html (it stays one
file), and written as files into the figures directory beside report.md, which links them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from dispatchprof.shell.atomic import atomic_path, write_text_atomic

from dispatchprof.report.cost_svg import causes_svg, offsets_svg
from dispatchprof.report.heatmap_svg import heatmap_svg
from dispatchprof.report.launch_svg import launch_svg
from dispatchprof.report.link_svg import bound_bars_svg, node_pair_matrix, node_pairs_svg


def render_figures(
    timeline: dict[str, Any] | None, pmu: dict[str, Any] | None, pcsampling: dict[str, Any] | None, figures: Path
) -> None:
    """Adds to each stage's report context its pictures: the entry waits per rank and launch (timeline
    ``entry_wait_svg``), the causes by cost with CIs (``causes_svg``), each rank's arrival and end offsets
    (``offsets_svg``), a typical and the costliest launch per rank (``launch_svg``, shown with the Answer), busy and
    no-pipe time per rank and AIV core (pmu ``busy_svg``, ``no_pipe_svg``): inline SVG text; the stall reasons per role
    (pcsampling ``per_role_img``): an SVG file in ``figures`` drawn by matplotlib, the
    only one that needs it, imported only then (~0.65 s), embedded as a data: URI."""
    if timeline and timeline["stats"].get("entry_wait_heatmap"):
        grid = timeline["stats"]["entry_wait_heatmap"]
        timeline["entry_wait_svg"] = heatmap_svg(grid, f"Entry wait per rank and launch ({grid['what']})", "launch")
    if timeline and timeline["stats"].get("causes"):
        timeline["causes_svg"] = causes_svg(timeline["stats"]["causes"])
    if timeline and timeline["stats"].get("launch_picture"):
        timeline["launch_svg"] = launch_svg(timeline["stats"]["launch_picture"])
    if timeline and timeline["stats"].get("rank_offsets"):
        blamed = [r for c in timeline["stats"].get("causes") or [] for r in c["ranks"]]
        timeline["offsets_svg"] = offsets_svg(timeline["stats"]["rank_offsets"], blamed)
    if pmu and pmu.get("heatmaps"):
        maps = pmu["heatmaps"]
        pmu["busy_svg"] = heatmap_svg(
            maps["busy_us"],
            "Busy time per rank and AIV core (upper bound: some pipe active)",
            "AIV index",
            maps["role_bands"],
        )
        pmu["no_pipe_svg"] = heatmap_svg(
            maps["no_pipe_us"],
            "No pipe active per rank and AIV core (polling, fetch, stalls)",
            "AIV index",
            maps["role_bands"],
        )
    per_role = (pcsampling or {}).get("per_role")
    if per_role:
        from dispatchprof.report import plots
        from dispatchprof.report.html import embed_svg

        path = figures / "pcsampling_stalls_per_role.svg"
        plots.stacked_shares(
            {role: r["stalls"] for role, r in per_role.items()},
            "Reasons not to issue, per role (its SIMT functions)",
            path,
        )
        pcsampling["per_role_img"] = embed_svg(path)


def render_link_figures(baseline: dict[str, Any] | None, simulated: bool) -> None:
    """Adds to the baseline's report context the links section's pictures (its stats' ``bandwidth``): the bytes per
    node pair (``node_pairs_svg``) and the measured kernel time against each class's bound (``link_bound_svg``)."""
    bandwidth = (baseline or {}).get("stats", {}).get("bandwidth")
    if not baseline or not bandwidth:
        return
    if bandwidth.get("bytes"):
        baseline["node_pairs_svg"] = node_pairs_svg(node_pair_matrix(bandwidth["bytes"]), simulated)
    if bandwidth.get("links"):
        measured = ((baseline["stats"].get("scopes") or {}).get("kernel") or {}).get("per_iteration_max_us")
        baseline["link_bound_svg"] = bound_bars_svg(bandwidth, measured, simulated)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def figure_files(
    figures: Path,
    timeline: dict[str, Any] | None,
    pmu: dict[str, Any] | None,
    debugclock: dict[str, Any] | None,
    baseline_plots: Path | None,
    baseline: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Every chart of the report as a file in ``figures`` (written atomically), for report.md: the SVGs that
    ``render_figures`` and the DebugClock section drew, the baseline stage's PNG plots copied (the report directory
    stands alone), the PC-sampling chart already there. Returns name -> the link from the report's directory."""
    texts: dict[str, str] = {}
    for name, key in (
        ("entry_wait", "entry_wait_svg"),
        ("causes", "causes_svg"),
        ("rank_offsets", "offsets_svg"),
        ("launch", "launch_svg"),
    ):
        if timeline and timeline.get(key):
            texts[name] = timeline[key]
    for name, key in (("pmu_busy", "busy_svg"), ("pmu_no_pipe", "no_pipe_svg")):
        if pmu and pmu.get(key):
            texts[name] = pmu[key]
    for name, key in (("links_node_pairs", "node_pairs_svg"), ("links_bound", "link_bound_svg")):
        if baseline and baseline.get(key):
            texts[name] = baseline[key]
    for role, svg in ((debugclock or {}).get("charts") or {}).items():
        if svg:
            texts[f"debugclock_phases_{role}"] = svg
    for key, svg in ((debugclock or {}).get("wait_work_svgs") or {}).items():
        texts[f"debugclock_{key}"] = svg
    links = {}
    for name, text in texts.items():
        write_text_atomic(figures / f"{_slug(name)}.svg", text)
        links[name] = f"{figures.name}/{_slug(name)}.svg"
    for png in sorted(baseline_plots.glob("*.png")) if baseline_plots and baseline_plots.is_dir() else []:
        with atomic_path(figures / f"baseline_{png.name}") as tmp:
            shutil.copyfile(png, tmp)
        links[f"baseline_{png.stem}"] = f"{figures.name}/baseline_{png.name}"
    for svg in sorted(figures.glob("pcsampling_*.svg")):
        links[svg.stem] = f"{figures.name}/{svg.name}"
    return links
