"""msprof PROF_ directories (shared/formats/msprof.md): identity files, the db, op_summary CSVs, msprof JSON.

Every reader returns the same tidy kernel table, so the three sources can be checked against each other:
device, pid, stream, task_id, name, op_type, task_type, start_ns, dur_ns, source. Times are integer
nanoseconds (the text forms carry epoch microseconds with 3 decimals, which is exact at 1 ns).
Columns are found by header name; a file that cannot be read raises MsprofFormatError naming the file,
the line (where there is one) and the field.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from dispatchprof.formats.text import read_text_file

PROF_RE = re.compile(r"^PROF_\d{1,10}_\d{1,20}_[A-Za-z0-9]{5,20}$")
DB_RE = re.compile(r"^msprof_\d{14}\.db$")
OP_SUMMARY_RE = re.compile(r"^op_summary_(?:slice_(\d+)_)?\d{14}\.csv$")
JSON_RE = re.compile(r"^msprof(?:_\d+){0,4}(?:_slice_\d+)?\.json$")
KERNEL_COLUMNS = ["device", "pid", "stream", "task_id", "name", "op_type", "task_type", "start_ns", "dur_ns", "source"]
NONE_ID = 4294967295
# Task types of compute tasks: what op_summary and COMPUTE_TASK_INFO hold (the JSON also has MEMCPY_ASYNC etc.).
COMPUTE_TASK_TYPES = {"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "DSA_SQE", "COMMUNICATION"}
_US = re.compile(r"^\d+(\.\d+)?$")


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


def discover(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and PROF_RE.match(p.name)) if root.is_dir() else []


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(errors="strict"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MsprofFormatError(f"{path}: not valid JSON ({exc})") from exc


def read_prof_info(prof: Path) -> ProfInfo:
    """Identity of one PROF_: from device_<id>/info.json.<id> (pid, hostname, rank_id), else host/info.json."""
    devices = sorted(int(m.group(1)) for p in prof.iterdir() if (m := re.match(r"^device_(\d{1,2})$", p.name)) and (p / f"info.json.{m.group(1)}").is_file())
    info: dict[str, Any] = {}
    if devices:
        info = _load_json(prof / f"device_{devices[0]}" / f"info.json.{devices[0]}")
    elif (prof / "host" / "info.json").is_file():
        info = _load_json(prof / "host" / "info.json")
    if not isinstance(info, dict):
        raise MsprofFormatError(f"{prof}: info.json is not an object")
    pid = info.get("pid")
    try:
        pid = int(pid) if pid not in (None, "") else None
    except (TypeError, ValueError):
        raise MsprofFormatError(f"{prof}: info.json field 'pid' is {pid!r}, expected an integer") from None
    rank = info.get("rank_id")
    rank = int(rank) if isinstance(rank, int | str) and str(rank).lstrip("-").isdigit() and int(rank) >= 0 else None
    dbs = sorted(p for p in prof.iterdir() if DB_RE.match(p.name))
    text = prof / "mindstudio_profiler_output"
    errors = []
    for log in sorted((prof / "mindstudio_profiler_log").glob("*.log")):
        errors += [f"{log.name}: {line.strip()}" for line in log.read_text(errors="replace").splitlines() if "[ERROR]" in line]
    return ProfInfo(
        path=prof,
        pid=pid,
        hostname=info.get("hostname"),
        host_uid=info.get("hostUid"),
        devices=devices,
        rank_id=rank,
        db=dbs[-1] if dbs else None,
        text_dir=text if text.is_dir() else None,
        error_lines=errors,
        versions={k: info.get(k) for k in ("cannVersion", "drvVersion", "platform_version") if info.get(k)},
    )


def us_to_ns(values: pd.Series, path: Path, field_name: str, first_line: int = 2) -> pd.Series:
    """Epoch-microsecond strings ("1778463028745189.370" + optional TAB) to int64 nanoseconds, exactly."""
    text = values.astype("string").str.strip()
    ok = text.str.fullmatch(_US.pattern).fillna(False)
    if not ok.all():
        bad = int(np.flatnonzero(~ok.to_numpy())[0])
        raise MsprofFormatError(
            f"{path}: line {bad + first_line}: field '{field_name}' is {values.iloc[bad]!r}, expected microseconds like 1778463028745189.370"
        )
    parts = text.str.split(".", n=1, expand=True)
    whole = parts[0].astype("int64")
    frac = parts[1].fillna("").str.ljust(3, "0").str[:3].astype("int64") if parts.shape[1] > 1 else 0
    return whole * 1000 + frac


def _int_column(values: pd.Series, path: Path, field_name: str, allow_na: bool = False) -> pd.Series:
    text = values.astype("string").str.strip()
    na = text.isin(["N/A", "NA", ""])
    ok = text.str.fullmatch(r"-?\d+").fillna(False) | (na if allow_na else False)
    if not ok.all():
        bad = int(np.flatnonzero(~ok.to_numpy())[0])
        raise MsprofFormatError(f"{path}: line {bad + 2}: field '{field_name}' is {values.iloc[bad]!r}, expected an integer")
    return pd.to_numeric(text.mask(na), errors="coerce").astype("Int64")


def read_db(path: Path, name_filter: Callable[[str], bool] | None = None) -> pd.DataFrame:
    """TASK joined with COMPUTE_TASK_INFO inside SQLite (only compute tasks, integer ns).

    Only integer columns leave the database; text ids are resolved once per distinct id. With ``name_filter``,
    only kernels whose name or op type it accepts are read (the filter runs on STRING_IDS, the rows in SQL).
    """
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            strings = dict(conn.execute("SELECT id, value FROM STRING_IDS"))
            where = ""
            if name_filter is not None:
                wanted = [i for i, v in strings.items() if name_filter(str(v))]
                ids = ",".join(str(int(i)) for i in wanted) or "NULL"
                where = f"WHERE c.name IN ({ids}) OR c.opType IN ({ids})"
            rows = conn.execute(
                "SELECT t.deviceId, t.globalPid, t.streamId, t.taskId, c.name, c.opType, t.taskType, t.startNs, t.endNs - t.startNs "
                f"FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId {where} ORDER BY t.startNs"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise MsprofFormatError(f"{path}: not a readable msprof database ({exc})") from exc
    try:
        data = np.array(rows, dtype=np.int64).reshape(len(rows), 9)
    except (TypeError, ValueError, OverflowError) as exc:
        raise MsprofFormatError(f"{path}: TASK/COMPUTE_TASK_INFO hold non-integer ids or times ({exc})") from exc

    def text(column: int, field_name: str) -> np.ndarray:
        unique, inverse = np.unique(data[:, column], return_inverse=True)
        missing = [int(u) for u in unique if int(u) not in strings]
        if missing:
            raise MsprofFormatError(f"{path}: COMPUTE_TASK_INFO.{field_name} refers to id {missing[0]}, missing from STRING_IDS")
        return np.array([strings[int(u)] for u in unique], dtype=object)[inverse] if len(unique) else np.array([], dtype=object)

    frame = pd.DataFrame(
        {
            "device": data[:, 0],
            "pid": data[:, 1],
            "stream": pd.array(data[:, 2], dtype="Int64"),
            "task_id": pd.array(data[:, 3], dtype="Int64"),
            "name": text(4, "name"),
            "op_type": text(5, "opType"),
            "task_type": text(6, "taskType"),
            "start_ns": data[:, 7],
            "dur_ns": data[:, 8],
            "source": "db",
        }
    )
    return frame[KERNEL_COLUMNS]


def _read_csv(path: Path) -> pd.DataFrame:
    text = read_text_file(path, MsprofFormatError)
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise MsprofFormatError(f"{path}: not a readable CSV ({str(exc).strip()})") from exc


OP_SUMMARY_REQUIRED = ("Device_id", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)")


def op_summary_files(text_dir: Path) -> list[Path]:
    """op_summary_<ts>.csv, or its 1M-row slices op_summary_slice_<i>_<ts>.csv in slice order."""
    found = [(p, OP_SUMMARY_RE.match(p.name)) for p in text_dir.iterdir()]
    return [p for p, m in sorted(((p, m) for p, m in found if m), key=lambda pm: int(pm[1].group(1) or 0))]


def read_op_summary(paths: list[Path], pid: int | None = None) -> pd.DataFrame:
    frames = []
    for path in paths:
        frame = _read_csv(path)
        frame.columns = [c.strip() for c in frame.columns]
        missing = [c for c in OP_SUMMARY_REQUIRED if c not in frame.columns]
        if missing:
            raise MsprofFormatError(f"{path}: line 1: header lacks {', '.join(missing)}")
        if frame.empty:
            continue
        start = us_to_ns(frame["Task Start Time(us)"], path, "Task Start Time(us)")
        dur = us_to_ns(frame["Task Duration(us)"], path, "Task Duration(us)")
        frames.append(
            pd.DataFrame(
                {
                    "device": _int_column(frame["Device_id"], path, "Device_id").astype("int64"),
                    "pid": pid if pid is not None else -1,
                    "stream": _int_column(frame["Stream ID"], path, "Stream ID", allow_na=True),
                    "task_id": _int_column(frame["Task ID"], path, "Task ID", allow_na=True),
                    "name": frame["Op Name"].astype(str),
                    "op_type": frame["OP Type"].astype(str),
                    "task_type": frame["Task Type"].astype(str),
                    "start_ns": start.astype("int64"),
                    "dur_ns": dur.astype("int64"),
                    "source": "op_summary",
                }
            )
        )
    if not frames:
        return pd.DataFrame(
            {
                c: pd.Series(dtype=t)
                for c, t in zip(KERNEL_COLUMNS, ["int64", "int64", "Int64", "Int64", "object", "object", "object", "int64", "int64", "object"])
            }
        )
    return pd.concat(frames, ignore_index=True).sort_values("start_ns", kind="stable", ignore_index=True)


def read_msprof_json(path: Path) -> pd.DataFrame:
    """Complete events of the 'Ascend Hardware' track, found by process_name metadata (sort indices drift)."""
    events = _load_json(path)
    if isinstance(events, dict):
        events = events.get("traceEvents")
    if not isinstance(events, list):
        raise MsprofFormatError(f"{path}: expected a JSON array of trace events")
    hw = {
        e.get("pid")
        for e in events
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name" and (e.get("args") or {}).get("name") == "Ascend Hardware"
    }
    rows = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("pid") not in hw:
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if args.get("Task Type") not in COMPUTE_TASK_TYPES:
            continue
        try:
            ts = str(e["ts"]).strip()
            if not _US.match(ts):
                raise ValueError(ts)
            whole, _, frac = ts.partition(".")
            start = int(whole) * 1000 + int((frac + "000")[:3])
            dur = int(round(float(e["dur"]) * 1000))
            pid = int(e["pid"])
        except (KeyError, ValueError, TypeError, OverflowError) as exc:
            raise MsprofFormatError(f"{path}: event {i} ({e.get('name')!r}): field 'ts'/'dur'/'pid' unusable ({exc!r})") from None
        if dur < 0:
            raise MsprofFormatError(f"{path}: event {i} ({e.get('name')!r}): field 'dur' is negative")
        stream = args.get("Physic Stream Id", e.get("tid"))
        rows.append((pid & 31, pid >> 10, stream, args.get("Task Id"), str(e.get("name")), None, args.get("Task Type"), start, dur))
    frame = pd.DataFrame(rows, columns=KERNEL_COLUMNS[:-1])
    frame["source"] = "json"
    return frame.astype({"device": "int64", "pid": "int64", "stream": "Int64", "task_id": "Int64", "start_ns": "int64", "dur_ns": "int64"}).sort_values(
        "start_ns", kind="stable", ignore_index=True
    )


def read_prof_kernels(info: ProfInfo) -> pd.DataFrame:
    """The preferred source of one PROF_: the db, else op_summary CSVs, else the msprof JSON."""
    if info.db is not None:
        return read_db(info.db)
    if info.text_dir is not None:
        csvs = op_summary_files(info.text_dir)
        if csvs:
            return read_op_summary(csvs, info.pid)
        jsons = sorted(p for p in info.text_dir.iterdir() if JSON_RE.match(p.name))
        if jsons:
            return pd.concat([read_msprof_json(p) for p in jsons], ignore_index=True)
    raise MsprofFormatError(f"{info.path}: no msprof_*.db, op_summary_*.csv or msprof_*.json: no device data to read")
