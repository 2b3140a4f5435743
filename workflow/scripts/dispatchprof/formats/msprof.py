"""msprof PROF_ directories (docs/formats.md §1): discovery, identity files, and the timeline's hot path,
one target kernel read from each of hundreds of ranks (read_target_kernels) with sqlite3 and numpy only.

Whole kernel tables (db, op_summary CSVs, msprof JSON, as DataFrames) are in msprof_tables. Times are integer
nanoseconds. A file that cannot be read raises MsprofFormatError naming the file, the line (where there is
one) and the field.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from dispatchprof.formats.names import PROF_RE
from dispatchprof.formats.sqlite_read import read_only_db
from dispatchprof.formats.encoding import encoding_problem
from dispatchprof.formats.text import read_text_file

DB_RE = re.compile(r"^msprof_\d{14}\.db$")
DEVICE_DIR_RE = re.compile(r"^device_(\d{1,2})$")
OP_SUMMARY_RE = re.compile(r"^op_summary_(?:slice_(\d+)_)?\d{14}\.csv$")
JSON_RE = re.compile(r"^msprof(?:_\d+){0,4}(?:_slice_\d+)?\.json$")


class MsprofFormatError(ValueError):
    """An msprof file that cannot be used as it is."""


@dataclass
class ProfInfo:
    path: Path
    pid: int | None
    hostname: str | None
    host_uid: str | None
    devices: list[int]
    rank_id: int | None  # None when msprof wrote -1 or nothing
    db: Path | None
    text_dir: Path | None
    error_lines: list[str] = field(default_factory=list)
    versions: dict[str, Any] = field(default_factory=dict)
    # Where the device ids came from: device_<id>/info.json.<id>, else the db's TASK.deviceId, else the export's
    # Device_id column (a shared PROF_ often holds only mindstudio_profiler_output/), else "none".
    devices_from: str = "info"
    device_rank_ids: dict[int, int | None] = field(default_factory=dict)  # rank_id of each info.json.<id>
    kind: str = "msprof"  # the layout it came in (formats/prof_tree.py): msprof | torch_npu | export
    rank_from: str | None = None  # where rank_id was read, when it was
    missing_why: str | None = None  # why it has no tables to read, where its layout says more than has_kernel_tables
    kernel_details: Path | None = (
        None  # torch_npu's text export of the kernels, read where there is no db or msprof export
    )

    @property
    def has_kernel_tables(self) -> bool:
        """A db or a text export to read launches from."""
        return self.db is not None or self.text_dir is not None or self.kernel_details is not None


def discover(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and PROF_RE.match(p.name)) if root.is_dir() else []


def load_json(path: Path) -> Any:
    text = read_text_file(path, MsprofFormatError, "a UTF-8 JSON file")  # a re-saved file may start with a BOM: read
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MsprofFormatError(f"{path}: not valid JSON ({exc})") from exc


def load_trace_events(path: Path) -> list[Any]:
    """An msprof JSON's event list: a bare array, or the object form's traceEvents."""
    events = load_json(path)
    if isinstance(events, dict):
        events = events.get("traceEvents")
    if not isinstance(events, list):
        raise MsprofFormatError(f"{path}: expected a JSON array of trace events")
    return events


def read_prof_info(prof: Path) -> ProfInfo:
    """Identity of one PROF_: from device_<id>/info.json.<id> (pid, hostname, rank_id), else host/info.json.
    Without device info files the device ids come from the db, else from the text export. The db's session (schema
    version, whether it ended) is read with its launches (read_db_target), in the same connection."""
    entries = list(prof.iterdir())
    devices = sorted(
        int(m.group(1))
        for p in entries
        if (m := DEVICE_DIR_RE.match(p.name)) and (p / f"info.json.{m.group(1)}").is_file()
    )
    info: dict[str, Any] = {}
    if devices:
        info = load_json(prof / f"device_{devices[0]}" / f"info.json.{devices[0]}")
    elif (prof / "host" / "info.json").is_file():
        info = load_json(prof / "host" / "info.json")
    if not isinstance(info, dict):
        raise MsprofFormatError(f"{prof}: info.json is not an object")
    pid = info.get("pid")
    try:
        pid = int(pid) if pid not in (None, "") else None
    except (TypeError, ValueError):
        raise MsprofFormatError(f"{prof}: info.json field 'pid' is {pid!r}, expected an integer") from None
    rank = recorded_rank(info.get("rank_id"))
    device_ranks = {devices[0]: rank} if devices else {}
    for device in devices[1:]:
        other = load_json(prof / f"device_{device}" / f"info.json.{device}")
        device_ranks[device] = recorded_rank(other.get("rank_id")) if isinstance(other, dict) else None
    dbs = sorted(p for p in entries if DB_RE.match(p.name))
    text = prof / "mindstudio_profiler_output"
    errors = []
    for log in sorted((prof / "mindstudio_profiler_log").glob("*.log")):
        errors += [
            f"{log.name}: {line.strip()}"
            for line in log.read_text(encoding="utf-8-sig", errors="replace").splitlines()
            if "[ERROR]" in line
        ]
    db = dbs[-1] if dbs else None
    text_dir = text if text.is_dir() else None
    devices_from = "info"
    if not devices and db is not None:
        devices, devices_from = db_devices(db), "db"
    elif not devices and text_dir is not None:
        devices, devices_from = export_devices(text_dir), "export"
    return ProfInfo(
        path=prof,
        pid=pid,
        hostname=info.get("hostname"),
        host_uid=info.get("hostUid"),
        devices=devices,
        rank_id=rank,
        db=db,
        text_dir=text_dir,
        error_lines=errors,
        versions={k: info.get(k) for k in ("cannVersion", "drvVersion", "platform_version") if info.get(k)},
        devices_from=devices_from if devices else "none",
        device_rank_ids=device_ranks,
        rank_from="info.json rank_id"
        if rank is not None or any(r is not None for r in device_ranks.values())
        else None,
    )


def recorded_rank(value: Any) -> int | None:
    """info.json rank_id as a rank, None for -1 or absent (plain msprof records none)."""
    return int(value) if isinstance(value, int | str) and str(value).lstrip("-").isdigit() and int(value) >= 0 else None


def db_session(conn: sqlite3.Connection) -> tuple[str | None, bool | None]:
    """(SCHEMA_VERSION, whether the session ended): a NULL SESSION_TIME_INFO.endTimeNs means the profiled process
    exited abnormally (docs/formats.md §1), so its launches may stop short. None where a table is absent."""
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = (
        conn.execute("SELECT value FROM META_DATA WHERE name = 'SCHEMA_VERSION'").fetchone()
        if "META_DATA" in tables
        else None
    )
    ended = None
    if "SESSION_TIME_INFO" in tables:
        rows = conn.execute("SELECT endTimeNs FROM SESSION_TIME_INFO").fetchall()
        ended = bool(rows) and all(isinstance(end, int) and end > 0 for (end,) in rows)
    return (str(version[0]) if version else None), ended


def db_devices(path: Path) -> list[int]:
    rows, _ = query_db(
        path,
        lambda conn, _: conn.execute(f"SELECT DISTINCT {strict_int('deviceId')} FROM TASK").fetchall(),
        strings=False,
    )
    return sorted(int(d) for (d,) in rows if d is not None and d != HOST_DEVICE)


def db_chip_names(path: Path) -> list[str]:
    """The chip names a db's NPU_INFO(id, name) records (docs/formats.md §1); [] when it has none."""

    def names(conn: sqlite3.Connection, _: Any) -> list[str]:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='NPU_INFO'").fetchone():
            return []
        return sorted({str(n) for (n,) in conn.execute("SELECT name FROM NPU_INFO").fetchall() if n not in (None, "")})

    return query_db(path, names, strings=False)[0]


