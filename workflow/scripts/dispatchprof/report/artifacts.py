"""The MindStudio Insight artifact guide: every artifact this run produced or read, its path, and where to open it.

Found by walking the experiment's results tree and the imported directories (analyze.*), so an artifact of any stage
appears once the stage writes it (e.g. pipe_timeline's OPPROF_* trace.json). Files under results/ get a link relative
to the report; imported files are read in place and shown by absolute path.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Mapping

from dispatchprof.formats.names import OPPROF_RE, PROF_RE

# kind -> (what it is, where it opens). Order = the guide's order.
KINDS = {
    "prof_dir": (
        "msprof system profile (PROF_* directory)",
        "MindStudio Insight: import the PROF_* directory, System Timeline view",
    ),
    "visualize_bin": (
        "msopprof visualize_data.bin",
        "MindStudio Insight: Details, Source and the matching timeline "
        "(a TRACE block opens as the pipe/instruction timeline)",
    ),
    "simulator_trace": (
        "msopprof simulator trace.json (summary or per core)",
        "MindStudio Insight: instruction timeline (also chrome://tracing)",
    ),
    "device_trace": (
        "msopprof device trace.json (PipeTimeline / InstrTimeline)",
        "MindStudio Insight: pipe / instruction timeline (the same "
        "JSON as the .bin's TRACE block; also chrome://tracing)",
    ),
    "pipe_utilization": (
        "msopprof PipeUtilization*.csv",
        "a table beside MindStudio Insight's Details view (Insight does not import the CSV)",
    ),
    "latency_csv": (
        "dispatch_latency.csv (the test's kernel-event latency)",
        "not MindStudio Insight: this workflow's statistics (baseline section)",
    ),
}
NOTES = (
    "A visualize_data.bin shows only what was collected: views whose data was not collected (e.g. Source without -g, "
    "stall samples without PcSampling) are empty, not zero.",
    "Import a visualize_data.bin as a single file, not its directory.",
    "Do not hand-edit a JSON to change its type (e.g. a device trace.json into a simulator one): Insight "
    "picks the view from the content, and an edited file shows a view of data that was never collected.",
)
PIPE_CSV_RE = re.compile(r"^PipeUtilization(_\d{17})?\.csv$")


@dataclass(frozen=True)
class Artifact:
    kind: str
    path: str  # absolute
    href: str | None  # relative to the report, for files under results/; None for imported files (read in place)
    shown: str  # what the guide prints: the relative link, or the absolute path
    source: str  # "results" | "import"


def classify(path: Path) -> str | None:
    name = path.name
    if path.is_dir():
        return "prof_dir" if PROF_RE.match(name) else None
    if name == "visualize_data.bin":
        return "visualize_bin"
    if name == "trace.json":
        parts = path.parts
        if "simulator" in parts:
            return "simulator_trace"
        if any(OPPROF_RE.match(p) for p in parts):
            return "device_trace"
        return None
    if PIPE_CSV_RE.match(name):
        return "pipe_utilization"
    if name == "dispatch_latency.csv":
        return "latency_csv"
    return None


def find(root: Path) -> Iterable[tuple[str, Path]]:
    """(kind, path) of every artifact under root, a PROF_* directory counted once (not its contents)."""
    if root.is_file():
        kind = classify(root)
        if kind:
            yield kind, root
        return
    if not root.is_dir():
        return
    if PROF_RE.match(root.name):
        yield "prof_dir", root
        return
    for current, dirs, files in os.walk(root):
        here = Path(current)
        keep = []
        for d in sorted(dirs):
            if PROF_RE.match(d):
                yield "prof_dir", here / d
            else:
                keep.append(d)
        dirs[:] = keep
        for f in sorted(files):
            kind = classify(here / f)
            if kind:
                yield kind, here / f


def artifact_guide(
    results: Path, imported: Mapping[str, str | None], report_dir: Path, insight_version: str | None, toolchain: str
) -> dict:
    """The guide's rows grouped by kind, with the notes and the Insight version. ``results`` is the experiment's
    results directory; ``imported`` the analyze.* paths (None = not given), read in place."""
    found: dict[str, Artifact] = {}
    for kind, path in find(results):
        rel = os.path.relpath(path.resolve(), report_dir.resolve())
        found.setdefault(str(path.resolve()), Artifact(kind, str(path.resolve()), rel, rel, "results"))
    for given in imported.values():
        if not given:
            continue
        for kind, path in find(Path(given)):
            absolute = str(path.resolve())
            found.setdefault(absolute, Artifact(kind, absolute, None, absolute, "import"))
    groups = []
    for kind, (what, view) in KINDS.items():
        rows = sorted((a for a in found.values() if a.kind == kind), key=lambda a: a.shown)
        if rows:
            groups.append(
                {"kind": kind, "what": what, "view": view, "count": len(rows), "artifacts": [asdict(a) for a in rows]}
            )
    return {
        "insight_version": insight_version or "not recorded",
        "toolchain": toolchain,
        "notes": list(NOTES),
        "groups": groups,
        "kinds_found": [g["kind"] for g in groups],
    }
