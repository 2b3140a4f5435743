"""Analyze mode: artifacts the user collected elsewhere are read in place, never copied or modified.

A manifest records every file (path, size, mtime; sha256 on request). The layout follows the
workflow's own raw directories: ``<dir>/node<k>/...`` for the profilers' outputs.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dispatchprof.tools.building import sha256_file
from dispatchprof.formats.names import OPPROF_RE, PROF_RE
from dispatchprof.formats.prof_tree import KINDS, MAX_DEPTH, find_data_dirs
from dispatchprof.formats.tree_walk import TreeEntry, walk_tree
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
    """Every readable regular file of the tree (tree_problems
    lists the others): path, size, mtime, sha256 on request."""
    entries = []
    for entry in walk_tree(root):
        if entry.problem is not None or entry.stat is None or entry.is_dir:
            continue
        record: dict[str, Any] = {"path": entry.path, "size": entry.stat.st_size, "mtime": entry.stat.st_mtime}
        if checksums:
            record["sha256"] = sha256_file(Path(entry.path))
        entries.append(record)
    return entries


def problem_entries(root: Path) -> list[TreeEntry]:
    """The entries of the tree that cannot be read (walk_tree), each with its problem: empty when every entry can."""
    return [e for e in walk_tree(root) if e.problem is not None]


def tree_problems(root: Path) -> list[str]:
    """What in the tree cannot be read, each entry named with why (walk_tree): empty when every entry can."""
    return [f"{e.path}: {e.problem}" for e in problem_entries(root)]


def would_block(entry: TreeEntry) -> bool:
    """A FIFO, socket or device where a file belongs: a reader that opens it may wait forever (the walk opens it
    non-blocking), so nothing in its directory is read."""
    st = entry.stat
    return st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def inside_data_dirs(root: Path, entries: list[TreeEntry]) -> bool:
    """Whether every entry lies inside one of the timeline tree's data directories (formats.prof_tree): each is then
    the refusal of that directory's ranks (the parse names it), as a corrupt db is, not of the whole import. False
    where the data directories cannot be found (a directory above them that cannot be listed)."""
    try:
        dirs = [os.path.join(str(d.path), "") for d in find_data_dirs(root)]
    except OSError:
        return False
    return all(any(os.path.normpath(e.path).startswith(d) for d in dirs) for e in entries)


def tree_fingerprint(path: str | None) -> str:
    """Names, sizes, mtimes (ns) and owners and modes of every file under ``path`` (or of the file itself), hashed:
    the import's rerun trigger. Cheap (a stat per entry, no open, no read): it runs while Snakemake builds the DAG.
    "none" when not provided, "absent" when it does not exist. It never raises: an entry that cannot be examined (a
    link loop, a dangling link, a directory that cannot be listed) counts as such, and the import then says what it
    cannot read; a chmod or chown that makes a file readable changes the hash, so the import runs again."""
    if path is None:
        return "none"
    root = Path(path)
    if not root.exists() and not root.is_symlink():
        return "absent"
    digest = hashlib.sha256()
    for entry in walk_tree(root, open_files=False):
        st = entry.stat
        if entry.problem is not None:
            line = f"{entry.path}\tunreadable {entry.problem}"
        elif entry.visited:
            line = f"{entry.path}\tvisited"
        elif st is None:
            continue
        elif entry.is_dir:  # a directory's owner and mode decide whether it can be listed
            line = f"{entry.path}\tdir\t{st.st_mode:o}\t{st.st_uid}\t{st.st_gid}"
        else:
            line = f"{entry.path}\t{st.st_size}\t{st.st_mtime_ns}\t{st.st_mode:o}\t{st.st_uid}\t{st.st_gid}"
        digest.update(f"{line}\n".encode(errors="surrogateescape"))
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
                f"{root}: no OPPROF_*/simulator/ directory; expected msopprof "
                "simulator output (an OPPROF_* directory or a directory holding one)"
            )
        return ImportCount([], len(runs), None, f"{len(runs)} simulated kernel(s)")
    if kind == "timeline_dir":
        return count_timeline_tree(root)
    nodes = node_dirs(root)
    if not nodes:
        raise ImportError_(f"{root}: no node<k> directories; expected the layout <dir>/node0/..., <dir>/node1/...")
    pattern, label = DATA_DIRS[kind]
    found = sum(1 for d in nodes.values() for p in d.iterdir() if p.is_dir() and pattern.match(p.name))
    if not found:
        raise ImportError_(
            f"{root}: no {label} directory under node0..node{max(nodes)} "
            f"(names as the tool writes them, e.g. {label[:-1]}...)"
        )
    return ImportCount(sorted(nodes), found, None, f"{found} {label} directories in {len(nodes)} node directories")


def count_timeline_tree(root: Path) -> ImportCount:
    """A timeline tree in any layout the profilers write (formats.prof_tree): node<k>/PROF_*, a single PROF_*, torch_npu
    *_ascend_pt directories, a bare mindstudio_profiler_output/. Which rank each holds is the parse's business."""
    found = find_data_dirs(root)
    if not found:
        raise ImportError_(
            f"{root}: no profiler data directory found (searched {MAX_DEPTH} levels for msprof's PROF_* directories, "
            "torch_npu's *_ascend_pt directories, or a mindstudio_profiler_output/ export, under node<k>/ or not)"
        )
    nodes = sorted({d.node for d in found if d.node is not None})
    kinds = ", ".join(f"{sum(d.kind == k for d in found)} {k}" for k in KINDS if any(d.kind == k for d in found))
    where = f"in {len(nodes)} node directories" if nodes else "without node directories"
    return ImportCount(nodes, len(found), None, f"{len(found)} data directories ({kinds}) {where}")