def communication_ops_named(path: Path, named: Callable[[str], bool]) -> int:
    """How many COMMUNICATION_OP rows (HCCL ops: hcom_allReduce_..., docs/formats.md §1) of a db have an opName that
    ``named`` accepts; 0 without the table. Asked only when no compute launch matched, to say why."""

    def count(conn: sqlite3.Connection, strings: dict[int, str]) -> int:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='COMMUNICATION_OP'").fetchone():
            return 0
        return sum(
            n
            for op, n in conn.execute("SELECT opName, count(*) FROM COMMUNICATION_OP GROUP BY opName")
            if named(str(strings.get(op, op)))
        )

    return query_db(path, count)[0]


def prof_chips(info: ProfInfo, with_db: bool) -> set[str]:
    """What a PROF_ says of its chip, each with where it says it: info.json's platform_version (msprof's chip model
    number, e.g. "5" for its CHIP_V4_1_0) and, ``with_db``, the db's NPU_INFO names."""
    found = (
        {f"platform_version {info.versions['platform_version']} (info.json)"}
        if info.versions.get("platform_version")
        else set()
    )
    if with_db and info.db is not None:
        found |= {f"{name} (NPU_INFO of the db)" for name in db_chip_names(info.db)}
    return found


HOST_DEVICE = 31  # the host in the JSON pid encoding (pid & 31 == 31, docs/formats.md §1)


