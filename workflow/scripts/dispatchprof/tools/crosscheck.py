"""Optional cross-check of the timeline against msprof-analyze (`cluster -m compute_op_sum`), when installed.

msprof-analyze reads only the db of each PROF_ and keys ranks by info.json rank_id; when rank_id is -1 it keys
them by sorted (hostUid, device id), so ranks of different nodes that share a device id are merged and all but
one dropped without a warning (docs/formats.md §1 of the format notes). This module says which of its "ranks" are ours.

msprof-analyze opens each db read-write (a plain connect, its prof_common/db_manager.py): on a WAL database that
creates -shm and -wal files beside it and, at the last close, checkpoints the WAL into the database; on a read-only
share it fails; it walks its -d without following directory links (os.walk). A user's export is never modified: in
analyze mode it is read in place when none of that can happen (no WAL database, no journal to apply, nothing reached
only through a directory link), else from a copy of what msprof-analyze reads (mirror_prof_tree), made only when the
destination's free space holds it (plan_prof_tree, run_crosscheck). msprof-analyze is looked for before anything.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dispatchprof.analysis.timeline import kernel_regex
from dispatchprof.formats.prof_dirs import read_data_dir
from dispatchprof.formats.prof_tree import find_data_dirs
from dispatchprof.formats.sqlite_read import read_only_db
from dispatchprof.formats.tree_walk import entry_problem
from dispatchprof.tools.launch import run_command

QUERY = "SELECT OpName, OpType, Count, MedianNs, Rank FROM ComputeOpPerRankStatsByOpName"


# What compute_op_sum does not read of a PROF_: the raw device and host data and the text exports, the bulk of its
# bytes. It reads the db and the identity files (info.json, start_info, end_info), which are copied.
NOT_READ_BY_MSPROF_ANALYZE = frozenset({"data", "mindstudio_profiler_output", "mindstudio_profiler_log"})
NOT_INSTALLED = "msprof-analyze is not installed (pip install msprof-analyze==26.2.0 to enable the cross-check)"
SQLITE_MAGIC = b"SQLite format 3\x00"
LEFT_OUT_SHOWN = 20  # entries of left_out written to crosscheck.json (their count is always written)
# The words of the import's walk (formats/tree_walk.walk_tree: a directory reached again is not walked twice).
REVISITED = "a directory reached again through a link (a link loop, or a second link to it): not walked twice"


@dataclass
class ProfTreePlan:
    """What msprof-analyze reads of a tree (module doc), found by one walk that never raises: the files it reads
    (source, path below the root, bytes), the entries left out with why (the import's words: a link loop, a dangling
    link, an unreadable file...), and why it cannot read the tree in place (empty: it can)."""

    files: list[tuple[Path, Path, int]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    copy_needed: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(size for _, _, size in self.files)


def is_wal_database(path: Path) -> bool:
    """Whether the file is an SQLite database in WAL mode (header bytes 18 and 19, the read and write versions, are 2;
    1 is a rollback journal): opened read-write, SQLite then creates -shm and -wal beside it."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError:
        return False
    return header.startswith(SQLITE_MAGIC) and len(header) == 20 and 2 in (header[18], header[19])


