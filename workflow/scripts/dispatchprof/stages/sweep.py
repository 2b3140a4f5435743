"""The sweep job's work between its files and its record: each point's runs read (precision and baseline states, the
kernel table, the group efficiency of the baseline's stats, the timeline's top cause when the sweep runs it), the
ranking (analysis/sweep.py), sweep.json (schema dispatchprof.sweep/1) and its Markdown and HTML pages."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from dispatchprof.analysis.compare import maxima
from dispatchprof.analysis.sweep import PointData, rank
from dispatchprof.report.sweep_svg import axes_of, axis_svg
from dispatchprof.shell.status import read_input_status
from dispatchprof.shell.sweep import Point

SCHEMA = "dispatchprof.sweep/1"


def _json(path: str | None) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text()) if path else {}
    except (OSError, ValueError):
        return {}


def top_cause(stats: Mapping[str, Any]) -> str | None:
    causes = stats.get("causes") or []
    if not causes:
        return None
    c = causes[0]
    where = f"rank {c['rank']}" if c.get("rank") is not None else f"node {c.get('node')}"
    return f"{c.get('evidence') or 'cause'} ({where})"


def load_point(point: Point, runs: Sequence[str], inputs: Mapping[str, str]) -> PointData:
    """One point from its runs' files: failed (with the first reason) when a run's precision or baseline is not ok."""
    data = PointData(point.name, point.params, point.label)
    problems, efficiencies, bounds, causes = [], [], [], []
    for run in runs:
        for stage in ("correctness", "baseline"):
            status = read_input_status(inputs[f"{stage}_{run}"])
            if not status.ok and status.state != "disabled":
                problems.append(f"{run}: {stage} {status.state} ({status.reason})")
        if problems:
            continue
        table = pd.read_parquet(inputs[f"latency_{run}"])
        data.reps.append(maxima(table[table["scope"] == "kernel"]))
        bandwidth = _json(inputs.get(f"baseline_stats_{run}")).get("bandwidth") or {}
        if bandwidth.get("efficiency") is not None:
            efficiencies.append(float(bandwidth["efficiency"]))
        if bandwidth.get("bound_us") is not None:
            bounds.append(float(bandwidth["bound_us"]))
        if f"timeline_{run}" in inputs and read_input_status(inputs[f"timeline_{run}"]).ok:
            causes.append(top_cause(_json(inputs[f"timeline_stats_{run}"])))
    if problems:
        data.state, data.reason, data.reps = "failed", "; ".join(problems), []
    data.efficiency = sum(efficiencies) / len(efficiencies) if efficiencies else None
    data.bound_us = sum(bounds) / len(bounds) if bounds else None
    named = [c for c in causes if c]
    data.top_cause = max(set(named), key=named.count) if named else None
    return data


def sweep_record(
    name: str, points: Sequence[Point], runs: Mapping[str, Sequence[str]], inputs: Mapping[str, str], boot: Mapping
) -> dict[str, Any]:
    measured = [load_point(p, runs[p.name], inputs) for p in points if p.refused is None]
    result = rank(measured, int(boot["resamples"]), int(boot["seed"]))
    result["refused"] = [
        {"name": p.name, "label": p.label, "params": p.params, "reason": p.refused} for p in points if p.refused
    ]
    return {"schema": SCHEMA, "sweep": name, **result}


def _cell(value: Any, fmt: str = "{:.2f}") -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return " .. ".join(fmt.format(v) for v in value)
    return fmt.format(value) if isinstance(value, (int, float)) else str(value)


def table_rows(record: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for p in record["points"]:
        rows.append(
            [
                str(p.get("rank") or "-"),
                p["name"],
                p["label"] or "-",
                p["state"],
                _cell(p["median_us"]),
                _cell(p["ci95"]),
                _cell(p["p95_us"]),
                _cell(p["efficiency"], "{:.1%}"),
                p["top_cause"] or "-",
                str(p["repeats"]),
                p["note"] or p["reason"] or "",
            ]
        )
    return rows


HEADER = ["rank", "point", "params", "state", "median us", "95% CI", "P95 us", "efficiency", "top cause", "repeats", ""]


def markdown(record: Mapping[str, Any], simulated: bool) -> str:
    lines = [f"# Sweep {record['sweep']}", ""]
    if simulated:
        lines += ["**SIMULATED DATA: not a measurement.**", ""]
    lines += [f"**{record['verdict']}**: {record['reason']}", "", "| " + " | ".join(HEADER) + " |"]
    lines += ["|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table_rows(record)]
    for r in record["refused"]:
        lines.append(f"\nRefused at plan time: {r['name']} ({r['label']}): {r['reason']}")
    lines += ["", f"Rule: {record['rule']}.", ""]
    return "\n".join(lines)


def pictures(record: Mapping[str, Any]) -> list[str]:
    """Latency against each axis (the keys whose values differ between the ranked points)."""
    drawn = (axis_svg(record["points"], key, record["best"]) for key in axes_of(record["points"]))
    return [svg for svg in drawn if svg]


def html_page(record: Mapping[str, Any], simulated: bool) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in table_rows(record))
    refused = "".join(f"<li>{e(r['name'])} ({e(r['label'])}): {e(r['reason'])}</li>" for r in record["refused"])
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>Sweep {e(record['sweep'])}</title></head><body>"
        f"<h1>Sweep {e(record['sweep'])}</h1>"
        + ("<p><strong>SIMULATED DATA: not a measurement.</strong></p>" if simulated else "")
        + f"<p><strong>{e(record['verdict'])}</strong>: {e(record['reason'])}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        + "".join(f"<figure>{svg}</figure>" for svg in pictures(record))
        + (f"<p>Refused at plan time:</p><ul>{refused}</ul>" if refused else "")
        + f"<p>Rule: {e(record['rule'])}.</p></body></html>\n"
    )