def export_devices(text_dir: Path) -> list[int]:
    """Device ids an export carries: the op_summary's Device_id column, else the msprof JSON's pid & 31."""
    summaries = op_summary_files(text_dir)
    if summaries:
        found: set[int] = set()
        for path in summaries:
            problem = encoding_problem(path)  # a UTF-16 export would read as a header without Device_id
            if problem:
                raise MsprofFormatError(problem)
            try:
                with open(
                    path, newline="", encoding="utf-8-sig", errors="replace"
                ) as handle:  # as formats/text.py reads it
                    reader = csv.reader(handle)
                    header = [c.strip() for c in next(reader, [])]
                    if "Device_id" not in header:
                        raise MsprofFormatError(f"{path}: line 1: header lacks Device_id")
                    column = header.index("Device_id")
                    for row in reader:
                        if not any(cell.strip() for cell in row):
                            continue
                        value = row[column].strip() if len(row) > column else ""
                        if not (value.isascii() and value.isdigit()):
                            raise MsprofFormatError(
                                f"{path}: line {reader.line_num}: field 'Device_id' "
                                f"is {value!r}, expected a device number"
                            )
                        found.add(int(value))
            except csv.Error as exc:
                raise MsprofFormatError(f"{path}: not a readable CSV ({exc})") from exc
        return sorted(found)
    devices: set[int] = set()
    for path in sorted(p for p in text_dir.iterdir() if JSON_RE.match(p.name)):
        events = load_trace_events(path)
        devices.update(
            e["pid"] & 31
            for e in events
            if isinstance(e, dict) and e.get("ph") == "X" and isinstance(e.get("pid"), int)
        )
    return sorted(devices - {HOST_DEVICE})


KERNEL_JOIN = "FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId"


def strict_int(column: str) -> str:
    """SQL for an integer column that yields NULL for any other type: numpy then refuses the row, where a REAL
    would be truncated without a word."""
    return f"IIF(typeof({column}) = 'integer', {column}, NULL)"


def int_rows(rows: list[tuple], width: int, path: Path) -> np.ndarray:
    try:
        return np.array(rows, dtype=np.int64).reshape(len(rows), width)
    except (TypeError, ValueError, OverflowError) as exc:
        raise MsprofFormatError(f"{path}: TASK/COMPUTE_TASK_INFO hold non-integer ids or times ({exc})") from exc


def end_to_duration(rows: np.ndarray, start: int, end: int, path: Path) -> None:
    """Column ``end`` (TASK.endNs) becomes the duration, in place (the rows came through strict_int, so both are
    integers). A task ending before it starts is refused."""
    rows[:, end] -= rows[:, start]
    refuse_negative_durations(rows[:, end], rows[:, start], path)


def resolve_ids(
    ids: np.ndarray, strings: Mapping[int, str], path: Path, field_name: str, table: str = "COMPUTE_TASK_INFO"
) -> np.ndarray:
    """STRING_IDS ids to their text, looked up once per distinct id."""
    if len(ids) and ids.min() == ids.max():  # one name (the target, usually): no np.unique
        unique, inverse = ids[:1], np.zeros(len(ids), dtype=np.intp)
    else:
        unique, inverse = np.unique(ids, return_inverse=True)
    missing = [int(u) for u in unique if int(u) not in strings]
    if missing:
        raise MsprofFormatError(f"{path}: {table}.{field_name} refers to id {missing[0]}, missing from STRING_IDS")
    return (
        np.array([strings[int(u)] for u in unique], dtype=object)[inverse]
        if len(unique)
        else np.array([], dtype=object)
    )


MMAP_BYTES = 1 << 30


def string_ids(conn: sqlite3.Connection) -> dict[int, str]:
    return dict(conn.execute("SELECT id, value FROM STRING_IDS"))


def ids_named(strings: Mapping[int, str], named: Callable[[str], bool], path: Path) -> list[int]:
    """The STRING_IDS ids whose text ``named`` accepts. Such an id that is no integer is refused: it could not be
    looked for in SQL, and a TEXT '5' is not the id 5 (elsewhere a TEXT number is refused too)."""
    found = [i for i, v in strings.items() if named(str(v))]
    odd = [i for i in found if not isinstance(i, int)]
    if odd:
        raise MsprofFormatError(f"{path}: STRING_IDS.id {odd[0]!r} (of {strings[odd[0]]!r}) is not an integer")
    return found


