"""The history gate in the report: the Answer's line and summary.json's ``history`` key, from history.json."""

from __future__ import annotations

from typing import Any, Mapping

from dispatchprof.analysis.history import HEADLINE

SUMMARY_KEYS = ("metric", "verdict", "newest", "reference", "change", "smallest_visible", "why", "explained_by")


def summary_section(data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """summary.json's ``history`` (docs/summary.md), or None when the run has no gate (history off or skipped)."""
    if not data or data.get("state") != "ok":
        return None
    return {
        "verdict": data["verdict"],
        "compared_runs": data["compared_runs"],
        "change_points": data.get("change_points", []),
        "environment_changes": data.get("environment_changes", []),
        "metrics": [{k: m[k] for k in SUMMARY_KEYS if k in m} for m in data.get("metrics", [])],
        "record": data.get("record"),
    }


def _moved(metric: Mapping[str, Any]) -> str:
    ref = metric["reference"]
    pct = f" ({100 * metric['change'] / ref:+.1f}%)" if ref else ""
    return f"{metric['metric']} {metric['change']:+.1f}{pct}"


def _cause(entry: Mapping[str, Any]) -> str:
    return f"{entry['metric']} {entry['change']:+.1f}"


def sentence(data: Mapping[str, Any] | None) -> str | None:
    """One line: the run against its comparable history, the costliest moves and what explains them."""
    if not data:
        return None
    if data.get("state") != "ok":
        return f"History: {data.get('state') or 'unreadable'} ({data.get('reason')})."
    metrics = data.get("metrics", [])
    moved = [m for m in metrics if m["verdict"] in ("regressed", "improved")]
    n = data["compared_runs"]
    if moved:
        moved.sort(key=lambda m: (m["metric"] != HEADLINE, -abs(m["change"])))
        head = moved[0]
        since = f" since run {head['since']}" if head.get("since") else ""
        text = f"History: against {n} comparable runs, {data['verdict']}: " + "; ".join(_moved(m) for m in moved[:3])
        text += since
        causes = head.get("explained_by") or []
        if causes:
            text += "; moved with it: " + ", ".join(_cause(c) for c in causes[:3])
        if data.get("environment_changes"):
            text += "; the environment changed too: " + "; ".join(data["environment_changes"])
        return text + "."
    headline = next((m for m in metrics if m["metric"] == HEADLINE), None)
    if headline is None or headline["verdict"] == "inconclusive":
        why = (headline or {}).get("why", "the kernel latency is not in the record")
        return f"History: inconclusive against {n} comparable runs ({why})."
    ref = headline["reference"]
    pct = f" ({100 * headline['smallest_visible'] / ref:.1f}%)" if ref else ""
    return (
        f"History: unchanged against {n} comparable runs; the smallest change it could see in the kernel median is "
        f"{headline['smallest_visible']:.1f} us{pct}."
    )
