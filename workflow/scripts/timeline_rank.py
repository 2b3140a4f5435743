"""Per-rank detail of the system timeline (rule timeline_rank): launch table, gaps, a small SVG.

Standard library only, run as a lean shell job: a cluster with hundreds of ranks gets hundreds of cheap
jobs, not hundreds of pandas imports. Usage: timeline_rank.py <launches.json> <skip> <detail.json> <plot.svg>
"""

import json
import os
import statistics
import sys
import tempfile


def percentile(values, q):
    """Linear interpolation, as numpy's default (and dispatchprof.analysis.latency.percentile)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def detail(data, skip):
    rows = sorted(data.get("launches", []), key=lambda r: r["launch"])
    used = rows[skip:]
    table = []
    for i, r in enumerate(used):
        prev = used[i - 1] if i else None
        table.append(
            {
                "launch": r["launch"],
                "start_ns": r["start_ns"],
                "dur_us": r["dur_ns"] / 1000,
                "gap_us": (r["start_ns"] - prev["start_ns"] - prev["dur_ns"]) / 1000 if prev else None,
                "interval_us": (r["start_ns"] - prev["start_ns"]) / 1000 if prev else None,
            }
        )
    durs = [t["dur_us"] for t in table]
    gaps = [t["gap_us"] for t in table if t["gap_us"] is not None]
    return {
        **{k: data.get(k) for k in ("rank", "node", "device", "pid", "prof", "symbol", "present", "reason", "calls_between")},
        "launches_total": len(rows),
        "skipped": min(skip, len(rows)),
        "launches": len(table),
        "median_us": statistics.median(durs) if durs else None,
        "p95_us": percentile(durs, 95) if durs else None,
        "gap_median_us": statistics.median(gaps) if gaps else None,
        "table": table,
    }


def svg(d):
    table = d["table"]
    width, height = 360, 90
    if not table:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"><text x="8" y="45" font-size="12">rank {d["rank"]}: no launches ({d.get("reason") or "none used"})</text></svg>'
    durs = [t["dur_us"] for t in table]
    top, bottom = max(durs), min(durs)
    span = (top - bottom) or 1.0
    step = (width - 20) / max(len(durs) - 1, 1)
    points = " ".join(f"{10 + i * step:.1f},{height - 15 - (v - bottom) / span * (height - 30):.1f}" for i, v in enumerate(durs))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">'
        f"<title>rank {d['rank']}: kernel duration per used launch ({bottom:.1f}-{top:.1f} us)</title>"
        f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{points}"/>'
        f'<text x="4" y="12" font-size="10">rank {d["rank"]}: {bottom:.1f}-{top:.1f} us, median {d["median_us"]:.1f} us</text></svg>'
    )


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path) or ".", delete=False, suffix=".tmp") as handle:
        handle.write(text)
    os.replace(handle.name, path)


def main(argv):
    launches_file, skip, detail_path, plot_path = argv[1], int(argv[2]), argv[3], argv[4]
    rank = int(os.path.basename(launches_file)[4:-5])
    if os.path.isfile(launches_file):
        with open(launches_file) as handle:
            data = json.load(handle)
    else:
        data = {"rank": rank, "present": False, "reason": "no PROF_ data for this rank (see the node's coverage table)", "launches": []}
    d = detail(data, skip)
    write(detail_path, json.dumps(d, indent=1))
    write(plot_path, svg(d))
    print(f"rank {rank}: {d['launches']} launches used of {d['launches_total']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
