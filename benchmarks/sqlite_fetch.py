"""Ways of getting one rank's target-kernel arrays out of its msprof db (what read_db_target does hundreds of times),
timed against today's code on the first N ranks of a collection.

Every variant returns the same arrays (target name id/start/end, barrier start/end, context-window others
name id/start/end, in start order, ties by globalTaskId) and is checked against the first one. Variants run
alternately within each repeat and the median of the repeats is printed as ms/rank and as a ratio to the
first: the machine is shared and noisy, so only numbers from one run compare.

    python benchmarks/sqlite_fetch.py [collection] [--ranks N] [--repeats R]
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from dispatchprof.formats.msprof import read_db_target  # noqa: E402

DEFAULT = Path("/tmp/dispatchprof-bench/data/32x8x2000")
JOIN = "FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId"
TARGET = re.compile(re.escape("elastic_dispatch_kernel"))
BARRIER = re.compile(re.escape("cached_notify_combine"))
CONTEXT_LAUNCHES = 200


class Arrays(NamedTuple):
    target: np.ndarray  # rows of (name id, startNs, endNs)
    barrier: np.ndarray  # rows of (startNs, endNs)
    others: np.ndarray  # rows of (name id, startNs, endNs)


def strict_int(column: str) -> str:
    return f"IIF(typeof({column}) = 'integer', {column}, NULL)"


def id_lists(conn: sqlite3.Connection) -> tuple[str, str]:
    strings = dict(conn.execute("SELECT id, value FROM STRING_IDS"))
    targets = ",".join(str(i) for i, v in strings.items() if TARGET.match(str(v)))
    barriers = ",".join(str(i) for i, v in strings.items() if BARRIER.match(str(v)))
    return targets, barriers


def window(target_start: np.ndarray) -> tuple[int, int] | None:
    intervals = min(len(target_start) - 1, CONTEXT_LAUNCHES)
    return (int(target_start[0]), int(target_start[intervals])) if intervals > 0 else None


def connect(path: Path, mmap: bool = False, immutable: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro" + ("&immutable=1" if immutable else ""), uri=True)
    if mmap:
        conn.execute("PRAGMA mmap_size = 268435456")
    return conn


def fetchall_today(path: Path) -> Arrays:
    """HEAD's read_db_target: three queries, every value through strict_int, ORDER BY startNs, row tuples."""
    conn = connect(path)
    targets, barriers = id_lists(conn)
    cols = f"{strict_int('c.name')}, {strict_int('t.startNs')}, {strict_int('t.endNs')}"
    match = f"(c.name IN ({targets}) OR c.opType IN ({targets}))"
    barrier = np.array(
        conn.execute(f"SELECT {cols} {JOIN} WHERE c.name IN ({barriers}) ORDER BY t.startNs").fetchall(), np.int64
    ).reshape(-1, 3)
    target = np.array(
        conn.execute(f"SELECT {cols} {JOIN} WHERE {match} ORDER BY t.startNs").fetchall(), np.int64
    ).reshape(-1, 3)
    bounds = window(target[:, 1])
    others = np.zeros((0, 3), np.int64)
    if bounds:
        query = (
            f"SELECT {cols} {JOIN} WHERE {match} IS NOT TRUE AND t.startNs >= ? AND t.startNs < ? ORDER BY t.startNs"
        )
        others = np.array(conn.execute(query, bounds).fetchall(), np.int64).reshape(-1, 3)
    conn.close()
    return Arrays(target, barrier[:, 1:], others)


def in_start_order(rows: np.ndarray) -> np.ndarray:
    """Rows of (..., startNs, globalTaskId) sorted by startNs, then globalTaskId; the id column dropped."""
    return rows[np.lexsort((rows[:, -1], rows[:, -2]))][:, :-1]


def fetchall_numpy_sort(path: Path) -> Arrays:
    """As today, but no ORDER BY: the rows come in scan order with their globalTaskId and numpy sorts them."""
    conn = connect(path)
    targets, barriers = id_lists(conn)
    cols = f"{strict_int('c.name')}, {strict_int('t.endNs')}, {strict_int('t.startNs')}, t.globalTaskId"
    match = f"(c.name IN ({targets}) OR c.opType IN ({targets}))"

    def rows(sql: str, *args: int) -> np.ndarray:
        return in_start_order(np.array(conn.execute(sql, args).fetchall(), np.int64).reshape(-1, 4))[:, [0, 2, 1]]

    barrier = rows(f"SELECT {cols} {JOIN} WHERE c.name IN ({barriers})")
    target = rows(f"SELECT {cols} {JOIN} WHERE {match}")
    bounds = window(target[:, 1])
    others = (
        rows(f"SELECT {cols} {JOIN} WHERE {match} IS NOT TRUE AND t.startNs >= ? AND t.startNs < ?", *bounds)
        if bounds
        else np.zeros((0, 3), np.int64)
    )
    conn.close()
    return Arrays(target, barrier[:, 1:], others)