def query_db(
    path: Path, query: Callable[[sqlite3.Connection, dict[int, str]], Any], strings: bool = True
) -> tuple[Any, dict[int, str]]:
    """Open the db without writing beside it (read_only_db: the user's export is read in place), load STRING_IDS
    (unless not ``strings``: then the query gets {}), run ``query``; any SQLite error names the file. A real db's
    STRING_IDS holds every op name and shape string: load it only where names are read."""
    try:
        with read_only_db(path) as conn:
            # Pages read from a memory map, not copied by a read() each (kernel time): ~4% of read_db_target's CPU in
            # passes over 64 ranks. Read-only, so nothing is written
            # through the map; a larger db reads the rest as usual.
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            names = string_ids(conn) if strings else {}
            return query(conn, names), names
    except sqlite3.Error as exc:
        raise MsprofFormatError(f"{path}: not a readable msprof database ({exc})") from exc


@dataclass(frozen=True)
class TargetKernels:
    """One PROF_'s launches of the target kernel, and the other kernels that start between its launches in the
    call-chain window (launch 0 up to launch ``context_intervals``): integer-ns numpy arrays in start order.
    This is what the timeline needs from each of hundreds of ranks, without a DataFrame per rank."""

    source: str
    name: np.ndarray  # object: the matched symbol of each launch
    start_ns: np.ndarray
    dur_ns: np.ndarray
    stream: np.ndarray  # -1 where the file has none or they were not asked for
    task_id: np.ndarray
    other_name: np.ndarray
    other_start_ns: np.ndarray
    other_dur_ns: np.ndarray
    context_intervals: int  # launch intervals the other kernels cover
    # Every launch of the barrier kernel (synchronize_start's cached_notify_combine) when asked for: start order.
    barrier_start_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    barrier_dur_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    schema_version: str | None = None  # db META_DATA SCHEMA_VERSION
    session_ended: bool | None = None  # db SESSION_TIME_INFO.endTimeNs present (None: a text export, or no such table)
    # Per target launch, the host API call that launched it (read_host_calls): None where the source has no such table.
    host: HostCalls | None = None

    @property
    def symbols(self) -> list[str]:
        return sorted(set(map(str, self.name.tolist())))  # tolist: Python objects in one C pass, not 2000 numpy scalars


@dataclass(frozen=True)
class HostCalls:
    """Per target launch (in the launches' order), the host API call msprof recorded as its launcher: the CANN_API row
    whose connectionId is the task's. start -1 and name "" where a launch has none."""

    table: str  # where they were read: "CANN_API"
    start_ns: np.ndarray
    dur_ns: np.ndarray
    name: np.ndarray  # object
    refused: str | None = None  # why none were read from a table that is there (a malformed row, naming its field)

    @staticmethod
    def none_read(launches: int, reason: str) -> HostCalls:
        """A rank whose host calls were refused: its launches stand (they are the device's), without host calls."""
        return HostCalls(
            HOST_API_TABLE, np.full(launches, -1), np.full(launches, -1), np.full(launches, "", object), reason
        )

    @property
    def found(self) -> int:
        return int((self.start_ns >= 0).sum())


def context_intervals(launches: int, context_launches: int) -> int:
    """Intervals between target launches covered by the call-chain window (0 = every interval)."""
    intervals = max(launches - 1, 0)
    return min(intervals, context_launches) if context_launches > 0 else intervals


DURATION = "t.endNs - t.startNs"  # leaves SQLite in place of t.endNs: ~7 digits of text to write and parse, not 19


def raw_columns(columns: list[str]) -> list[str]:
    """The table columns behind ``columns``, in their order: what the type checks look at. DURATION reads t.endNs
    and t.startNs, which int_columns' callers always fetch (last)."""
    return ["t.endNs" if column == DURATION else column for column in columns]


def int_columns(
    conn: sqlite3.Connection, columns: list[str], where: str, args: tuple[int, ...], path: Path
) -> np.ndarray:
    """The kernel-join rows ``where`` selects, as int64 rows of ``columns`` in start order: the last column must be
    t.startNs, and ties sort by t.globalTaskId. The task id is only the tie-break, so it leaves SQLite (~1/6 of a
    query's cost) only when two rows start together: rows whose starts all differ are put in order by their start
    alone (one kernel on one stream usually comes in that order already). Its own type is not checked
    (task_ids_within allows ids that are no integers too)."""
    rows = fetch_int_columns(conn, columns, where, args, path)
    if len(rows) < 2 or (np.diff(rows[:, -1]) > 0).all():
        return rows
    rows = rows[np.argsort(rows[:, -1], kind="stable")]
    if (np.diff(rows[:, -1]) > 0).all():
        return rows
    rows = fetch_int_columns(conn, [*columns, "t.globalTaskId"], where, args, path)
    return rows[np.lexsort((rows[:, -1], rows[:, -2]))][:, :-1]


