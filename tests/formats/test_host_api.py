"""The host API call that launched each target launch (formats.msprof.read_host_calls): the CANN_API row whose
connectionId is the task's, read on a real torch_npu db and on malformed tables (a result or a refusal naming the
field, never a crash)."""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from dispatchprof.formats.msprof import MsprofFormatError, read_db_target

REAL = (
    ROOT
    / "tests/fixtures/torch_npu-real/two_ranks_db/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
)
KERNEL = "aclnnMuls_MulAiCore_Mul"


def is_kernel(name: str) -> bool:
    return name == KERNEL


def expected_host_calls(db: Path) -> list[tuple[int | None, int | None, str | None]]:
    """Per launch of KERNEL in start order, (API start, duration, API name) by the text of the names: a query of its
    own, not the reader's (which selects by STRING_IDS ids)."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT a.startNs, a.endNs - a.startNs, s.value FROM TASK t "
            "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId JOIN STRING_IDS n ON n.id = c.name "
            "LEFT JOIN CANN_API a ON a.connectionId = t.connectionId LEFT JOIN STRING_IDS s ON s.id = a.name "
            "WHERE n.value = ? ORDER BY t.startNs, t.globalTaskId",
            (KERNEL,),
        ).fetchall()


def test_every_launch_of_the_real_db_has_its_launch_call_from_cann_api():
    kernels = read_db_target(REAL, is_kernel, 0)
    expected = expected_host_calls(REAL)
    assert kernels.host is not None and kernels.host.table == "CANN_API"
    assert len(expected) == len(kernels.start_ns) == 18 and all(row[0] is not None for row in expected)
    got = list(zip(kernels.host.start_ns.tolist(), kernels.host.dur_ns.tolist(), kernels.host.name.tolist()))
    assert got == expected and {name for *_, name in got} == {"launch"}
    # In this real db, 16 of the 18 calls start before their task; two start ~15 µs after it (the device counter is
    # anchored to the host clock once: the two clocks agree only that far)
    lead = kernels.start_ns - kernels.host.start_ns
    assert (lead > 0).sum() == 16 and lead.min() > -20_000


def test_a_db_without_cann_api_has_no_host_calls_and_the_same_launches(tmp_path):
    db = tmp_path / "old.db"
    shutil.copyfile(REAL, db)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE CANN_API")
    kernels, before = read_db_target(db, is_kernel, 0), read_db_target(REAL, is_kernel, 0)
    assert kernels.host is None
    assert np.array_equal(kernels.start_ns, before.start_ns) and np.array_equal(kernels.dur_ns, before.dur_ns)


def test_a_cann_api_time_that_is_text_is_refused_naming_the_file_and_field(tmp_path):
    db = tmp_path / "bad.db"
    shutil.copyfile(REAL, db)
    with sqlite3.connect(db) as conn:
        link = conn.execute(
            "SELECT t.connectionId FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
            "JOIN STRING_IDS n ON n.id = c.name WHERE n.value = ? ORDER BY t.startNs LIMIT 1",
            (KERNEL,),
        ).fetchone()[0]
        conn.execute("UPDATE CANN_API SET endNs = 'soon' WHERE connectionId = ?", (link,))
    kernels, intact = read_db_target(db, is_kernel, 0), read_db_target(REAL, is_kernel, 0)
    # the device's launches stand; the host calls are refused, the file, the field and the row named
    assert np.array_equal(kernels.start_ns, intact.start_ns) and np.array_equal(kernels.dur_ns, intact.dur_ns)
    assert kernels.host.found == 0
    assert re.search(rf"bad\.db: CANN_API\.endNs of connectionId {link} is a str 'soon'", kernels.host.refused)


def test_host_calls_are_read_for_the_first_launches_asked_only(tmp_path):
    every, first = read_db_target(REAL, is_kernel, 0), read_db_target(REAL, is_kernel, 0, host_launches=5)
    assert every.host.found == len(every.start_ns) > 5 and first.host.found == 5
    assert np.array_equal(first.host.start_ns[:5], every.host.start_ns[:5]) and (first.host.start_ns[5:] == -1).all()


def test_a_task_connection_id_that_is_text_is_refused_where_cann_api_is_read(tmp_path):
    db = tmp_path / "bad.db"
    shutil.copyfile(REAL, db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE TASK SET connectionId = 'x' WHERE globalTaskId IN (SELECT c.globalTaskId FROM "
            "COMPUTE_TASK_INFO c JOIN STRING_IDS n ON n.id = c.name WHERE n.value = ?)",
            (KERNEL,),
        )
    with pytest.raises(MsprofFormatError, match=r"bad\.db: .*t\.connectionId.* holds a TEXT"):
        read_db_target(db, is_kernel, 0)


# -- malformed CANN_API tables --------------------------------------------------------------------------------------
ODD = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=0, max_value=10_000),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.binary(max_size=3),
)
LINKS = st.one_of(st.none(), st.integers(min_value=1, max_value=6))
FIELDS = ("startNs", "endNs", "type", "globalTid", "connectionId", "name")
ODD_ROW = st.fixed_dictionaries(
    {
        "startNs": ODD,
        "endNs": ODD,
        "type": ODD,
        "globalTid": ODD,
        "connectionId": LINKS,
        "name": st.one_of(st.sampled_from([1, 2, 3, 99]), ODD),
    }
)
GOOD_ROW = st.builds(  # a well-formed row, so that matched calls are read as well as refused
    lambda start, dur, link, name: {
        "startNs": start,
        "endNs": start + dur,
        "type": 10000,
        "globalTid": 7 << 32 | 7,
        "connectionId": link,
        "name": name,
    },
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=10**4),
    LINKS,
    st.sampled_from([1, 2, 3]),
)


@st.composite
def cann_api(draw: st.DrawFn) -> dict:
    """A CANN_API table (or none) beside six launches of the kernel whose TASK.connectionId may be NULL: fields
    typed INTEGER or untyped, one maybe missing, each cell anything SQLite holds."""
    return {
        "table": draw(st.sampled_from([True, True, True, False])),
        "typed": draw(st.booleans()),
        "drop": draw(st.sampled_from([None, None, None, *FIELDS])),
        "task_links": draw(st.lists(LINKS, min_size=6, max_size=6)),
        "rows": draw(st.lists(st.one_of(GOOD_ROW, ODD_ROW), max_size=8)),
    }


def write_db(path: Path, spec: dict) -> None:
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);"
            "INSERT INTO STRING_IDS VALUES (1, 'k'), (2, 'launch'), (3, 'aclnnK');"
            "CREATE TABLE TASK(startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,"
            " globalTaskId INTEGER PRIMARY KEY, globalPid INTEGER, taskType INTEGER, streamId INTEGER, taskId INTEGER);"
            "CREATE TABLE COMPUTE_TASK_INFO(name INTEGER, globalTaskId INTEGER, opType INTEGER, taskType INTEGER);"
        )
        for i, link in enumerate(spec["task_links"], 1):
            conn.execute("INSERT INTO TASK VALUES (?, ?, 0, ?, ?, 7, 1, 1, ?)", (i * 1000, i * 1000 + 50, link, i, i))
            conn.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (1, ?, 1, 1)", (i,))
        if not spec["table"]:
            return
        fields = [f for f in FIELDS if f != spec["drop"]]
        kind = " INTEGER" if spec["typed"] else ""
        conn.execute(f"CREATE TABLE CANN_API({', '.join(f + kind for f in fields)})")
        for row in spec["rows"]:
            conn.execute(f"INSERT INTO CANN_API VALUES ({', '.join('?' * len(fields))})", [row[f] for f in fields])


def stored(path: Path) -> tuple[list[tuple], dict]:
    """TASK's connectionIds in start order and CANN_API's rows as SQLite keeps them (after any type affinity)."""
    with sqlite3.connect(path) as conn:
        links = [link for (link,) in conn.execute("SELECT connectionId FROM TASK ORDER BY startNs")]
        rows = conn.execute("SELECT connectionId, startNs, endNs, name FROM CANN_API").fetchall()
    return links, rows


def sqlite_order(row: tuple) -> list[tuple]:
    """A CANN_API row's (startNs, endNs, name) as SQLite orders values: NULL, numbers, text, blobs."""
    rank = {type(None): 0, int: 1, float: 1, str: 2, bytes: 3}
    return [(rank[type(v)], 0 if v is None else v) for v in row[1:]]


