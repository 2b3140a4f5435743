"""Whole kernel tables of a PROF_ as pandas DataFrames: the db, op_summary CSVs, the msprof JSON.

Every reader returns the same tidy kernel table, so the three sources can be checked against each other:
device, pid, stream, task_id, name, op_type, task_type, start_ns, dur_ns, source. Times are integer
nanoseconds (the text forms carry epoch microseconds with 3 decimals, which is exact at 1 ns).
Columns are found by header name; a file that cannot be read raises MsprofFormatError naming the file,
the line (where there is one) and the field. (The timeline's hot path, one target kernel of hundreds of
ranks, is msprof.read_target_kernels: it needs neither pandas nor every row.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from dispatchprof.formats.msprof import (
    JSON_RE,
    KERNEL_JOIN,
    MsprofFormatError,
    ProfInfo,
    TargetKernels,
    context_intervals,
    end_to_duration,
    int_rows,
    load_trace_events,
    op_summary_files,
    query_db,
    resolve_ids,
    strict_int,
)
from dispatchprof.formats.text import check_text_file

KERNEL_COLUMNS = ["device", "pid", "stream", "task_id", "name", "op_type", "task_type", "start_ns", "dur_ns", "source"]
# Task types of compute tasks: what op_summary and COMPUTE_TASK_INFO hold (the JSON also has MEMCPY_ASYNC etc.).
COMPUTE_TASK_TYPES = {"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "DSA_SQE", "COMMUNICATION"}
_US = re.compile(r"^\d+(\.\d+)?$")
INT64_MAX_US = (2**63 - 1 - 999) // 1000  # the most microseconds that still fit in int64 nanoseconds with any fraction


def us_to_ns(values: pd.Series, path: Path, field_name: str, first_line: int = 2) -> pd.Series:
    """Epoch-microsecond strings ("1778463028745189.370" + optional TAB) to int64 nanoseconds, exactly."""
    text = values.astype("string").str.strip()
    ok = text.str.fullmatch(_US.pattern).fillna(False)
    if not ok.all():
        bad = int(np.flatnonzero(~ok.to_numpy())[0])
        raise MsprofFormatError(
            f"{path}: line {bad + first_line}: field '{field_name}' is "
            f"{values.iloc[bad]!r}, expected microseconds like 1778463028745189.370"
        )
    parts = text.str.split(".", n=1, expand=True)
    # Beyond int64 nanoseconds (292 years; a 301-digit duration) is refused by its line, never wrapped or a traceback.
    digits, most = parts[0].str.lstrip("0"), str(INT64_MAX_US)
    too_long = (digits.str.len() > len(most)) | ((digits.str.len() == len(most)) & (digits > most))
    if too_long.any():
        bad = int(np.flatnonzero(too_long.to_numpy())[0])
        raise MsprofFormatError(
            f"{path}: line {bad + first_line}: field '{field_name}' is "
            f"{values.iloc[bad]!r}, beyond 64-bit nanoseconds ({INT64_MAX_US} us at most)"
        )
    whole = parts[0].astype("int64")
    frac = parts[1].fillna("").str.ljust(3, "0").str[:3].astype("int64") if parts.shape[1] > 1 else 0
    return whole * 1000 + frac


def _int_column(values: pd.Series, path: Path, field_name: str, allow_na: bool = False) -> pd.Series:
    text = values.astype("string").str.strip()
    na = text.isin(["N/A", "NA", ""])
    ok = text.str.fullmatch(r"-?\d+").fillna(False) | (na if allow_na else False)
    if not ok.all():
        bad = int(np.flatnonzero(~ok.to_numpy())[0])
        raise MsprofFormatError(
            f"{path}: line {bad + 2}: field '{field_name}' is {values.iloc[bad]!r}, expected an integer"
        )
    return pd.to_numeric(text.mask(na), errors="coerce").astype("Int64")


def read_db(path: Path) -> pd.DataFrame:
    """Every compute task: TASK joined with COMPUTE_TASK_INFO inside SQLite (integer ns); text ids resolved once
    per distinct id. The hot path of many ranks is read_target_kernels, which reads far fewer rows."""
    rows, strings = query_db(
        path,
        lambda conn, _: conn.execute(
            "SELECT "
            + ", ".join(
                strict_int(c)
                for c in (
                    "t.deviceId",
                    "t.globalPid",
                    "t.streamId",
                    "t.taskId",
                    "c.name",
                    "c.opType",
                    "t.taskType",
                    "t.startNs",
                    "t.endNs",
                )
            )
            + f" {KERNEL_JOIN} ORDER BY t.startNs"
        ).fetchall(),
    )
    data = int_rows(rows, 9, path)
    end_to_duration(data, 7, 8, path)
    frame = pd.DataFrame(
        {
            "device": data[:, 0],
            "pid": data[:, 1],
            "stream": pd.array(data[:, 2], dtype="Int64"),
            "task_id": pd.array(data[:, 3], dtype="Int64"),
            "name": resolve_ids(data[:, 4], strings, path, "name"),
            "op_type": resolve_ids(data[:, 5], strings, path, "opType"),
            "task_type": resolve_ids(data[:, 6], strings, path, "taskType"),
            "start_ns": data[:, 7],
            "dur_ns": data[:, 8],
            "source": "db",
        }
    )
    return frame[KERNEL_COLUMNS]


def _names(values: pd.Series) -> pd.Series:
    """A name column as plain strings, a missing cell as "" (under pandas 2 and 3 alike)."""
    if values.hasnans:  # only the JSON's op type: the common case (every name present) costs a scan, not a copy
        values = values.astype(object).where(values.notna(), "")
    return values.astype(str)


def target_kernels_of(
    frame: pd.DataFrame,
    is_target: Callable[[str], bool],
    context_launches: int,
    is_barrier: Callable[[str], bool] | None = None,
) -> TargetKernels:
    """The same split for a kernel table read from the text export (op_summary or msprof JSON)."""

    def hits(column: str) -> np.ndarray:
        # A missing cell (the JSON has no op type: None, which pandas 3 keeps as NaN through astype(str)) is no name.
        values = _names(frame[column])
        return values.isin({v for v in values.unique() if is_target(v)}).to_numpy()

    chosen = hits("name") | (hits("op_type") if "op_type" in frame else False)
    ordered = frame.assign(_target=chosen).sort_values("start_ns", kind="stable")
    target, others = ordered[ordered["_target"]], ordered[~ordered["_target"]]
    names = _names(others["name"])
    barrier = (
        others[names.isin({v for v in names.unique() if is_barrier(v)}).to_numpy()]
        if is_barrier is not None
        else others.iloc[:0]
    )
    starts = target["start_ns"].to_numpy(np.int64)
    intervals = context_intervals(len(target), context_launches)
    if intervals:
        window = (others["start_ns"] >= starts[0]) & (others["start_ns"] < starts[intervals])
        others = others[window.to_numpy()]
    else:
        others = others.iloc[:0]
    return TargetKernels(
        source=str(frame["source"].iloc[0]) if len(frame) else "none",
        name=_names(target["name"]).to_numpy(object),
        start_ns=starts,
        dur_ns=target["dur_ns"].to_numpy(np.int64),
        stream=target["stream"].astype("Int64").fillna(-1).to_numpy(np.int64),
        task_id=target["task_id"].astype("Int64").fillna(-1).to_numpy(np.int64),
        other_name=_names(others["name"]).to_numpy(object),
        other_start_ns=others["start_ns"].to_numpy(np.int64),
        other_dur_ns=others["dur_ns"].to_numpy(np.int64),
        context_intervals=intervals,
        barrier_start_ns=barrier["start_ns"].to_numpy(np.int64),
        barrier_dur_ns=barrier["dur_ns"].to_numpy(np.int64),
    )


CSV_CHUNK_ROWS = 20_000  # rows pandas reads at a time: an op_summary row is ~50 cells, each a Python string


def _read_csv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """A CSV's ``columns`` (found by their stripped names) as text, every column of the header named. The encoding is
    checked piece by piece and pandas reads the file itself in runs of rows, of which only ``columns`` are kept: no
    copy of the file's text, and no column the reader does not use (an op_summary has ~50). Every row is still
    tokenized whole, so a row of the wrong length is refused as before."""
    check_text_file(path, MsprofFormatError)
    options = {"encoding": "utf-8-sig", "dtype": str, "keep_default_na": False, "skipinitialspace": False}
    try:
        with pd.read_csv(path, chunksize=CSV_CHUNK_ROWS, **options) as reader:
            parts = [chunk[[c for c in chunk.columns if c.strip() in columns]] for chunk in reader]
        if not parts:  # a header alone
            return pd.read_csv(path, nrows=0, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise MsprofFormatError(f"{path}: not a readable CSV ({str(exc).strip()})") from exc
    return pd.concat(parts, ignore_index=True)


OP_SUMMARY_REQUIRED = (
    "Device_id",
    "Task ID",
    "Stream ID",
    "Op Name",
    "OP Type",
    "Task Type",
    "Task Start Time(us)",
    "Task Duration(us)",
)


def read_op_summary(paths: list[Path], pid: int | None = None) -> pd.DataFrame:
    frames = []
    for path in paths:
        frame = _read_csv(path, OP_SUMMARY_REQUIRED)
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
                for c, t in zip(
                    KERNEL_COLUMNS,
                    ["int64", "int64", "Int64", "Int64", "object", "object", "object", "int64", "int64", "object"],
                )
            }
        )
    return pd.concat(frames, ignore_index=True).sort_values("start_ns", kind="stable", ignore_index=True)


KERNEL_DETAILS_REQUIRED = ("Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)")


def read_kernel_details(path: Path, device: int | None, pid: int | None = None) -> pd.DataFrame:
    """torch_npu's text export of a rank's kernels, ASCEND_PROFILER_OUTPUT/kernel_details.csv (docs/formats.md §1.7):
    Name, Type, Accelerator Core, Start Time(us) (a TAB after it, as in op_summary), Duration(us). It names no device,
    stream or task: ``device`` is the rank's (-1 when not known). Its HCCL rows (Accelerator Core ``HCCL``) are
    communication ops, left out as op_summary's COMMUNICATION rows are."""
    frame = _read_csv(path, KERNEL_DETAILS_REQUIRED)
    frame.columns = [c.strip() for c in frame.columns]
    missing = [c for c in KERNEL_DETAILS_REQUIRED if c not in frame.columns]
    if missing:
        raise MsprofFormatError(f"{path}: line 1: header lacks {', '.join(missing)}")
    frame = frame[frame["Accelerator Core"].str.strip() != "HCCL"]
    start = us_to_ns(frame["Start Time(us)"], path, "Start Time(us)")
    dur = us_to_ns(frame["Duration(us)"], path, "Duration(us)")
    table = pd.DataFrame(
        {
            "device": pd.Series(device if device is not None else -1, index=frame.index, dtype="int64"),
            "pid": pid if pid is not None else -1,
            "stream": pd.Series(pd.NA, index=frame.index, dtype="Int64"),
            "task_id": pd.Series(pd.NA, index=frame.index, dtype="Int64"),
            "name": frame["Name"].astype(str),
            "op_type": frame["Type"].astype(str),
            "task_type": frame["Accelerator Core"].astype(str),
            "start_ns": start.astype("int64"),
            "dur_ns": dur.astype("int64"),
            "source": "kernel_details",
        }
    )
    return table.sort_values("start_ns", kind="stable", ignore_index=True)