def fetch_int_columns(
    conn: sqlite3.Connection, columns: list[str], where: str, args: tuple[int, ...], path: Path
) -> np.ndarray:
    """The kernel-join rows ``where`` selects, as int64 rows of ``columns`` (table columns, or DURATION) in
    SQLite's scan order.

    Each column leaves SQLite as one comma-joined string (group_concat) that numpy parses: Python's row objects
    were most of the cost of reading hundreds of ranks. strict_int's guarantee holds without a function call per
    value, on the table columns themselves (raw_columns), before any arithmetic: a TEXT or BLOB sorts above every
    number in SQLite, so the type of the largest value tells (even one that looks like an integer, which
    arithmetic would silently read as a number). One typeof(max()) over each row's scalar max(...) of all of them
    checks them at once (a TEXT or BLOB is its row's max, unless the row holds a NULL): 11% of the target query's
    instructions, not 14%. A NULL, in a column or through a difference, is left out of group_concat, so the column
    comes out short of count(*); a REAL, or a difference that overflows (SQLite then computes it as a REAL), prints
    with a '.' or an exponent ('2.0', '1.0e+20'), which the integer parse refuses. Only when something is wrong
    does refuse_non_integers ask per column, to name the column."""
    raw = raw_columns(columns)
    texts = ", ".join(f"group_concat({c})" for c in columns)
    row_max = f"max({', '.join(raw)})" if len(raw) > 1 else raw[0]  # scalar max: NULL if any is NULL
    count, kind, *rest = conn.execute(
        f"SELECT count(*), typeof(max({row_max})), {texts} {KERNEL_JOIN} WHERE {where}", args
    ).fetchone()
    if count == 0:
        return np.zeros((0, len(columns)), dtype=np.int64)
    parsed = [parse_ints(text, count) for text in rest] if kind in ("integer", "real") else [None]
    if any(values is None for values in parsed):
        refuse_non_integers(conn, raw, where, args, path)  # raises, naming the first column that is no integer
        raise MsprofFormatError(
            f"{path}: TASK.endNs - startNs does not fit in a 64-bit integer"
        )  # the columns are integers
    return np.column_stack(parsed)


def parse_ints(text: str | None, count: int) -> np.ndarray | None:
    """A group_concat of integers as int64, None unless it parses to exactly ``count`` values."""
    try:
        values = np.fromstring(text or "", dtype=np.int64, sep=",")
    except (ValueError, DeprecationWarning):  # a REAL's text (older numpy warned and stopped short instead)
        return None
    return values if len(values) == count else None


def refuse_non_integers(
    conn: sqlite3.Connection, columns: list[str], where: str, args: tuple[int, ...], path: Path
) -> None:
    """Table columns one by one, each with its own typeof(max()) and parse: refuses the first that holds a TEXT,
    BLOB, REAL or NULL among the rows ``where`` selects, naming it and what it holds."""
    kinds = ", ".join(f"typeof(max({c}))" for c in columns)
    texts = ", ".join(f"group_concat({c})" for c in columns)
    count, *rest = conn.execute(f"SELECT count(*), {kinds}, {texts} {KERNEL_JOIN} WHERE {where}", args).fetchone()
    for column, kind, text in zip(columns, rest[: len(columns)], rest[len(columns) :]):
        if kind not in ("integer", "real") or parse_ints(text, count) is None:
            held = f"a {kind.upper()}" if kind not in ("integer", "real") else "a REAL or NULL"
            raise MsprofFormatError(
                f"{path}: TASK/COMPUTE_TASK_INFO hold non-integer ids or times ({column} holds {held})"
            )


def refuse_negative_durations(durations: np.ndarray, starts: np.ndarray, path: Path) -> None:
    """A task ending before it starts is refused."""
    negative = durations < 0
    if negative.any():
        raise MsprofFormatError(f"{path}: TASK.endNs before startNs at startNs {int(starts[negative][0])}")


def task_ids_within(conn: sqlite3.Connection, window: tuple[int, int]) -> str:
    """A condition on COMPUTE_TASK_INFO alone that keeps every row whose task starts in ``window``, so that the
    join looks up only those (a lookup in TASK per row was most of the context query). From one scan of TASK:
    the window's tasks have ids from min to max. A TEXT or BLOB id is kept too (it is above every integer), as
    the join may still read '5' as task 5 where the column has no type affinity."""
    low, high = conn.execute(
        "SELECT min(globalTaskId), max(globalTaskId) FROM TASK WHERE startNs >= ? AND startNs < ?", window
    ).fetchone()
    if low is None:
        return "0"  # no task starts in the window
    if not (isinstance(low, int) and isinstance(high, int)):
        return "1"  # TASK ids that are no rowid and not all integers: no bound, the join decides
    return f"(c.globalTaskId BETWEEN {low} AND {high} OR c.globalTaskId > 9223372036854775807)"


