"""Per-core pipe busy time (union), MTE overlap, per-role medians with coverage, InstrTimeline top instructions."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.pipe_timeline import (
    assign_roles,
    core_table,
    intersection_us,
    pcs_per_pipe,
    role_table,
    top_instructions,
    union_us,
)
from dispatchprof.formats.trace_json import read_trace_json

FIX = Path(__file__).parents[1] / "fixtures/msopprof/pipe_timeline"
ROLES = [{"name": "A", "count": 4}, {"name": "B", "count": 4}, {"name": "C", "count": 2}]


def events(name, rank=0, launch=0):
    return read_trace_json(FIX / name).events.assign(rank=rank, launch=launch)


def test_busy_time_is_the_union_and_overlap_the_intersection():
    cores = core_table(events("trace_pipe.json"))
    core0 = cores[(cores["core"] == 0) & (cores["core_kind"] == "veccore0")].iloc[0]
    assert core0["busy_us.MTE2"] == 6.0  # 0-4 and 3-6 overlap: 6, not 7
    assert core0["busy_us.VECTOR"] == 3.0
    assert core0["overlap_us.MTE2&VECTOR"] == 3.0  # VECTOR 2-5 inside MTE2 0-6
    assert core0["overlap_us.MTE2&SCALAR"] == 1.0
    assert core0["overlap_us.MTE3&VECTOR"] == 0.0  # MTE3 6-8 after VECTOR ended
    assert core0["span_us"] == 8.0


def test_roles_by_block_id_with_coverage_and_a_role_without_cores():
    ev = events("trace_pipe.json")
    cores = assign_roles(core_table(ev), ROLES, "block_id")
    roles = role_table(cores, ROLES)
    assert roles["A"]["cores_seen"] == 1 and roles["A"]["coverage"] == "1/4 cores"
    assert roles["A"]["pipes"]["MTE2"]["busy_us_median"] == 6.0
    assert roles["A"]["overlap"]["MTE2&VECTOR"]["fraction_of_mte_median"] == 0.5
    assert roles["B"]["cores_seen"] == 1  # core7.veccore0 is AIV index 7: role B (4..7)
    assert roles["C"]["cores_seen"] == 0 and roles["C"]["pipes"] is None and "no sampled core" in roles["C"]["note"]
    kinds = dict(zip(cores["core_kind"], cores["role"]))
    assert kinds["cubecore"] == "unassigned" and kinds["veccore1"] == "unassigned"


def test_unknown_mapping_places_no_core():
    cores = assign_roles(core_table(events("trace_pipe.json")), ROLES, "unknown")
    assert set(cores["role"]) == {"unassigned"}
    assert all(v["cores_seen"] == 0 for v in role_table(cores, ROLES).values())


def test_medians_pool_ranks():
    ev = events("trace_pipe.json", rank=0)
    other = ev.assign(rank=1, dur_us=ev["dur_us"] * 3)
    import pandas as pd

    roles = role_table(assign_roles(core_table(pd.concat([ev, other, other.assign(rank=2)])), ROLES, "block_id"), ROLES)
    assert roles["A"]["ranks_seen"] == 3 and roles["A"]["samples"] == 3
    assert roles["A"]["pipes"]["VECTOR"]["busy_us_median"] == 9.0  # 3, 9, 9


def test_top_instructions_by_total_time_per_pipe():
    ev = events("trace_instr.json")
    top = top_instructions(ev, 1)
    assert top["MTE2"] == [
        {
            "name": "MOV_OUT_TO_UB",
            "pc_addr": "0x10f86a80",
            "code": "elastic_dispatch.cpp:120",
            "total_us": 3.5,
            "count": 2,
        }
    ]
    assert [t["name"] for t in top["VECTOR"]] == ["VMUL"]
    assert pcs_per_pipe(ev) == {"MTE2": 1, "MTE3": 1, "VECTOR": 2}
    assert top_instructions(events("trace_pipe.json"), 5) == {}


INTERVALS = st.lists(
    st.tuples(st.floats(0, 100, allow_nan=False), st.floats(0, 20, allow_nan=False)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=12,
)


@settings(max_examples=200)
@given(a=INTERVALS, b=INTERVALS)
def test_union_and_intersection_bounds(a, b):
    ua, ub = union_us(a), union_us(b)
    assert ua <= sum(e - s for s, e in a) + 1e-9
    assert max((e - s for s, e in a), default=0) <= ua + 1e-9
    inter = intersection_us(a, b)
    assert 0 <= inter <= min(ua, ub) + 1e-9
    assert abs(union_us(a + b) - (ua + ub - inter)) < 1e-6  # inclusion-exclusion