def plan_prof_tree(root: Path) -> ProfTreePlan:
    """Walk ``root`` as the import does (formats/tree_walk.walk_tree): directory links are followed, each directory once
    by (st_dev, st_ino), so a link loop ends the walk there; the directories msprof-analyze does not read are not
    entered. Never raises. The tree must be copied when msprof-analyze, which opens every db read-write and does not
    follow directory links (os.walk), would modify it or miss a part of it: a db in WAL mode, a non-empty -wal or
    -journal beside a db (its read-write open would checkpoint or roll it back), a file reached only through a
    directory link."""
    plan = ProfTreePlan()
    visited: set[tuple[int, int]] = set()
    stack: list[tuple[Path, Path, bool]] = [(root, Path(), False)]
    while stack:
        path, below, linked = stack.pop()
        try:
            st, problem = entry_problem(str(path))
        except OSError as exc:  # a link it cannot read (os.readlink of /proc/<pid>/cwd)
            st, problem = None, f"cannot be examined ({exc.strerror or exc})"
        if st is None or problem is not None:
            plan.left_out.append(f"{path}: {problem}")
            continue
        if stat.S_ISDIR(st.st_mode):
            if below != Path() and path.name in NOT_READ_BY_MSPROF_ANALYZE:
                continue
            if (st.st_dev, st.st_ino) in visited:
                plan.left_out.append(f"{path}: {REVISITED}")
                continue
            visited.add((st.st_dev, st.st_ino))
            try:
                names = sorted(os.listdir(path), reverse=True)
            except OSError as exc:
                plan.left_out.append(f"{path}: a directory that cannot be listed ({exc.strerror or exc})")
                continue
            through_link = linked or (below != Path() and path.is_symlink())
            stack.extend((path / name, below / name, through_link) for name in names)
            continue
        name = path.name
        journal = name.endswith(("-wal", "-journal"))
        if name.endswith("-shm") or (journal and st.st_size == 0):
            continue  # SQLite rebuilds a -shm; an empty journal has nothing to apply
        plan.files.append((path, below, st.st_size))
        if linked:
            plan.copy_needed.append(f"{path} is reached through a directory link, which msprof-analyze does not follow")
        elif journal:
            plan.copy_needed.append(f"{path}: msprof-analyze's read-write open would apply it to its database")
        elif name.endswith(".db") and is_wal_database(path):
            plan.copy_needed.append(f"{path}: a WAL database (a read-write open creates -shm and -wal beside it)")
    return plan


def mirror_prof_tree(root: Path, dest: Path, plan: ProfTreePlan | None = None) -> Path:
    """A copy under ``dest`` of what msprof-analyze reads under ``root`` (module doc, plan_prof_tree): each db with
    its non-empty -wal or -journal (never a -shm: SQLite rebuilds it), and the small files beside them. Returns the
    copy's root."""
    plan = plan_prof_tree(root) if plan is None else plan
    dest.mkdir(parents=True, exist_ok=True)
    for source, below, _ in plan.files:
        target = dest / below
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return dest


def space_shortfall(dest: Path, needed: int) -> str | None:
    """Why ``needed`` bytes do not fit at ``dest`` (its nearest existing directory's free space,
    shutil.disk_usage); None when they do."""
    place = dest
    while not place.exists() and place != place.parent:
        place = place.parent
    free = shutil.disk_usage(place).free
    if needed <= free:
        return None
    return f"the copy it needs is {mib(needed)} and {place} has {mib(free)} free"


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def run_crosscheck(
    root: Path, analyze: bool, scratch: Path, timeout_s: float, ours: Mapping[str, Mapping[str, Any]], kernel: str
) -> dict[str, Any]:
    """The cross-check's result (crosscheck.json without tool and toolchain): msprof-analyze is looked for first,
    then the tree is walked (plan_prof_tree); a user's tree (``analyze``) is read in place when msprof-analyze leaves
    it as it is, else a copy under ``scratch`` is made if the free space there holds it, else it is skipped with the
    reason. The workflow's own raw data are read in place. ``read`` says which, ``left_out`` what was not read."""
    if shutil.which("msprof-analyze") is None:
        return {"state": "skipped", "reason": NOT_INSTALLED}
    plan = plan_prof_tree(root)
    out: dict[str, Any] = {"left_out": plan.left_out[:LEFT_OUT_SHOWN], "left_out_count": len(plan.left_out)}
    given = root
    if analyze and plan.copy_needed:
        out["copy_needed"] = plan.copy_needed[:LEFT_OUT_SHOWN]
        short = space_shortfall(scratch, plan.bytes)
        if short is not None:
            why = plan.copy_needed[0] + (
                f" (and {len(plan.copy_needed) - 1} more)" if len(plan.copy_needed) > 1 else ""
            )
            return {**out, "state": "skipped", "read": None, "reason": f"not copied: {short}; a copy is needed: {why}"}
        given = mirror_prof_tree(root, scratch / "input", plan)
        out.update(read="copied", copied_bytes=plan.bytes)
    else:
        out["read"] = "in_place"
    db, reason = run_msprof_analyze(given, scratch / "output", timeout_s)
    if db is None:
        return {**out, "state": "failed", "reason": reason}
    infos = [read_data_dir(d) for d in find_data_dirs(root)]
    # A PROF_ without device data (a missing rank) has no rank_id to judge by; it must not turn the mapping off.
    with_data = [i for i in infos if i.devices and i.has_kernel_tables]
    rank_ids_set = bool(with_data) and all(i.rank_id is not None for i in with_data)
    return {**out, "state": "ok", "reason": "ran", **compare_ranks(their_ranks(db, kernel), ours, rank_ids_set)}