HOST_API_TABLE = "CANN_API"
HOST_API_FIELDS = ("startNs", "endNs", "connectionId", "name")  # what read_host_calls reads of CANN_API


def host_api_readable(conn: sqlite3.Connection, path: Path) -> bool:
    """Whether the db links tasks to host API calls: a CANN_API table and TASK.connectionId. Their absence is normal
    (an older db, a collection without host APIs): no host calls then. A CANN_API without a field read is refused."""
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (HOST_API_TABLE,)).fetchone()
    linked = conn.execute("SELECT 1 FROM pragma_table_info('TASK') WHERE name = 'connectionId'").fetchone()
    if not (has and linked):
        return False
    fields = {name for (name,) in conn.execute(f"SELECT name FROM pragma_table_info('{HOST_API_TABLE}')")}
    missing = [f for f in HOST_API_FIELDS if f not in fields]
    if missing:
        raise MsprofFormatError(f"{path}: {HOST_API_TABLE} has no field {missing[0]!r}")
    return True


NO_LINK = -(2**63)  # a task without a connectionId (NULL) in the target rows' link column
LINK = f"ifnull(t.connectionId, {NO_LINK})"  # read with the target rows, so that CANN_API is looked up by its key alone


def host_calls_of(
    conn: sqlite3.Connection, strings: Mapping[int, str], links: np.ndarray, path: Path, first: int
) -> HostCalls:
    """The host calls of the first ``first`` target launches (0: all; the trace draws only the first used ones, and
    one lookup per launch doubled a rank's read at 2,000 launches); a malformed row refuses the host calls only."""
    if first > 0:
        links = np.where(np.arange(len(links)) < first, links, NO_LINK)
    try:
        return read_host_calls(conn, strings, links, path)
    except MsprofFormatError as exc:
        return HostCalls.none_read(len(links), str(exc))


def read_host_calls(conn: sqlite3.Connection, strings: Mapping[int, str], links: np.ndarray, path: Path) -> HostCalls:
    """Per target launch (its task's connectionId in ``links``, NO_LINK for none) the CANN_API row with that
    connectionId: msprof's link from a host call to the tasks it launched (docs/formats.md §1.3). A task without a
    matching row has none; a matching row whose times or name are no integers (NULL, REAL, TEXT), that ends before it
    starts, or names an id missing from STRING_IDS is refused, naming the field. Rows sharing a connectionId (its
    primary key in real dbs): the first in SQLite's order of (startNs, endNs, name). Only the target's rows are read,
    by connectionId (an index lookup each in a real db): no second scan of the kernel tables."""
    wanted = np.unique(links[links != NO_LINK]).tolist()
    among = f"FROM {HOST_API_TABLE} WHERE connectionId IN ({','.join(map(str, wanted))})"
    rows = well_formed_rows(conn, among)
    if rows is None:  # a row is not (or several share a connectionId): each looked at, the first odd one refused
        order = "ORDER BY connectionId, startNs, endNs, name"
        return host_calls_checked(
            conn.execute(f"SELECT connectionId, startNs, endNs, name {among} {order}"), links, strings, path
        )
    if not len(rows):
        return host_calls_checked([], links, strings, path)
    at = np.searchsorted(rows[:, 0], links).clip(0, len(rows) - 1)
    hit = rows[at, 0] == links
    names = resolve_ids(rows[:, 3], strings, path, "name", HOST_API_TABLE)
    return HostCalls(
        HOST_API_TABLE,
        np.where(hit, rows[at, 1], -1),
        np.where(hit, rows[at, 2], -1),
        np.where(hit, names[at], "").astype(object),
    )


def well_formed_rows(conn: sqlite3.Connection, among: str) -> np.ndarray | None:
    """The CANN_API rows ``among`` selects as int64 (connectionId, startNs, duration, name) sorted by connectionId,
    when every one is well formed (integers, a start >= 0, an end no earlier) and no two share a connectionId: the
    usual case, read as one string per column as fetch_int_columns does, with no Python object per row. None
    otherwise. The strings are asked for only when every cell is an integer: a BLOB's would not decode."""
    columns = ("connectionId", "startNs", "endNs - startNs", "name")
    texts = ", ".join(f"iif(sum({INTEGER_CELLS}) = count(*), group_concat({c}), NULL)" for c in columns)
    count, low, *rest = conn.execute(f"SELECT count(*), min(min(startNs, endNs - startNs)), {texts} {among}").fetchone()
    if count == 0:
        return np.zeros((0, 4), np.int64)
    parsed = [parse_ints(text, count) for text in rest]
    if not isinstance(low, int) or low < 0 or any(p is None for p in parsed):
        return None
    rows = np.column_stack(parsed)
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    return rows if (np.diff(rows[:, 0]) > 0).all() else None


