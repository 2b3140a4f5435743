"""Write msprof PROF_ directories as CANN does (docs/formats.md §1-3): db, text export, info files.

One PROF_ per profiled process. The text export is always derived from the db, so the three formats agree
row for row (times are integer nanoseconds; the text forms print microseconds with 3 decimals).
"""

from __future__ import annotations

import csv
import io
import json
import random
import sqlite3
import string
import time
from pathlib import Path
from typing import Any, Iterable

SCHEMA_VERSION = "1.2.0"
HW_SORT_INDEX = 13  # "Ascend Hardware" process sort index in current data
OP_SUMMARY_HEADER = (
    "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),Task "
    "Duration(us),Task Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input "
    "Formats,Output Shapes,Output Data Types,Output Formats,Context "
    "ID,aiv_time(us),aiv_total_cycles,aiv_icache_miss_rate"
).split(",")
TASK_TIME_HEADER = [
    "Device_id",
    "kernel_name",
    "kernel_type",
    "stream_id",
    "task_id",
    "task_time(us)",
    "task_start(us)",
    "task_stop(us)",
]
NON_COMPUTE = {"MEMCPY_ASYNC", "PROFILING_ENABLE", "PROFILING_DISABLE"}
# ENUM_API_TYPE as msprof writes it (the real torch_npu db in tests/fixtures/torch_npu-real holds these rows)
API_TYPES = ((5000, "runtime"), (5500, "hccl"), (10000, "node"), (15000, "model"), (20000, "acl"), (50001, "op"))
API_TYPES += ((50002, "queue"), (50003, "trace"), (50004, "mstx"))
# The host call that launches a kernel task: CANN_API's node-level "launch" (the real db's rows linked to its
# kernel tasks by connectionId are all this one)
LAUNCH_API, LAUNCH_API_TYPE = "launch", 10000


def us_text(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def prof_name(pid: int, stamp_ns: int, index: int = 1) -> str:
    rng = random.Random(pid * 7919 + stamp_ns)
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(stamp_ns / 1e9)) + f"{(stamp_ns // 1_000_000) % 1000:03d}"
    return f"PROF_{index:06d}_{stamp}_{''.join(rng.choice(string.ascii_uppercase) for _ in range(16))}"


def _ids(conn: sqlite3.Connection, value: str, cache: dict[str, int]) -> int:
    if value not in cache:
        cache[value] = len(cache) + 1
        conn.execute("INSERT INTO STRING_IDS(id, value) VALUES (?, ?)", (cache[value], value))
    return cache[value]


def write_db(path: Path, proc: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """msprof_<ts>.db with the tables a kernel query needs (TASK, COMPUTE_TASK_INFO, STRING_IDS, ...)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE META_DATA(name TEXT, value TEXT);
        CREATE TABLE TASK(startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER PRIMARY KEY,
                          globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER);
        CREATE TABLE COMPUTE_TASK_INFO(name INTEGER, globalTaskId INTEGER, blockNum INTEGER, mixBlockNum INTEGER, taskType INTEGER,
                          opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER,
                          outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, hf32Eligible INTEGER,
                          gridDim INTEGER, blockDim INTEGER);
        CREATE TABLE SESSION_TIME_INFO(startTimeNs INTEGER, endTimeNs INTEGER);
        CREATE TABLE NPU_INFO(id INTEGER, name TEXT);
        CREATE TABLE HOST_INFO(hostUid TEXT, hostName TEXT);
        CREATE TABLE RANK_DEVICE_MAP(rankId INTEGER, deviceId INTEGER);
        CREATE TABLE CANN_API(startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER,
                              connectionId INTEGER PRIMARY KEY, name INTEGER);
        CREATE TABLE ENUM_API_TYPE(id INTEGER PRIMARY KEY, name TEXT);
        """
    )
    conn.executemany("INSERT INTO ENUM_API_TYPE VALUES (?, ?)", API_TYPES)
    cache: dict[str, int] = {}
    conn.execute("INSERT INTO META_DATA VALUES ('SCHEMA_VERSION', ?)", (SCHEMA_VERSION,))
    device = int(proc["device_id"])
    for gid, ev in enumerate(events, 1):
        task_type = _ids(conn, ev["task_type"], cache)
        conn.execute(
            "INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                ev["start_ns"],
                ev["start_ns"] + ev["dur_ns"],
                device,
                gid,
                gid,
                int(proc["pid"]),
                task_type,
                0,
                ev["stream"],
                ev["task_id"],
                4294967295,
            ),
        )
        if "api_start_ns" in ev:
            write_api_call(conn, gid, int(proc["pid"]), ev, cache)
        if ev["task_type"] in NON_COMPUTE:
            continue
        name, na = _ids(conn, ev["name"], cache), _ids(conn, "N/A", cache)
        conn.execute(
            "INSERT INTO COMPUTE_TASK_INFO VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                name,
                gid,
                ev.get("block_dim", 48),
                0,
                task_type,
                _ids(conn, ev.get("op_type", ev["name"]), cache),
                na,
                na,
                _ids(conn, ev.get("input_shapes", "N/A"), cache),
                na,
                na,
                na,
                na,
                _ids(conn, "static", cache),
                _ids(conn, "NO", cache),
                0,
                ev.get("block_dim", 48),
            ),
        )
    start = min((e["start_ns"] for e in events), default=0)
    end = max((e["start_ns"] + e["dur_ns"] for e in events), default=0)
    conn.execute("INSERT INTO SESSION_TIME_INFO VALUES (?, ?)", (start, end))
    conn.execute("INSERT INTO NPU_INFO VALUES (?, 'Ascend950PR')", (device,))
    conn.execute("INSERT INTO HOST_INFO VALUES (?, ?)", (proc.get("host_uid", "0"), proc["hostname"]))
    conn.execute("INSERT INTO RANK_DEVICE_MAP VALUES (-1, ?)", (device,))  # msprof always writes -1 here
    conn.commit()
    conn.close()


