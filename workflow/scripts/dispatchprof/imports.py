"""Analyze mode: artifacts the user collected elsewhere are read in place, never copied or modified.

A manifest records every file (path, size, mtime; sha256 on request). The layout follows the
workflow's own raw directories: ``<dir>/node<k>/...`` for the profilers' outputs.
"""

from __future__ import annotations

import csv

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dispatchprof.building import sha256_file

NODE_DIR = re.compile(r"^node(\d+)$")
PROF_DIR = re.compile(r"^PROF_\d+_\d+_[A-Za-z0-9]+$")
OPPROF_DIR = re.compile(r"^OPPROF_\d{14}_[A-Z]+$")
DEVICE_DIR = re.compile(r"^device(\d+)$")


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


def node_dirs(root: Path) -> dict[int, Path]:
    return {int(m.group(1)): p for p in sorted(root.iterdir()) if p.is_dir() and (m := NODE_DIR.match(p.name))}


def latency_csv_ranks(path: Path) -> int:
    """Distinct values of the 'rank' column (found by header name)."""
    with open(path, newline="", errors="replace") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header or "rank" not in header:
            raise ImportError_(f"{path}: line 1: no 'rank' column in the header {header}")
        col = header.index("rank")
        ranks = {row[col] for row in reader if len(row) > col and row[col] != ""}
    return len(ranks)


@dataclass
class RankCount:
    nodes: int | None
    ranks: int | None
    how: str


def count_ranks(kind: str, root: Path) -> RankCount:
    """How many nodes and ranks an import holds, as far as its layout tells."""
    if kind == "latency_csv":
        return RankCount(None, latency_csv_ranks(root), "distinct values of the rank column")
    nodes = node_dirs(root)
    if not nodes:
        raise ImportError_(f"{root}: no node<k> directories; expected the layout <dir>/node0/..., <dir>/node1/...")
    if kind == "timeline_dir":
        profs = sum(1 for d in nodes.values() for p in d.iterdir() if p.is_dir() and PROF_DIR.match(p.name))
        return RankCount(len(nodes), profs, "PROF_* directories (one per rank process)")
    devices = set()
    for k, d in nodes.items():
        for opprof in (p for p in d.iterdir() if p.is_dir() and OPPROF_DIR.match(p.name)):
            devs = [int(m.group(1)) for p in opprof.iterdir() if (m := DEVICE_DIR.match(p.name))]
            devices.update((k, dev) for dev in devs)
    if devices:
        return RankCount(len(nodes), len(devices), "device<id> directories inside OPPROF_* (node, device)")
    return RankCount(len(nodes), None, "rank count not determinable from the layout alone")


def checked_import(kind: str, path: str | None, nodes: int, world: int) -> tuple[str, str, dict[str, Any]]:
    """(state, reason, details) of one import: not provided, missing, wrong rank count, or ok."""
    if path is None:
        return "skipped", f"not provided in analyze mode (analyze.{kind} is null)", {}
    root = Path(path)
    if not root.exists():
        return "invalid", f"analyze.{kind}: {root} does not exist", {}
    try:
        count = count_ranks(kind, root)
    except (ImportError_, OSError, UnicodeDecodeError) as exc:
        return "invalid", str(exc), {}
    details = {"nodes_found": count.nodes, "ranks_found": count.ranks, "counted_by": count.how}
    if count.nodes is not None and count.nodes != nodes:
        return "invalid", f"analyze.{kind}: {root} holds {count.nodes} node directories but cluster.nodes is {nodes}", details
    if count.ranks is not None and count.ranks != world:
        return "invalid", f"analyze.{kind}: {root} holds {count.ranks} ranks ({count.how}) but the config has {world} (nodes x ranks_per_node)", details
    return "ok", f"imported {root} in place ({count.how}: {count.ranks if count.ranks is not None else 'n/a'})", details


def file_count(entries: list[dict[str, Any]]) -> str:
    total = sum(e["size"] for e in entries)
    return f"{len(entries)} files, {total / 1e6:.1f} MB"