def concat_columns(
    conn: sqlite3.Connection, columns: list[str], where: str, args: tuple = (), check: str = "iif"
) -> np.ndarray:
    """One row out of SQLite: count(*) and each column as one comma-joined string, parsed by numpy.
    check 'iif': non-integers become NULL, which group_concat drops, so a column comes out short;
    'max': a TEXT or BLOB sorts above every number, so typeof(max(column)) tells (a REAL or NULL is caught by
    the parse or the count); 'none': no check (not safe, for the comparison only)."""
    if check == "iif":
        parts = [f"group_concat({strict_int(c)})" for c in columns]
    else:
        parts = [f"group_concat({c})" for c in columns]
    if check == "max":
        parts += [f"typeof(max({c}))" for c in columns]
    row = conn.execute(f"SELECT count(*), {', '.join(parts)} {JOIN} WHERE {where}", args).fetchone()
    count, texts = row[0], row[1 : 1 + len(columns)]
    if check == "max" and count and any(kind not in ("integer", "real") for kind in row[1 + len(columns) :]):
        raise ValueError("non-integer")
    if count == 0:
        return np.zeros((0, len(columns)), np.int64)
    out = np.column_stack([np.fromstring(text or "", dtype=np.int64, sep=",") for text in texts])
    if len(out) != count:
        raise ValueError("non-integer")
    return out


def scan_order(rows: np.ndarray) -> np.ndarray:
    """Rows of (..., startNs, globalTaskId) by a stable sort on startNs alone: ties keep COMPUTE_TASK_INFO's scan
    order (the id column is still fetched so that the output has the same shape)."""
    return rows[np.argsort(rows[:, -2], kind="stable")][:, :-1]


def concat_variant(
    check: str,
    one_scan: bool = False,
    mmap: bool = False,
    id_bound: bool = False,
    stable: bool = False,
    immutable: bool = False,
) -> Callable[[Path], Arrays]:
    def read(path: Path) -> Arrays:
        conn = connect(path, mmap, immutable)
        targets, barriers = id_lists(conn)
        match = f"(c.name IN ({targets}) OR c.opType IN ({targets}))"
        cols = ["c.name", "t.startNs", "t.endNs", "t.globalTaskId"]
        in_start_order = scan_order if stable else globals()["in_start_order"]
        if one_scan:
            # One pass over COMPUTE_TASK_INFO for target and barrier launches; a kind column splits them.
            kind = f"(c.name IN ({barriers}) IS TRUE) + 2 * ({match} IS TRUE)"
            both = concat_columns(
                conn,
                ["c.name", "t.startNs", "t.endNs", kind, "t.globalTaskId"],
                f"c.name IN ({barriers}) OR {match}",
                check=check,
            )
            both = in_start_order(both)
            target, barrier = both[both[:, 3] & 2 != 0][:, :3], both[both[:, 3] & 1 != 0][:, :3]
        else:
            barrier = in_start_order(concat_columns(conn, cols, f"c.name IN ({barriers})", check=check))
            target = in_start_order(concat_columns(conn, cols, match, check=check))
        bounds = window(target[:, 1])
        others = np.zeros((0, 3), np.int64)
        if bounds and id_bound:
            # The window's globalTaskIds from one TASK scan, so that only COMPUTE_TASK_INFO rows in that id range
            # are joined (exact: every task starting in the window has an id in that range).
            low, high = conn.execute(
                "SELECT min(globalTaskId), max(globalTaskId) FROM TASK WHERE startNs >= ? AND startNs < ?", bounds
            ).fetchone()
            where = f"c.globalTaskId BETWEEN ? AND ? AND {match} IS NOT TRUE AND t.startNs >= ? AND t.startNs < ?"
            others = in_start_order(concat_columns(conn, cols, where, (low, high, *bounds), check))
        elif bounds:
            others = in_start_order(
                concat_columns(conn, cols, f"{match} IS NOT TRUE AND t.startNs >= ? AND t.startNs < ?", bounds, check)
            )
        conn.close()
        return Arrays(target, barrier[:, 1:], others)

    return read


VARIANTS: dict[str, Callable[[Path], Arrays]] = {
    "fetchall row tuples, ORDER BY (today)": fetchall_today,
    "fetchall row tuples, numpy sort": fetchall_numpy_sort,
    "group_concat, IIF strict_int": concat_variant("iif"),
    "group_concat, typeof(max()) check": concat_variant("max"),
    "group_concat, typeof(max()), stable sort, scan-order ties": concat_variant("max", stable=True),
    "group_concat, typeof(max()), mmap": concat_variant("max", mmap=True),
    "group_concat, typeof(max()), others joined in id range": concat_variant("max", id_bound=True),
    "group_concat, typeof(max()), immutable=1 (no locks)": concat_variant("max", immutable=True),
    "group_concat, no check (UNSAFE, reference)": concat_variant("none"),
    "one scan target+barrier, IIF": concat_variant("iif", one_scan=True),
    "one scan target+barrier, typeof(max())": concat_variant("max", one_scan=True),
    "one scan, typeof(max()), mmap": concat_variant("max", one_scan=True, mmap=True),
}


