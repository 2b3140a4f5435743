"""The comparison page as data (report/model.py), rendered twice: comparison.html and comparison.md say the same.
The verdict table on top, a picture of what moved (each changed row's B - A relative to A, with its 95% CI), then
every row of every layer."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dispatchprof.analysis.compare_layers import LAYERS
from dispatchprof.report.model import Code, Figure, Paragraph, Section, Strong, Table, Text, num, text

PICTURE_ROWS = 12  # the picture shows the costliest changed rows, and the latency rows


def value(v: Any, unit: str) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return num(v, ".1f" if unit.startswith("us") else ".4g")


def ci(row: Mapping[str, Any]) -> str:
    c = row.get("ci95")
    return f"[{value(c[0], row['unit'])}, {value(c[1], row['unit'])}]" if c else "n/a"


def row_cells(row: Mapping[str, Any]) -> tuple[Text, ...]:
    return (
        text(row["layer"]),
        text(row.get("role") or ""),
        text(Code(row["metric"])),
        text(row["unit"]),
        text(value(row["a"], row["unit"])),
        text(value(row["b"], row["unit"])),
        text(value(row["difference"], row["unit"])),
        text(ci(row)),
        text(Strong(row["verdict"])),
        text(row.get("note") or ""),
    )


HEADER = ("layer", "role", "metric", "unit", "A", "B", "B - A", "95% CI", "answer", "note")


def verdict_section(c: Mapping[str, Any]) -> Section:
    blocks: list[Any] = [Paragraph(text(Strong(c.get("answer") or c["reason"])))]
    if c["state"] != "ok":
        return Section("Verdict", "verdict", tuple(blocks))
    blocks.append(Paragraph(text(c["margin"]["sentence"]), "muted"))
    if c.get("ranks"):
        blocks.append(Paragraph(text(c["ranks"]), "warning"))
    blocks += [Paragraph(text("warning: ", w), "warning") for w in c["warnings"]]
    keyed = {r["key"]: r for r in c["rows"]}
    top = [
        keyed[k]
        for k in ("precision.pass", "latency.kernel.median", "latency.api.median", "latency.kernel.p95")
        if k in keyed
    ]
    changed = [keyed[k] for k in c["changed"]]
    blocks.append(Table(HEADER, tuple(row_cells(r) for r in [*top, *(r for r in changed if r not in top)])))
    if c["expectations"]:
        rows = tuple(
            (text(Code(e["row"])), text(e["expected"]), text(Strong(e["answer"])), text(e["verdict"] or "no such row"))
            for e in c["expectations"]
        )
        blocks.append(Table(("expected row", "expected", "answer", "row's verdict"), rows))
    blocks.append(
        Paragraph(text(c["rule"], ". Factors that differ: ", ", ".join(c["factors"]) or "none", "."), "muted")
    )
    return Section("Verdict", "verdict", tuple(blocks))


def picture(rows: Sequence[Mapping[str, Any]], changed: Sequence[str]) -> str:
    """An SVG: per row, B - A as a share of A (a bar) and its 95% CI (a line), zero in the middle."""
    keyed = {r["key"]: r for r in rows}
    keys = [k for k in ("latency.kernel.median", "latency.api.median", "latency.kernel.p95") if k in keyed]
    keys += [k for k in changed if k not in keys][:PICTURE_ROWS]
    shown = [
        keyed[k]
        for k in keys
        if isinstance(keyed[k]["a"], (int, float)) and keyed[k]["a"] and keyed[k]["difference"] is not None
    ]
    if not shown:
        return ""
    rel = [
        (r["difference"] / abs(r["a"]), [x / abs(r["a"]) for x in r["ci95"]] if r.get("ci95") else None) for r in shown
    ]
    scale = max(0.01, *(abs(x) for d, c in rel for x in (d, *(c or ()))))
    width, left, mid, height = 760, 330, 545, 22 * len(shown) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="12" font-family="sans-serif">'
    ]
    out.append(f'<line x1="{mid}" y1="0" x2="{mid}" y2="{height - 20}" stroke="#57606a"/>')
    out.append(
        f'<text x="{mid}" y="{height - 5}" text-anchor="middle">0 (B - A relative to A; full width {100 * scale:.1f}%)</text>'
    )
    colours = {"improved": "#1a7f37", "regressed": "#cf222e", "appeared": "#cf222e", "gone": "#1a7f37"}
    for i, (r, (d, c)) in enumerate(zip(shown, rel)):
        y = 10 + 22 * i
        x = mid + d / scale * (width - mid - 10)
        colour = colours.get(r["verdict"], "#8c959f")
        label = f"{r['key']} ({r['verdict']})".replace("&", "&amp;").replace("<", "&lt;")
        out.append(f'<text x="{left - 5}" y="{y + 12}" text-anchor="end">{label[:55]}</text>')
        out.append(f'<rect x="{min(mid, x):.1f}" y="{y + 3}" width="{abs(x - mid):.1f}" height="12" fill="{colour}"/>')
        if c:
            x0, x1 = (mid + v / scale * (width - mid - 10) for v in c)
            out.append(
                f'<line x1="{x0:.1f}" y1="{y + 9}" x2="{x1:.1f}" y2="{y + 9}" stroke="#24292f" stroke-width="1.5"/>'
            )
    out.append("</svg>")
    return "\n".join(out)


def picture_section(c: Mapping[str, Any], svg: str, path: str) -> Section:
    caption = (
        "what moved: each row's B - A as a share of A (bar, green better, red worse, grey neither) and its 95% CI "
        "(line); the latency rows first, then the changed rows costliest first"
    )
    return Section("What moved", "moved", (Figure("what moved", path=path, svg=svg, caption=caption),) if svg else ())


def rows_section(c: Mapping[str, Any]) -> Section:
    rows = sorted(c["rows"], key=lambda r: LAYERS.index(r["layer"]))
    return Section("Every row", "rows", (Table(HEADER, tuple(row_cells(r) for r in rows)),))


def latency_detail_section(c: Mapping[str, Any]) -> Section:
    """Today's latency detail: both CIs (hierarchical, and flat with iterations as independent), the ratio, and
    where the variance of the per-iteration maxima is (between or within repeats)."""
    rows, splits = [], []
    for scope in ("kernel", "api"):
        s = c.get(scope) or {}
        for label, key in (
            ("per-iteration max, median", "per_iteration_max_median"),
            ("per-iteration max, P95", "per_iteration_max_p95"),
        ):
            d = s.get(key)
            if not d or d.get("ci95") is None:
                continue
            ratio = (
                f"{d['ratio']:.3f} [{d['ratio_ci95'][0]:.3f}, {d['ratio_ci95'][1]:.3f}]"
                if d.get("ratio_ci95")
                else "n/a"
            )
            flat = f"[{d['flat_ci95'][0]:+.1f}, {d['flat_ci95'][1]:+.1f}]" if d.get("flat_ci95") else "n/a"
            rows.append(
                tuple(
                    text(x)
                    for x in (
                        scope,
                        label,
                        num(d["a"]),
                        num(d["b"]),
                        num(d["difference"], "+.1f"),
                        f"[{d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f}]",
                        ratio,
                        flat,
                    )
                )
            )
        for side, v in (s.get("variance") or {}).items():
            share = (
                f"{100 * v['between_fraction']:.0f}%" if v.get("between_fraction") is not None else v.get("note", "")
            )
            splits.append(
                tuple(
                    text(x)
                    for x in (
                        scope,
                        side.upper(),
                        str(v["repeats"]),
                        num(v.get("between"), ".2f"),
                        num(v.get("within"), ".2f"),
                        share,
                    )
                )
            )
    header = (
        "scope",
        "statistic",
        "A",
        "B",
        "B - A",
        "95% CI (hierarchical)",
        "B / A [95% CI]",
        "flat CI (iterations as independent)",
    )
    warn = 100 * (c.get("between_repeat_warn") or 0.5)
    split_note = text(
        "Variance of the per-iteration maxima split into between-repeat and within-repeat parts (one-way random "
        f"effects); a warning is raised when the between-repeat part exceeds {warn:.0f}% of the total on a side."
    )
    return Section(
        "Latency detail",
        "latency-detail",
        (
            Table(header, tuple(rows)),
            Paragraph(split_note, "muted"),
            Table(("scope", "side", "repeats", "between (us²)", "within (us²)", "between share"), tuple(splits)),
        ),
    )


def page(c: Mapping[str, Any], svg: str, picture_path: str = "moved.svg") -> list[Section]:
    """The sections of the page, in order."""
    if c["state"] != "ok":
        return [verdict_section(c)]
    return [verdict_section(c), picture_section(c, svg, picture_path), latency_detail_section(c), rows_section(c)]
