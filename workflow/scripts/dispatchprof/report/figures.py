"""The report's pictures of what the stages computed, drawn at report time and embedded: the report stays one file."""

from __future__ import annotations

from typing import Any

from dispatchprof.report.cost_svg import causes_svg, offsets_svg
from dispatchprof.report.heatmap_svg import heatmap_svg


def render_figures(timeline: dict[str, Any] | None, pmu: dict[str, Any] | None, pcsampling: dict[str, Any] | None) -> None:
    """Adds to each stage's report context its pictures: the entry waits per rank and launch (timeline
    ``entry_wait_svg``), the causes by cost with CIs (``causes_svg``), each rank's arrival and end offsets
    (``offsets_svg``), busy and no-pipe time per rank and AIV core (pmu ``busy_svg``, ``no_pipe_svg``): inline SVG
    text; the stall reasons per role (pcsampling ``per_role_png``): a PNG data: URI, the only one that needs
    matplotlib, imported only then (~0.65 s)."""
    if timeline and timeline["stats"].get("entry_wait_heatmap"):
        grid = timeline["stats"]["entry_wait_heatmap"]
        timeline["entry_wait_svg"] = heatmap_svg(grid, f"Entry wait per rank and launch ({grid['what']})", "launch")
    if timeline and timeline["stats"].get("causes"):
        timeline["causes_svg"] = causes_svg(timeline["stats"]["causes"])
    if timeline and timeline["stats"].get("rank_offsets"):
        blamed = [r for c in timeline["stats"].get("causes") or [] for r in c["ranks"]]
        timeline["offsets_svg"] = offsets_svg(timeline["stats"]["rank_offsets"], blamed)
    if pmu and pmu.get("heatmaps"):
        maps = pmu["heatmaps"]
        pmu["busy_svg"] = heatmap_svg(maps["busy_us"], "Busy time per rank and AIV core (upper bound: some pipe active)", "AIV index", maps["role_bands"])
        pmu["no_pipe_svg"] = heatmap_svg(maps["no_pipe_us"], "No pipe active per rank and AIV core (polling, fetch, stalls)", "AIV index", maps["role_bands"])
    per_role = (pcsampling or {}).get("per_role")
    if per_role:
        import tempfile
        from pathlib import Path

        from dispatchprof.report import plots
        from dispatchprof.report.html import embed_png

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "roles.png"
            plots.stacked_shares({role: r["stalls"] for role, r in per_role.items()}, "Reasons not to issue, per role (its SIMT functions)", path)
            pcsampling["per_role_png"] = embed_png(path)