def checked_import(kind: str, path: str | None, nodes: int, world: int) -> tuple[str, str, dict[str, Any]]:
    """(state, reason, details) of one import: not provided, missing, unusable, or ok. Fewer nodes or ranks than the
    config are left to the stage's coverage (it analyses the ranks present and says so)."""
    if path is None:
        return "skipped", f"not provided in analyze mode (analyze.{kind} is null)", {}
    root = Path(path)
    if not root.exists() and not root.is_symlink():
        return "invalid", f"analyze.{kind}: {root} does not exist", {}
    entries = problem_entries(root)
    problems = [f"{e.path}: {e.problem}" for e in entries]
    unreadable = {"unreadable": problems[:100], "unreadable_count": len(problems)} if problems else {}
    if problems and not (kind == "timeline_dir" and inside_data_dirs(root, entries)):
        return "invalid", unreadable_entries(kind, root, problems), unreadable
    try:
        count = count_import(kind, root)
    except (ImportError_, OSError, UnicodeDecodeError) as exc:
        return "invalid", str(exc), {}
    details = {
        "nodes_found": count.nodes,
        "directories": count.directories,
        "ranks_found": count.ranks,
        "counted_by": count.how,
    }
    outside = [n for n in count.nodes if n >= nodes]
    if outside:
        return (
            "invalid",
            f"analyze.{kind}: {root} holds node directories {outside} "
            f"but cluster.nodes is {nodes} (node0..node{nodes - 1})",
            details,
        )
    if count.ranks is not None and count.ranks != world:
        return (
            "invalid",
            f"analyze.{kind}: {root} holds {count.ranks} ranks ({count.how}) "
            f"but the config has {world} (nodes x ranks_per_node)",
            details,
        )
    held = f"{count.ranks} ranks, {count.how}" if count.ranks is not None else count.how
    refused = f"; {ranks_left_out(problems)}" if problems else ""
    return "ok", f"imported {root} in place ({held}){refused}", {**details, **unreadable}


def ranks_left_out(problems: list[str], most: int = 3) -> str:
    """The timeline import's entries that cannot be read, all inside data directories: their ranks are left out by
    the parse, each refused with the file named, and the other ranks analysed."""
    entries, listed = entries_listed(problems, most)
    return f"{entries} cannot be read, the ranks of the data directories holding them left out: {listed}"


def entries_listed(problems: list[str], most: int) -> tuple[str, str]:
    """("1 entry" or "<n> entries", the first ``most`` problems joined, "and <k> more" after them)."""
    listed = "; ".join(problems[:most]) + (f"; and {len(problems) - most} more" if len(problems) > most else "")
    return ("1 entry" if len(problems) == 1 else f"{len(problems)} entries"), listed


def unreadable_entries(kind: str, root: Path, problems: list[str], most: int = 3) -> str:
    """The import's refusal: which entries of the tree cannot be read, each with why (tree_problems)."""
    entries, listed = entries_listed(problems, most)
    return (
        f"analyze.{kind}: {entries} of {root} cannot be read: {listed} "
        "(fix or remove them; the import reads nothing until then)"
    )


def file_count(entries: list[dict[str, Any]]) -> str:
    total = sum(e["size"] for e in entries)
    return f"{len(entries)} files, {total / 1e6:.1f} MB"