def read_msprof_json(path: Path) -> pd.DataFrame:
    """Complete events of the 'Ascend Hardware' track, found by process_name metadata (sort indices drift)."""
    events = load_trace_events(path)
    hw = {
        e.get("pid")
        for e in events
        if isinstance(e, dict)
        and e.get("ph") == "M"
        and e.get("name") == "process_name"
        and (e.get("args") or {}).get("name") == "Ascend Hardware"
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
            raise MsprofFormatError(
                f"{path}: event {i} ({e.get('name')!r}): field 'ts'/'dur'/'pid' unusable ({exc!r})"
            ) from None
        if dur < 0:
            raise MsprofFormatError(f"{path}: event {i} ({e.get('name')!r}): field 'dur' is negative")
        stream = args.get("Physic Stream Id", e.get("tid"))
        rows.append(
            (
                pid & 31,
                pid >> 10,
                stream,
                args.get("Task Id"),
                str(e.get("name")),
                None,
                args.get("Task Type"),
                start,
                dur,
            )
        )
    frame = pd.DataFrame(rows, columns=KERNEL_COLUMNS[:-1])
    frame["source"] = "json"
    try:
        frame = frame.astype(
            {
                "device": "int64",
                "pid": "int64",
                "stream": "Int64",
                "task_id": "Int64",
                "start_ns": "int64",
                "dur_ns": "int64",
            }
        )
    except (ValueError, TypeError, OverflowError) as exc:
        raise MsprofFormatError(
            f"{path}: fields 'ts', 'dur', 'pid', 'Physic Stream Id' or 'Task "
            f"Id' are not 64-bit integers (microseconds for ts/dur) ({exc})"
        ) from None
    return frame.sort_values("start_ns", kind="stable", ignore_index=True)


def read_prof_kernels(info: ProfInfo) -> pd.DataFrame:
    """The preferred source of one PROF_: the db, else op_summary CSVs, else the msprof JSON."""
    if info.db is not None:
        return read_db(info.db)
    if info.kernel_details is not None:
        return read_kernel_details(info.kernel_details, info.devices[0] if len(info.devices) == 1 else None, info.pid)
    if info.text_dir is not None:
        csvs = op_summary_files(info.text_dir)
        if csvs:
            return read_op_summary(csvs, info.pid)
        jsons = sorted(p for p in info.text_dir.iterdir() if JSON_RE.match(p.name))
        if jsons:
            return pd.concat([read_msprof_json(p) for p in jsons], ignore_index=True)
    raise MsprofFormatError(f"{info.path}: no msprof_*.db, op_summary_*.csv or msprof_*.json: no device data to read")