def failed(exc: BaseException) -> dict[str, Any]:
    """The cross-check's result when it raised: a note in the report, never a lost report."""
    return {"state": "failed", "reason": f"the cross-check failed ({type(exc).__name__}: {exc})"[:500]}


def run_msprof_analyze(root: Path, out: Path, timeout_s: float) -> tuple[Path | None, str]:
    exe = shutil.which("msprof-analyze")
    if exe is None:
        return None, NOT_INSTALLED
    out.mkdir(parents=True, exist_ok=True)
    result = run_command(
        [exe, "cluster", "-d", str(root), "-m", "compute_op_sum", "-o", str(out), "--force"], timeout_s
    )
    db = out / "cluster_analysis_output" / "cluster_analysis.db"
    if not result.ok or not db.is_file():  # it exits 0 even when nothing was written: the output decides
        return (
            None,
            f"msprof-analyze wrote no cluster_analysis.db (exit {result.exit_code}): {result.output.strip()[-300:]}",
        )
    return db, "ok"


def their_ranks(db: Path, pattern: str) -> dict[int, dict[str, Any]]:
    regex = kernel_regex(pattern)
    with read_only_db(db) as conn:
        rows = conn.execute(QUERY).fetchall()
    return {
        int(rank): {"op": name, "count": int(count), "median_us": float(median) / 1000}
        for name, op_type, count, median, rank in rows
        if regex.match(str(name)) or regex.match(str(op_type))
    }


def compare_ranks(
    theirs: Mapping[int, Mapping[str, Any]], ours: Mapping[str, Mapping[str, Any]], rank_ids_set: bool
) -> dict[str, Any]:
    found = {
        r for r, v in ours.items() if v.get("launches")
    }  # ours lists every expected rank, with 0 launches where none
    rows = []
    for rank, t in sorted(theirs.items()):
        mine = ours.get(str(rank))
        rows.append(
            {
                "their_rank": rank,
                "our_rank": rank if rank_ids_set else None,
                "their_count": t["count"],
                "their_median_us": t["median_us"],
                "our_median_us": mine["median_us"] if mine and rank_ids_set else None,
            }
        )
    note = None
    if not rank_ids_set:
        note = (
            "The PROF_ data carries rank_id -1: msprof-analyze numbered ranks by sorted (hostUid, device id), so "
            "ranks of different nodes sharing a device id were merged "
            "and all but one dropped; its ranks do not map to ours."
        )
    elif len(theirs) != len(found):
        note = f"msprof-analyze kept {len(theirs)} ranks, we found {len(found)} with launches"
    selection = (
        "msprof-analyze counts every launch; ours leave out the first "
        "timeline.skip_launches per rank, so medians may differ slightly"
    )
    return {"rows": rows, "their_ranks": len(theirs), "our_ranks": len(found), "note": note, "selection": selection}