def library(path: Path) -> None:
    """This branch's read_db_target with the workflow's arguments (names resolved: not compared here)."""
    read_db_target(path, lambda n: bool(TARGET.match(n)), CONTEXT_LAUNCHES, is_barrier=lambda n: bool(BARRIER.match(n)))


def device_distinct(path: Path) -> list[int]:
    with connect(path) as conn:
        return sorted(d for (d,) in conn.execute("SELECT DISTINCT deviceId FROM TASK"))


def device_minmax(path: Path) -> list[int]:
    """One aggregate; DISTINCT only when the ids differ."""
    with connect(path) as conn:
        low, high, count = conn.execute("SELECT min(deviceId), max(deviceId), count(*) FROM TASK").fetchone()
        if low == high:
            return [low] if count else []
        return sorted(d for (d,) in conn.execute("SELECT DISTINCT deviceId FROM TASK"))


def read_all(name: str, paths: list[Path]) -> list[Arrays]:
    return [VARIANTS[name](p) for p in paths]


def pooled(name: str, paths: list[Path], jobs: int) -> list[Arrays]:
    """The same reads in a pool: parallelism over ranks, not a faster read (the workflow runs its parse jobs
    side by side on the same cores already)."""
    chunks = [paths[i::jobs] for i in range(jobs)]
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(read_all, [name] * jobs, chunks))
    return []


def same(a: Arrays, b: Arrays) -> bool:
    return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--ranks", type=int, default=0, help="first N ranks (0: all)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    nodes = sorted((p for p in args.collection.iterdir() if p.name.startswith("node")), key=lambda p: int(p.name[4:]))
    paths = [db for node in nodes for prof in sorted(node.iterdir()) for db in sorted(prof.glob("msprof_*.db"))]
    paths = paths[: args.ranks] if args.ranks else paths
    reference = read_all(next(iter(VARIANTS)), paths)
    timed: dict[str, Callable[[], object]] = {name: (lambda n=name: read_all(n, paths)) for name in VARIANTS}
    for name in ("fetchall row tuples, ORDER BY (today)", "group_concat, typeof(max()), others joined in id range"):
        timed[f"pool of {args.jobs} over ranks: {name}"] = lambda n=name: pooled(n, paths, args.jobs)
    timed["library read_db_target (this branch)"] = lambda: [library(p) for p in paths]
    timed["device ids: SELECT DISTINCT deviceId"] = lambda: [device_distinct(p) for p in paths]
    timed["device ids: min/max/count, DISTINCT if differ"] = lambda: [device_minmax(p) for p in paths]
    assert [device_distinct(p) for p in paths[:8]] == [device_minmax(p) for p in paths[:8]]
    agree = {name: all(same(a, b) for a, b in zip(reference, read_all(name, paths))) for name in VARIANTS}
    walls: dict[str, list[float]] = {name: [] for name in timed}
    cpus: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(args.repeats):
        for name, run in timed.items():
            wall, cpu = time.perf_counter(), time.process_time()
            run()
            walls[name].append((time.perf_counter() - wall) * 1000 / len(paths))
            cpus[name].append((time.process_time() - cpu) * 1000 / len(paths))
    first = next(iter(VARIANTS))
    wall_base, cpu_base = statistics.median(walls[first]), statistics.median(cpus[first])
    print(f"{len(paths)} ranks of {args.collection}, median of {args.repeats} alternating repeats")
    print(f"{'variant':58s} {'wall ms/rank':>12s} {'ratio':>6s} {'cpu ms/rank':>11s} {'ratio':>6s}  same arrays")
    for name in timed:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        pooled_row = name.startswith("pool")
        note = {True: "yes", False: "NO"}.get(agree.get(name), "-")
        cpu_text = f"{'-':>11s} {'-':>6s}" if pooled_row else f"{cpu:11.2f} {cpu / cpu_base:6.2f}"
        print(f"{name:58s} {wall:12.2f} {wall / wall_base:6.2f} {cpu_text}  {note}")
    print(
        f"pool rows: {args.jobs} processes share the ranks: parallelism, "
        "not a faster read (wall / ranks; their CPU is in the workers)."
    )
    print("cpu: this process's CPU time, steadier than wall on a shared machine. device rows: the device check alone.")


if __name__ == "__main__":
    main()
