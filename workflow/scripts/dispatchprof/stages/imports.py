"""Analyze mode: artifacts the user collected elsewhere are read in place, never copied or modified.

A manifest records every file (path, size, mtime; sha256 on request). The layout follows the
workflow's own raw directories: ``<dir>/node<k>/...`` for the profilers' outputs.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dispatchprof.tools.building import sha256_file
from dispatchprof.formats.names import OPPROF_RE, PROF_RE
from dispatchprof.formats.encoding import encoding_problem

NODE_DIR = re.compile(r"^node(\d+)$")
DEVICE_DIR = re.compile(r"^device(\d+)$")
# Which directory names count is decided by the parsers' own rules (formats.names: PROF_RE,
# OPPROF_RE), so that the import never accepts what the parse then ignores, or the reverse.
DATA_DIRS = {
    "timeline_dir": (PROF_RE, "PROF_*"),
    "pmu_dir": (OPPROF_RE, "OPPROF_*"),
    "pcsampling_dir": (OPPROF_RE, "OPPROF_*"),
    "pipe_timeline_dir": (OPPROF_RE, "OPPROF_*"),
}


class ImportError_(ValueError):
    """Imported data that cannot be used as it is (the message names the path and what was expected)."""


def manifest(root: Path, checksums: bool = False) -> list[dict[str, Any]]:
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    entries = []
    for path in paths:
        st = path.stat()
        entry: dict[str, Any] = {"path": str(path), "size": st.st_size, "mtime": st.st_mtime}
        if checksums:
            entry["sha256"] = sha256_file(path)
        entries.append(entry)
    return entries


def tree_fingerprint(path: str | None) -> str:
    """Names, sizes and mtimes (ns) of every file under ``path`` (or of the file itself), hashed: the import's
    rerun trigger. Cheap (a stat per file, no reads); "none" when not provided, "absent" when it does not exist.
    Directory links are followed, each directory once (by device and inode): a link loop ends the walk there, it
    does not run forever. A directory that cannot be listed counts as such (the import then says what it cannot read)."""
    if path is None:
        return "none"
    root = Path(path)
    if not root.exists():
        return "absent"
    digest = hashlib.sha256()
    stack = [root]
    visited: set[tuple[int, int]] = set()
    while stack:
        current = stack.pop()
        if current.is_file():
            st = current.stat()
            digest.update(f"{current}\t{st.st_size}\t{st.st_mtime_ns}\n".encode(errors="surrogateescape"))
            continue
        try:
            st = current.stat()
            if (st.st_dev, st.st_ino) in visited:
                digest.update(f"{current}\tvisited\n".encode(errors="surrogateescape"))
                continue
            visited.add((st.st_dev, st.st_ino))
            listing = os.scandir(current)
        except OSError as exc:
            digest.update(f"{current}\tunreadable {exc.errno}\n".encode(errors="surrogateescape"))
            continue
        with listing as entries:
            for entry in sorted(entries, key=lambda e: e.name, reverse=True):
                if entry.is_dir(follow_symlinks=True):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=True):
                    st = entry.stat()
                    digest.update(f"{entry.path}\t{st.st_size}\t{st.st_mtime_ns}\n".encode(errors="surrogateescape"))
    return digest.hexdigest()[:16]


def node_dirs(root: Path) -> dict[int, Path]:
    return {int(m.group(1)): p for p in sorted(root.iterdir()) if p.is_dir() and (m := NODE_DIR.match(p.name))}


def latency_csv_ranks(path: Path) -> int:
    """Distinct values of the 'rank' column (found by header name)."""
    problem = encoding_problem(path)
    if problem:
        raise ImportError_(problem)
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or not any(cell.strip() for cell in header):
            raise ImportError_(f"{path}: line 1: empty file; expected a header starting with rank,iteration")
        if "rank" not in header:
            raise ImportError_(f"{path}: line 1: no 'rank' column in the header {header}")
        col = header.index("rank")
        ranks = {row[col] for row in reader if len(row) > col and row[col] != ""}
    return len(ranks)


@dataclass
class ImportCount:
    nodes: list[int]
    directories: int
    ranks: int | None  # only where the layout alone tells (the latency CSV's rank column)
    how: str


def count_import(kind: str, root: Path) -> ImportCount:
    """What an import holds, as far as its layout tells: node directories and profiler directories. Which rank each
    directory holds is the parse's business (analysis.rank_identity): a PROF_ may hold several devices."""
    if kind == "latency_csv":
        ranks = latency_csv_ranks(root)
        return ImportCount([], 0, ranks, "distinct values of the rank column")
    if kind == "probe_dir":  # one simulator run on one card: an OPPROF_* tree, not per node
        from dispatchprof.formats.simulator import simulator_runs

        runs = simulator_runs(root)
        if not runs:
            raise ImportError_(
                f"{root}: no OPPROF_*/simulator/ directory; expected msopprof simulator output (an OPPROF_* directory or a directory holding one)"
            )
        return ImportCount([], len(runs), None, f"{len(runs)} simulated kernel(s)")
    nodes = node_dirs(root)
    if not nodes:
        raise ImportError_(f"{root}: no node<k> directories; expected the layout <dir>/node0/..., <dir>/node1/...")
    pattern, label = DATA_DIRS[kind]
    found = sum(1 for d in nodes.values() for p in d.iterdir() if p.is_dir() and pattern.match(p.name))
    if not found:
        raise ImportError_(f"{root}: no {label} directory under node0..node{max(nodes)} (names as the tool writes them, e.g. {label[:-1]}...)")
    return ImportCount(sorted(nodes), found, None, f"{found} {label} directories in {len(nodes)} node directories")


def checked_import(kind: str, path: str | None, nodes: int, world: int) -> tuple[str, str, dict[str, Any]]:
    """(state, reason, details) of one import: not provided, missing, unusable, or ok. Fewer nodes or ranks than the
    config are left to the stage's coverage (it analyses the ranks present and says so)."""
    if path is None:
        return "skipped", f"not provided in analyze mode (analyze.{kind} is null)", {}
    root = Path(path)
    if not root.exists():
        return "invalid", f"analyze.{kind}: {root} does not exist", {}
    try:
        count = count_import(kind, root)
    except (ImportError_, OSError, UnicodeDecodeError) as exc:
        return "invalid", str(exc), {}
    details = {"nodes_found": count.nodes, "directories": count.directories, "ranks_found": count.ranks, "counted_by": count.how}
    outside = [n for n in count.nodes if n >= nodes]
    if outside:
        return "invalid", f"analyze.{kind}: {root} holds node directories {outside} but cluster.nodes is {nodes} (node0..node{nodes - 1})", details
    if count.ranks is not None and count.ranks != world:
        return "invalid", f"analyze.{kind}: {root} holds {count.ranks} ranks ({count.how}) but the config has {world} (nodes x ranks_per_node)", details
    held = f"{count.ranks} ranks, {count.how}" if count.ranks is not None else count.how
    return "ok", f"imported {root} in place ({held})", details


def file_count(entries: list[dict[str, Any]]) -> str:
    total = sum(e["size"] for e in entries)
    return f"{len(entries)} files, {total / 1e6:.1f} MB"