def write_api_call(
    conn: sqlite3.Connection, connection: int, pid: int, ev: dict[str, Any], cache: dict[str, int]
) -> None:
    """The CANN_API row of the host call that launched task ``ev``, linked to it by ``connection`` (its TASK's
    connectionId), on the process's main thread (globalTid = pid << 32 | tid, tid = pid)."""
    conn.execute(
        "INSERT INTO CANN_API VALUES (?,?,?,?,?,?)",
        (
            ev["api_start_ns"],
            ev["api_end_ns"],
            LAUNCH_API_TYPE,
            pid << 32 | pid,
            connection,
            _ids(conn, LAUNCH_API, cache),
        ),
    )


def _db_rows(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    rows = conn.execute(
        """SELECT t.startNs, t.endNs, t.deviceId, t.streamId, t.taskId, tt.value, n.value, o.value, c.blockNum, s.value, t.globalPid
           FROM TASK t JOIN STRING_IDS tt ON tt.id = t.taskType
           LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
           LEFT JOIN STRING_IDS n ON n.id = c.name LEFT JOIN STRING_IDS o ON o.id = c.opType LEFT JOIN STRING_IDS s ON s.id = c.inputShapes
           ORDER BY t.startNs"""
    ).fetchall()
    conn.close()
    keys = [
        "start_ns",
        "end_ns",
        "device",
        "stream",
        "task_id",
        "task_type",
        "name",
        "op_type",
        "block_dim",
        "input_shapes",
        "pid",
    ]
    return [dict(zip(keys, r)) for r in rows]


def write_text_export(prof: Path, stamp: str) -> None:
    """mindstudio_profiler_output/ from the db: op_summary, task_time, msprof json (what `msprof --export=on` does)."""
    db = next(prof.glob("msprof_*.db"))
    rows = _db_rows(db)
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True, exist_ok=True)
    summary = io.StringIO()
    writer = csv.writer(summary, lineterminator="\n")
    writer.writerow(OP_SUMMARY_HEADER)
    task_time = io.StringIO()
    tt_writer = csv.writer(task_time, lineterminator="\n")
    tt_writer.writerow(TASK_TIME_HEADER)
    prev_end = None
    for r in rows:
        dur = r["end_ns"] - r["start_ns"]
        tt_writer.writerow(
            [
                r["device"],
                r["name"] or "N/A",
                r["task_type"],
                r["stream"],
                r["task_id"],
                us_text(dur),
                us_text(r["start_ns"]) + "\t",
                us_text(r["end_ns"]) + "\t",
            ]
        )
        if r["task_type"] in NON_COMPUTE:
            continue
        wait = 0 if prev_end is None else max(0, r["start_ns"] - prev_end)
        prev_end = r["end_ns"]
        shapes = f'"{r["input_shapes"]}"' if r["input_shapes"] not in (None, "N/A") else "N/A"
        writer.writerow(
            [
                r["device"],
                4294967295,
                r["task_id"],
                r["stream"],
                r["name"],
                r["op_type"],
                "static",
                r["task_type"],
                us_text(r["start_ns"]) + "\t",
                us_text(dur),
                us_text(wait),
                r["block_dim"],
                0,
                "NO",
                shapes,
                "BF16",
                "ND",
                "N/A",
                "N/A",
                "N/A",
                "N/A",
                "N/A",
                "N/A",
                "N/A",
            ]
        )
    (out / f"op_summary_{stamp}.csv").write_text(summary.getvalue())
    (out / f"task_time_{stamp}.csv").write_text(task_time.getvalue())
    (out / f"msprof_{stamp}.json").write_text(json.dumps(trace_events(rows)))
    (out / "README.txt").write_text("Simulated msprof export (dispatchprof stand-in).\n")