@settings(max_examples=100, deadline=None)
@given(cann_api())
def test_a_malformed_cann_api_gives_host_calls_or_a_refusal_naming_the_field(spec):
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "msprof_20260101000000.db"
        write_db(db, spec)
        try:
            kernels = read_db_target(db, lambda name: name == "k", 0)
        except MsprofFormatError as exc:  # only a TASK.connectionId that is no integer refuses the launches
            assert str(db) in str(exc) and "connectionId" in str(exc), exc
            assert spec["table"], "no CANN_API table must never be refused"
            event("launches refused")
            return
        assert len(kernels.start_ns) == 6
        if not spec["table"]:
            assert kernels.host is None
            event("no table")
            return
        if kernels.host.refused:  # the host calls alone refused, naming the file and the table
            assert str(db) in kernels.host.refused and "CANN_API" in kernels.host.refused
            assert kernels.host.found == 0
            event("host calls refused")
            return
        event(f"read, {'some' if kernels.host.found else 'no'} launch with a host call")
        assert spec["drop"] not in ("startNs", "endNs", "connectionId", "name")
        links, rows = stored(db)
        names = {1: "k", 2: "launch", 3: "aclnnK"}
        for i, link in enumerate(links):
            matches = sorted((r for r in rows if link is not None and r[0] == link), key=sqlite_order)
            got = (int(kernels.host.start_ns[i]), int(kernels.host.dur_ns[i]), kernels.host.name[i])
            if not matches:
                assert got == (-1, -1, "")
            else:  # read, so the earliest row is well formed: integers, in order, a known name
                _, start, end, name = matches[0]
                assert got == (start, end - start, names[name])
