"""Optional cross-check of the timeline against msprof-analyze (`cluster -m compute_op_sum`), when installed.

msprof-analyze reads only the db of each PROF_ and keys ranks by info.json rank_id; when rank_id is -1 it keys
them by sorted (hostUid, device id), so ranks of different nodes that share a device id are merged and all but
one dropped without a warning (docs/formats.md §1 of the format notes). This module says which of its "ranks" are ours.

msprof-analyze opens each db read-write (a plain connect, its prof_common/db_manager.py): on a WAL database that
creates -shm and -wal files beside it and, at the last close, checkpoints the WAL into the database; on a read-only
share it fails. A user's export is read in place and never modified, so in analyze mode it runs on a copy of what it
reads (mirror_prof_tree).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from dispatchprof.analysis.timeline import kernel_regex
from dispatchprof.formats.sqlite_read import read_only_db
from dispatchprof.tools.launch import run_command

QUERY = "SELECT OpName, OpType, Count, MedianNs, Rank FROM ComputeOpPerRankStatsByOpName"


# What compute_op_sum does not read of a PROF_: the raw device and host data and the text exports, the bulk of its
# bytes. It reads the db and the identity files (info.json, start_info, end_info), which are copied.
NOT_READ_BY_MSPROF_ANALYZE = frozenset({"data", "mindstudio_profiler_output", "mindstudio_profiler_log"})


def mirror_prof_tree(root: Path, dest: Path) -> Path:
    """A copy under ``dest`` of what msprof-analyze reads under ``root`` (module doc): each db with its non-empty
    -wal or -journal (never a -shm: SQLite rebuilds it), and the small files beside them. Returns the copy's root."""
    for top, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in NOT_READ_BY_MSPROF_ANALYZE)
        target = dest / Path(top).relative_to(root)
        target.mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            source = Path(top) / name
            journal = name.endswith(("-wal", "-journal"))
            if name.endswith("-shm") or (journal and source.stat().st_size == 0):
                continue
            shutil.copyfile(source, target / name)
    return dest


def run_msprof_analyze(root: Path, out: Path, timeout_s: float) -> tuple[Path | None, str]:
    exe = shutil.which("msprof-analyze")
    if exe is None:
        return None, "msprof-analyze is not installed (pip install msprof-analyze==26.2.0 to enable the cross-check)"
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