INTEGER_CELLS = " AND ".join(f"typeof({c}) = 'integer'" for c in ("connectionId", "startNs", "endNs", "name"))


def host_calls_checked(rows: Iterable[tuple], links: np.ndarray, strings: Mapping[int, str], path: Path) -> HostCalls:
    """read_host_calls for rows of which one may be malformed: each row that is the first of its connectionId is
    checked (host_call), so that the first one that is not well formed is refused, naming its field."""
    first: dict[Any, tuple] = {}
    for row in rows:
        first.setdefault(row[0], row)
    calls = {link: host_call(*row, strings, path) for link, row in first.items()}
    found = [calls.get(link) for link in links.tolist()]
    return HostCalls(
        HOST_API_TABLE,
        np.array([c[0] if c else -1 for c in found], dtype=np.int64),
        np.array([c[1] if c else -1 for c in found], dtype=np.int64),
        np.array([c[2] if c else "" for c in found], dtype=object),
    )


def host_call(
    link: Any, start: Any, end: Any, name: Any, strings: Mapping[int, str], path: Path
) -> tuple[int, int, str]:
    """One CANN_API row's (start ns, duration ns, name), or a refusal naming the field and the row's connectionId."""
    for field_name, value in (("startNs", start), ("endNs", end), ("name", name)):
        if not isinstance(value, int):
            held = "NULL" if value is None else f"a {type(value).__name__} {value!r}"
            raise MsprofFormatError(
                f"{path}: {HOST_API_TABLE}.{field_name} of connectionId {link!r} is {held}, expected an integer"
            )
    if start < 0:  # ns since the epoch; -1 also marks a launch without a host call
        raise MsprofFormatError(f"{path}: {HOST_API_TABLE}.startNs of connectionId {link!r} is negative ({start})")
    if end < start:
        raise MsprofFormatError(f"{path}: {HOST_API_TABLE}.endNs before startNs at connectionId {link!r}")
    if name not in strings:
        raise MsprofFormatError(
            f"{path}: {HOST_API_TABLE}.name of connectionId {link!r} refers to id {name}, missing from STRING_IDS"
        )
    return start, end - start, str(strings[name])