def trace_events(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = list(rows)
    if not rows:
        return []
    os_pid, device = int(rows[0]["pid"]), int(rows[0]["device"])
    hw_pid = (os_pid << 10) | (HW_SORT_INDEX << 5) | device
    events: list[dict[str, Any]] = [
        {"name": "process_name", "pid": hw_pid, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
        {"name": "process_labels", "pid": hw_pid, "tid": 0, "ph": "M", "args": {"labels": f"NPU {device}"}},
        {"name": "process_sort_index", "pid": hw_pid, "tid": 0, "ph": "M", "args": {"sort_index": HW_SORT_INDEX}},
    ]
    cann_pid = (os_pid << 10) | (1 << 5) | 31
    events.append({"name": "process_name", "pid": cann_pid, "tid": 0, "ph": "M", "args": {"name": "CANN"}})
    for r in rows:
        dur = r["end_ns"] - r["start_ns"]
        name = r["name"] or r["task_type"]
        events.append(
            {
                "name": name,
                "pid": hw_pid,
                "tid": r["stream"],
                "ts": us_text(r["start_ns"]),
                "dur": dur / 1000,
                "ph": "X",
                "args": {
                    "Model Id": 4294967295,
                    "Task Type": r["task_type"],
                    "Physic Stream Id": r["stream"],
                    "Task Id": r["task_id"],
                    "Batch Id": 0,
                    "Subtask Id": 4294967295,
                },
            }
        )
        events.append(
            {
                "name": f"AscendCL@{name}",
                "pid": cann_pid,
                "tid": os_pid,
                "ts": us_text(r["start_ns"] - 20_000),
                "dur": 5.0,
                "ph": "X",
                "args": {"level": "acl"},
            }
        )
    return events


def write_prof(
    root: Path,
    proc: dict[str, Any],
    events: list[dict[str, Any]],
    export: bool = True,
    error_log: bool = False,
    device_data: bool = True,
) -> Path:
    """One PROF_ directory for one profiled process. ``proc``: pid, hostname, device_id, rank_id, start_ns."""
    stamp_ns = int(proc["start_ns"])
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(stamp_ns / 1e9))
    prof = root / prof_name(int(proc["pid"]), stamp_ns)
    host = prof / "host"
    (host / "data").mkdir(parents=True, exist_ok=True)
    info = {
        "pid": str(proc["pid"]),
        "pid_name": "python3",
        "hostname": proc["hostname"],
        "hostUid": proc.get("host_uid", "0"),
        "cannVersion": "9.0.0-sim",
        "drvVersion": "25.3.0-sim",
    }
    (host / "info.json").write_text(json.dumps(info))
    start_info = {
        "collectionTimeBegin": str(stamp_ns // 1000),
        "clockMonotonicRaw": str(stamp_ns % 10**12),
        "collectionDateBegin": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp_ns / 1e9)),
    }
    (host / "start_info").write_text(json.dumps(start_info))
    (host / "end_info").write_text(json.dumps({"collectionTimeEnd": str((stamp_ns + 10**9) // 1000)}))
    if device_data:
        dev = int(proc["device_id"])
        ddir = prof / f"device_{dev}"
        (ddir / "data").mkdir(parents=True, exist_ok=True)
        rank_id = proc.get("rank_id")
        dev_info = {
            **info,
            "rank_id": int(rank_id) if rank_id not in (None, "") else -1,
            "platform_version": "Ascend950PR",
            "DeviceInfo": [{"id": dev, "hwts_frequency": "1000", "aic_frequency": "1650", "ai_core_num": 32}],
        }
        (ddir / f"info.json.{dev}").write_text(json.dumps(dev_info))
        (ddir / f"start_info.{dev}").write_text(json.dumps(start_info))
        (ddir / f"end_info.{dev}").write_text(json.dumps({"collectionTimeEnd": str((stamp_ns + 10**9) // 1000)}))
        write_db(prof / f"msprof_{stamp}.db", proc, events)
        if export:
            write_text_export(prof, stamp)
    logs = prof / "mindstudio_profiler_log"
    logs.mkdir(parents=True, exist_ok=True)
    line = (
        "[ERROR] [PROFILING] parse device data failed: simulated profiler error\n"
        if error_log
        else "[INFO] analysis finished\n"
    )
    (logs / f"msprof_analysis_{proc['pid']}.log").write_text(line)
    return prof