def read_db_target(
    path: Path,
    is_target: Callable[[str], bool],
    context_launches: int,
    with_ids: bool = False,
    is_barrier: Callable[[str], bool] | None = None,
    device: int | None = None,
    skip_unended: bool = False,
    host_launches: int = 0,
) -> TargetKernels:
    """Target launches and call-chain context from a db: the name test runs once per STRING_IDS entry, the row
    filter and the join in SQLite, and only the integer columns needed leave the database, one string per column
    (int_columns; stream and task id only ``with_ids``). With ``is_barrier``, every launch of the barrier kernel
    too (start and end only). With ``device``, only that device's tasks (a PROF_ of a process that drove several
    devices holds them all). Every list is in start order, ties by globalTaskId. The session (schema version,
    whether it ended) comes along; with ``skip_unended`` the launches of a session that never ended are not read
    (its tables may stop short anywhere): the kernels come back empty, their session_ended False. The host calls of
    the first ``host_launches`` launches (0: all) come along where the db links them (host_calls_of)."""
    ids_columns = ["t.streamId", "t.taskId"] if with_ids else []
    columns = ["c.name", DURATION, "t.startNs"]  # int_columns: t.startNs last
    on_device = f" AND t.deviceId = {int(device)}" if device is not None else ""
    no_rows = np.zeros((0, len(columns)), dtype=np.int64)
    nothing = (
        np.zeros((0, len(columns) + len(ids_columns)), dtype=np.int64),
        no_rows,
        0,
        no_rows[:, 1:],
    )  # target, others, intervals, barrier

    host: list[HostCalls | None] = []  # what launches() read of the host calls (its result stays a 4-tuple)

    def launches(conn: sqlite3.Connection, strings: dict[int, str]) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
        target_ids = ids_named(strings, is_target, path)
        if not target_ids:
            return nothing
        barrier_ids = ids_named(strings, is_barrier, path) if is_barrier is not None else []
        ids = ",".join(map(str, target_ids))
        match = f"(c.name IN ({ids}) OR c.opType IN ({ids}))"
        try:
            linked, refused = host_api_readable(conn, path), None  # then each target row brings its connectionId
        except MsprofFormatError as exc:
            linked, refused = False, str(exc)
        target = int_columns(
            conn,
            ["c.name", DURATION, *ids_columns, *([LINK] if linked else []), "t.startNs"],
            match + on_device,
            (),
            path,
        )
        host.append(
            HostCalls.none_read(len(target), refused)
            if refused
            else host_calls_of(conn, strings, target[:, -2], path, host_launches)
            if linked
            else None
        )
        intervals = context_intervals(len(target), context_launches)
        window = (int(target[0, -1]), int(target[intervals, -1])) if intervals else None
        # The barrier's name is its filter (a name SQLite holds equal to an id, 3.0 = 3, selects its row); it leaves
        # SQLite with the times all the same, so that its type is checked as every other row's, whichever read below.
        barrier_of = f"c.name IN ({','.join(map(str, barrier_ids))})"
        in_window = f"({match} IS NOT TRUE AND t.startNs >= ? AND t.startNs < ?)"
        if (
            barrier_ids
            and window is not None
            and not np.isin(target[:, 0], sorted(set(barrier_ids) - set(target_ids))).any()
        ):
            # One scan for the barrier's launches and the window's other kernels (a scan of COMPUTE_TASK_INFO is
            # ~1/4 of a query), split here by name. Only a barrier launch that is a target by its opType would need
            # its opType to split: such a launch is among the target's rows under the barrier's name, and then the
            # two are read apart below. The c-only term comes first, so that the join looks up only candidates.
            bound = task_ids_within(conn, window)
            rows = int_columns(
                conn, columns, f"({barrier_of} OR {bound}) AND ({barrier_of} OR {in_window}){on_device}", window, path
            )
            name, start = rows[:, 0], rows[:, -1]
            others = ~np.isin(name, target_ids) & (start >= window[0]) & (start < window[1])
            return target, rows[others], intervals, rows[np.isin(name, barrier_ids)][:, 1:]
        barrier = (
            int_columns(conn, columns, f"{barrier_of}{on_device}", (), path)[:, 1:] if barrier_ids else no_rows[:, 1:]
        )
        if window is None:
            return target, no_rows, 0, barrier
        others = int_columns(conn, columns, f"{task_ids_within(conn, window)} AND {in_window}{on_device}", window, path)
        return target, others, intervals, barrier

    def query(
        conn: sqlite3.Connection, _: dict[int, str]
    ) -> tuple[tuple[str | None, bool | None], dict[int, str], tuple]:
        session = db_session(conn)
        if skip_unended and session[1] is False:  # before STRING_IDS too: any table of it may be cut
            return session, {}, nothing
        strings = string_ids(conn)
        return session, strings, launches(conn, strings)

    session, strings, read = query_db(path, query, strings=False)[0]
    return db_target_kernels(read, strings, session, with_ids, host[0] if host else None, path)


def db_target_kernels(
    read: tuple[np.ndarray, np.ndarray, int, np.ndarray],
    strings: Mapping[int, str],
    session: tuple[str | None, bool | None],
    with_ids: bool,
    host: HostCalls | None,
    path: Path,
) -> TargetKernels:
    """read_db_target's rows as TargetKernels. Columns: [name,] duration, [streamId, taskId,] startNs."""
    target, others, intervals, barrier = read
    for rows, duration in ((target, 1), (others, 1), (barrier, 0)):
        refuse_negative_durations(rows[:, duration], rows[:, -1], path)
    none = np.full(len(target), -1, dtype=np.int64)
    return TargetKernels(
        source="db",
        name=resolve_ids(target[:, 0], strings, path, "name"),
        start_ns=target[:, -1],
        dur_ns=target[:, 1],
        stream=target[:, 2] if with_ids else none,
        task_id=target[:, 3] if with_ids else none,
        other_name=resolve_ids(others[:, 0], strings, path, "name"),
        other_start_ns=others[:, -1],
        other_dur_ns=others[:, 1],
        context_intervals=intervals,
        barrier_start_ns=barrier[:, -1],
        barrier_dur_ns=barrier[:, 0],
        schema_version=session[0],
        session_ended=session[1],
        host=host,
    )


def op_summary_files(text_dir: Path) -> list[Path]:
    """op_summary_<ts>.csv, or its 1M-row slices op_summary_slice_<i>_<ts>.csv in slice order."""
    found = [(p, OP_SUMMARY_RE.match(p.name)) for p in text_dir.iterdir()]
    return [p for p, m in sorted(((p, m) for p, m in found if m), key=lambda pm: int(pm[1].group(1) or 0))]
