import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dispatchprof.analysis.rank_identity import assign_ranks
from dispatchprof.analysis.timeline import (
    calls_between,
    coverage_rows,
    kernel_regex,
    launch_columns,
    launch_summary,
    longest_duration,
    merged_trace,
    prof_sources,
    read_state,
)
from dispatchprof.formats.msprof import ProfInfo, TargetKernels
from dispatchprof.formats.msprof_tables import target_kernels_of
from dispatchprof.report.rank_svg import launch_svg


def test_kernel_names_match_like_msopprof_kernel_name():
    regex = kernel_regex("elastic_dispatch*")
    assert regex.match("elastic_dispatch_kernel_mix_aiv") and regex.match("elastic_dispatch")
    assert not regex.match("aclnn_elastic_dispatch_kernel")
    assert kernel_regex("*dispatch_kernel").match("aclnnElastic_dispatch_kernel_AivKernel")
    assert not kernel_regex("a.b").match("axb")  # only * is special


def info(pid, device, rank_id=None, path="P", devices=None):
    devs = devices if devices is not None else ([device] if device is not None else [])
    return ProfInfo(
        Path(f"{path}{pid}"),
        pid,
        "h",
        "0",
        devs,
        rank_id,
        Path("db") if devs else None,
        None,
        device_rank_ids={d: rank_id for d in devs},
    )


def test_a_prof_with_several_devices_is_one_source_per_device():
    both = info(100, None, devices=[0, 1])
    sources = prof_sources(2, {both.path: both})
    assert [(s.node, s.device, s.pid) for s in sources] == [(2, 0, 100), (2, 1, 100)]
    assert [a.rank for a in assign_ranks(sources, 8, {})] == [16, 17]


def test_coverage_names_missing_device_data_and_absent_ranks():
    infos = [info(100, 0), info(101, None), info(102, 2)]
    sources = [s for i in infos for s in prof_sources(1, {i.path: i})]
    assigned = assign_ranks(sources, 4, {(1, 100): {"global_rank": 4}, (1, 101): {"global_rank": 5}})
    table = coverage_rows(range(1, 2), 4, assigned, {i.path: i for i in infos})
    assert [r["state"] for r in table] == ["found", "missing", "found", "missing"] and [
        r["global_rank"] for r in table
    ] == [4, 5, 6, 7]
    assert "no device data" in table[1]["detail"] and "no PROF_" in table[3]["detail"]
    assert (
        table[0]["mapping"] == "sidecar"
        and table[2]["mapping"] == "inferred (device_id)"
        and table[3]["device"] is None
    )


def test_a_read_tells_an_unended_session_before_a_missing_kernel():
    def kernels(launches, ended):
        return TargetKernels(
            "db",
            np.array(["k"] * launches, dtype=object),
            *[np.zeros(launches, np.int64)] * 4,
            *[np.zeros(0)] * 3,
            0,
            session_ended=ended,
        )

    assert (
        read_state(kernels(0, False), "k")[0] == "incomplete"
        and "SESSION_TIME_INFO" in read_state(kernels(0, False), "k")[1]
    )
    assert read_state(kernels(0, True), "elastic*") == (
        "no_kernel",
        "no launch of a kernel matching kernel.name 'elastic*'",
    )
    assert read_state(kernels(0, None), "k")[0] == "no_kernel"  # a text export tells no session
    assert read_state(kernels(3, True), "k") is None and read_state(kernels(3, None), "k") is None


def test_longest_duration_is_aligned_by_launch_index_and_classified():
    # rows: launch index, columns: ranks 0, 1, 2
    durations = np.array([[10, 12, 11], [10, 12, 9], [10, 9, 9.5]])
    s = longest_duration([0, 1, 2], durations)
    assert s["rank"] == 1 and abs(s["fraction"] - 2 / 3) < 1e-9 and s["kind"] == "consistently longest"
    assert s["per_launch_max_us"] == [12, 12, 10] and s["per_rank_fraction"] == {"1": 2 / 3, "0": 1 / 3}


def test_longest_duration_leaves_out_launches_a_rank_lacks_and_says_occasionally():
    durations = np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0], [2.0, 3.0, 1.0], [9.0, np.nan, 1.0]])
    s = longest_duration([4, 5, 6], durations)
    # each rank is longest once: a three-way tie at the top, named in full, not given to the lowest rank
    assert s["launches_compared"] == 3 and s["rank"] is None and s["ranks"] == [4, 5, 6] and "occasionally" in s["kind"]
    assert longest_duration([0], np.array([[np.nan]]))["rank"] is None


def test_a_launch_where_ranks_tie_is_shared_among_them():
    # launch 0: ranks 1 and 2 tie for longest (1/2 each); launch
    # 1: rank 2 alone. argmax would credit rank 1 with launch 0.
    s = longest_duration([0, 1, 2], np.array([[5.0, 9.0, 9.0], [5.0, 6.0, 7.0]]))
    assert s["per_rank_fraction"] == {"2": 0.75, "1": 0.25}
    assert s["rank"] == 2 and s["ranks"] == [2] and s["fraction"] == 0.75


def test_a_tie_at_the_top_fraction_names_every_tied_rank():
    # each launch a two-way tie between ranks 3 and 7: both are longest in half the launches, neither alone
    s = longest_duration([3, 5, 7], np.array([[9.0, 1.0, 9.0], [8.0, 2.0, 8.0]]))
    assert s["rank"] is None and s["ranks"] == [3, 7] and s["fraction"] == 0.5
    assert "ranks 3, 7" in s["kind"]


def test_calls_between_target_launches_are_counted_per_iteration():
    kernels = pd.DataFrame(
        [
            ("barrier", "x", 0, 5),
            ("elastic_dispatch_kernel", "x", 10, 100),
            ("barrier", "x", 200, 6),
            ("layout", "x", 210, 4),
            ("elastic_dispatch_kernel", "x", 220, 100),
            ("barrier", "x", 400, 7),
            ("elastic_dispatch_kernel", "x", 420, 100),
            ("barrier", "x", 600, 9),
        ],
        columns=["name", "op_type", "start_ns", "dur_ns"],
    ).assign(stream=1, task_id=range(8), source="op_summary")
    target = target_kernels_of(kernels, kernel_regex("elastic_dispatch_kernel").match, 0)
    chain = {c["name"]: c for c in calls_between(target)}
    assert chain["barrier"]["per_iteration"] == 1.0 and chain["layout"]["per_iteration"] == 0.5
    assert (
        chain["barrier"]["median_us"] == 0.0065
    )  # 6 and 7 ns: the one before launch 0 and the one after the last do not count
    first_interval = target_kernels_of(kernels, kernel_regex("elastic_dispatch_kernel").match, 1)
    assert {c["name"]: c["per_iteration"] for c in calls_between(first_interval)} == {"barrier": 1.0, "layout": 1.0}


def test_the_call_chain_lists_the_longest_median_first_and_equal_medians_by_name():
    def chain_of(between):
        rows = [("elastic_dispatch_kernel", 0, 10)]
        for i, (name, dur) in enumerate(between):
            rows += [(name, 20 + 100 * i, dur), ("elastic_dispatch_kernel", 60 + 100 * i, 10)]
        kernels = pd.DataFrame(rows, columns=["name", "start_ns", "dur_ns"]).assign(
            op_type="x", stream=1, task_id=range(len(rows)), source="op_summary"
        )
        return [
            (c["name"], c["median_us"], c["per_iteration"])
            for c in calls_between(target_kernels_of(kernels, kernel_regex("elastic_dispatch_kernel").match, 0))
        ]

    # zeta first seen, alpha's median equal to it: alpha before zeta all the same
    assert chain_of([("zeta", 4), ("alpha", 5), ("mid", 9), ("zeta", 6), ("alpha", 5)]) == [
        ("mid", 0.009, 0.2),
        ("alpha", 0.005, 0.4),
        ("zeta", 0.005, 0.4),
    ]
    assert chain_of([("zeta", 4), ("alpha", 2), ("alpha", 3), ("alpha", 9)]) == [
        ("zeta", 0.004, 0.25),
        ("alpha", 0.003, 0.75),
    ]


def test_a_kernel_overlapping_the_previous_launch_is_not_between_launches():
    target = TargetKernels(
        source="db",
        name=np.array(["k", "k"], dtype=object),
        start_ns=np.array([0, 1000]),
        dur_ns=np.array([500, 500]),
        stream=np.array([-1, -1]),
        task_id=np.array([-1, -1]),
        other_name=np.array(["inside", "after"], dtype=object),
        other_start_ns=np.array([100, 600]),
        other_dur_ns=np.array([10, 20]),
        context_intervals=1,
    )
    assert [c["name"] for c in calls_between(target)] == ["after"]


def launch_table(starts, durs, skip):
    n = len(starts)
    kernels = TargetKernels("db", np.array(["k"] * n, dtype=object), np.array(starts), np.array(durs), np.full(n, -1), np.full(n, -1),
                            np.array([], dtype=object), np.array([], dtype=np.int64), np.array([], dtype=np.int64), 0)  # fmt: skip
    return launch_columns(kernels, skip)


def test_gaps_and_statistics_use_only_the_launches_after_the_skipped_ones():
    columns = launch_table([i * 1_000_000 for i in range(6)], [100_000 + i * 1000 for i in range(6)], skip=2)
    assert columns["used"].tolist() == [False, False, True, True, True, True]
    assert np.isnan(columns["gap_ns"][:3]).all() and columns["gap_ns"][3] == 3_000_000 - 2_000_000 - 102_000
    assert columns["interval_ns"][3] == 1_000_000
    summary = launch_summary(columns)
    assert summary == {
        "launches_total": 6,
        "skipped": 2,
        "launches": 4,
        "median_us": 103.5,
        "p95_us": 104.85,
        "gap_median_us": 897.0,  # gaps 898, 897, 896 us
    }
    empty = launch_summary(launch_table([], [], skip=0))
    assert empty["launches"] == 0 and empty["median_us"] is None and empty["gap_median_us"] is None


def test_merged_trace_puts_the_chosen_launch_end_of_every_rank_at_zero_and_draws_only_the_first_launches():
    used = {
        "rank": np.array([0, 0, 0, 9]),
        "launch": np.array([5, 6, 7, 5]),
        "start_ns": np.array([1_000_000, 2_000_000, 3_000_000, 9_000_000_000]),
        "dur_ns": np.array([2000, 3000, 1000, 4000]),
        "gap_ns": np.array([np.nan, 998_000, 997_000, np.nan]),
    }
    details = {0: {"node": 0, "device": 0, "symbol": "k"}, 9: {"node": 1, "device": 1, "symbol": "k"}}
    trace = merged_trace(used, details, align_launch=0, max_launches=2, toolchain="none")
    assert json.loads(trace.json_text()) == trace.as_dict()
    xs = {(e["pid"], e["args"]["launch"]): e for e in trace.as_dict()["traceEvents"] if e["ph"] == "X"}
    assert set(xs) == {(0, 5), (0, 6), (9, 5)} and "first 2" in trace.metadata["launches_drawn"]
    assert xs[(0, 5)]["ts"] + xs[(0, 5)]["dur"] == 0 and xs[(9, 5)]["ts"] + xs[(9, 5)]["dur"] == 0
    assert xs[(0, 6)]["ts"] == 998.0 and xs[(0, 6)]["args"]["gap_us"] == 998.0 and xs[(0, 5)]["args"]["gap_us"] is None
    assert (
        len([e for e in merged_trace(used, details, 0, 0, toolchain="none").as_dict()["traceEvents"] if e["ph"] == "X"])
        == 4
    )
    assert (
        trace.metadata["toolchain"] == "none"
        and merged_trace(used, details, 0, 0, toolchain="sim").metadata["toolchain"] == "sim"
    )


def test_merged_trace_draws_each_rank_in_launch_order_whatever_order_the_rows_come_in():
    used = {
        "rank": np.array([3, 1, 3, 1]),
        "launch": np.array([1, 1, 0, 0]),
        "start_ns": np.array([20_000, 21_000, 10_000, 11_000]),
        "dur_ns": np.array([500, 600, 700, 800]),
        "gap_ns": np.full(4, np.nan),
    }
    events = [e for e in merged_trace(used, {}, 0, 0, toolchain="none").as_dict()["traceEvents"] if e["pid"] < 999_998]
    assert [(e["pid"], e["ph"], e.get("args", {}).get("launch")) for e in events] == [
        (1, "M", None),
        (1, "M", None),
        (1, "M", None),
        (1, "X", 0),
        (1, "X", 1),
        (3, "M", None),
        (3, "M", None),
        (3, "M", None),
        (3, "X", 0),
        (3, "X", 1),
    ]
    assert (
        events[0]["args"]["name"] == "node None / rank 1 (host, device None)" and events[3]["name"] == "target kernel"
    )
    assert merged_trace({c: v[:0] for c, v in used.items()}, {}, 0, 0, toolchain="none").as_dict()["traceEvents"] == []


def test_the_trace_text_is_what_json_dumps_writes_for_any_numbers():
    """json_text writes the events from a template; it must be json.dumps' text exactly (repr of floats, null for
    no gap, NaN and Infinity as json writes them, names escaped)."""
    rng = np.random.default_rng(7)
    n = 300
    used = {
        "rank": rng.integers(0, 5, n),
        "launch": np.arange(n),
        "start_ns": rng.integers(-(2**40), 2**40, n),
        "dur_ns": rng.integers(0, 2**33, n),
        "gap_ns": np.where(rng.random(n) < 0.2, np.nan, rng.normal(0, 1e9, n)),
    }
    used["gap_ns"][:3] = [np.inf, -np.inf, -0.0]
    details = {r: {"node": r // 2, "device": r, "symbol": 'k"\\é\u2028'} for r in range(5)}
    for offsets in (None, {0: 0.0, 1: -12.5, 2: 3.25}):
        trace = merged_trace(used, details, 1, 0, node_offset_us=offsets, toolchain="sim")
        assert trace.json_text() == json.dumps(trace.as_dict())


def test_the_rank_plot_is_bounded_and_says_when_there_is_nothing():
    svg = launch_svg(3, [100.0 + (i % 7) for i in range(5000)], 103.0)
    assert svg.startswith("<svg") and svg.count(",") < 2 * 400 and "rank 3" in svg
    assert "no launches (no PROF_ directory" in launch_svg(4, [], None, "no PROF_ directory for this rank")


def test_the_call_chain_merges_ranks_by_median_and_names_unknown_kernels_unidentified():
    from dispatchprof.analysis.timeline import merged_call_chain, timeline_minus_kernel

    ranks = [
        {
            "calls_between": [
                {"name": "cached_notify_combine", "per_iteration": 1.0, "median_us": 20.0},
                {"name": "mystery", "per_iteration": 2.0, "median_us": 3.0},
            ]
        },
        {"calls_between": [{"name": "cached_notify_combine", "per_iteration": 1.0, "median_us": 40.0}]},
        {"calls_between": None},
    ]
    chain = {c["name"]: c for c in merged_call_chain(ranks, {"cached_notify_combine": "barrier"})}
    assert chain["cached_notify_combine"] == {
        "name": "cached_notify_combine",
        "per_iteration": 1.0,
        "median_us": 30.0,
        "role": "barrier",
    }
    assert chain["mystery"]["role"].startswith("unidentified")
    assert timeline_minus_kernel(
        {0: {"median_us": 105.0}, 1: {"median_us": None}, 2: {"median_us": 50.0}},
        {"0": {"median_us": 100.0}, "1": {"median_us": 9.0}},
    ) == {"0": 5.0}


def test_a_clock_corrected_trace_shares_one_zero_so_a_waiting_rank_shows_its_wait():
    # node 1's clock reads 5 ms ahead; rank 9 really started its launch 40 us before rank 0 and waited for it
    used = {
        "rank": np.array([0, 9]),
        "launch": np.array([0, 0]),
        "start_ns": np.array([1_000_000, 1_000_000 - 40_000 + 5_000_000]),
        "dur_ns": np.array([100_000, 140_000]),
        "gap_ns": np.array([np.nan, np.nan]),
    }
    details = {0: {"node": 0, "device": 0, "symbol": "k"}, 9: {"node": 1, "device": 1, "symbol": "k"}}
    trace = merged_trace(used, details, 0, 0, node_offset_us={0: 0.0, 1: 5000.0}, toolchain="none")
    xs = {e["pid"]: e for e in trace.as_dict()["traceEvents"] if e["ph"] == "X"}
    assert xs[9]["ts"] == xs[0]["ts"] - 40.0 and xs[0]["ts"] + xs[0]["dur"] == 0 == xs[9]["ts"] + xs[9]["dur"]
    assert "corrected" in trace.metadata["aligned_on"]


def test_a_clock_corrected_trace_takes_out_the_drift_as_well_as_the_offset():
    # node 1's clock reads 5 ms ahead and runs 100 ppm fast; both ranks end every launch together (a barrier)
    true_starts = np.array([0, 1_000_000, 10_000_000, 100_000_000])  # ns after the first start, node 0 = true time
    node1 = true_starts + 5_000_000 + np.round(100e-6 * true_starts).astype(np.int64)
    used = {
        "rank": np.array([0] * 4 + [9] * 4),
        "launch": np.array([0, 1, 2, 3] * 2),
        "start_ns": np.concatenate([true_starts, node1]),
        "dur_ns": np.array([100_000] * 8),
        "gap_ns": np.full(8, np.nan),
    }
    details = {0: {"node": 0, "device": 0, "symbol": "k"}, 9: {"node": 1, "device": 1, "symbol": "k"}}
    drifted = merged_trace(
        used,
        details,
        0,
        0,
        node_offset_us={0: 0.0, 1: 5000.0},
        toolchain="none",
        node_drift_ppm={1: 100.0},
        drift_reference_us=0.0,
    )
    xs = [e for e in drifted.as_dict()["traceEvents"] if e["ph"] == "X"]
    ts = {(e["pid"], e["args"]["launch"]): e["ts"] for e in xs}
    assert all(ts[(9, k)] == pytest.approx(ts[(0, k)], abs=0.002) for k in range(4))
    assert "drifts" in drifted.metadata["aligned_on"]
    offset_only = merged_trace(used, details, 0, 0, node_offset_us={0: 0.0, 1: 5000.0}, toolchain="none")
    late = {(e["pid"], e["args"]["launch"]): e["ts"] for e in offset_only.as_dict()["traceEvents"] if e["ph"] == "X"}
    assert late[(9, 3)] - late[(0, 3)] == pytest.approx(10.0, abs=0.01)  # 100 ppm of 100 ms, left in without the drift


def host_used(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Launch columns of 4 ranks with host calls a few µs before each launch, some launches without one (NaN)."""
    start = np.sort(rng.integers(0, 2**34, n))
    api_start = (start - rng.integers(1_000, 30_000, n)).astype(float)
    api_start[rng.random(n) < 0.2] = np.nan
    return {
        "rank": rng.integers(0, 4, n),
        "launch": np.arange(n),
        "start_ns": start,
        "dur_ns": rng.integers(0, 2**20, n),
        "gap_ns": np.full(n, np.nan),
        "api_start_ns": api_start,
        "api_dur_ns": np.where(np.isnan(api_start), np.nan, rng.integers(0, 10_000, n).astype(float)),
    }


def test_the_trace_text_with_host_calls_is_what_json_dumps_writes():
    used = host_used(np.random.default_rng(3), 200)
    details = {
        r: {"node": r // 2, "device": r, "symbol": "k", "host_api": 'launch"\u2028', "host_api_table": "CANN_API"}
        for r in range(3)
    }  # rank 3 records no host API: no host thread
    for offsets in (None, {0: 0.0, 1: -12.5}):
        trace = merged_trace(used, details, 1, 0, node_offset_us=offsets, toolchain="sim")
        assert trace.json_text() == json.dumps(trace.as_dict())
    events = trace.as_dict()["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "thread_name" and e["tid"] == 2}
    assert names == {r: 'host: launch"\u2028 (launch call)' for r in range(3)}
    host = [e for e in events if e["ph"] == "X" and e["tid"] == 2]
    expected = [(r, k) for r, k, s in zip(used["rank"], used["launch"], used["api_start_ns"]) if r < 3 and s == s]
    assert sorted((e["pid"], e["args"]["launch"]) for e in host) == sorted(expected)
    assert trace.metadata["host_spans"]["drawn"] and trace.metadata["host_spans"]["table"] == "CANN_API"


def test_a_host_call_takes_its_ranks_clock_correction_and_keeps_its_lead_on_the_launch():
    used = host_used(np.random.default_rng(5), 60)
    details = {r: {"node": r // 2, "symbol": "k", "host_api": "launch"} for r in range(4)}
    for offsets in (None, {0: 0.0, 1: 250.0}):
        events = merged_trace(used, details, 0, 0, node_offset_us=offsets, toolchain="none").as_dict()["traceEvents"]
        device = {(e["pid"], e["args"]["launch"]): e["ts"] for e in events if e["ph"] == "X" and e["tid"] == 0}
        for e in (e for e in events if e["ph"] == "X" and e["tid"] == 2):
            k = e["args"]["launch"]
            lead_us = (used["start_ns"][k] - used["api_start_ns"][k]) / 1000
            assert device[(e["pid"], k)] - e["ts"] == pytest.approx(lead_us, abs=1e-6)
            assert e["dur"] == used["api_dur_ns"][k] / 1000


def test_without_host_columns_or_names_no_host_thread_is_drawn_and_the_metadata_says_so():
    used = host_used(np.random.default_rng(1), 20)
    plain = {c: v for c, v in used.items() if not c.startswith("api_")}
    for columns, details in ((plain, {0: {"host_api": "launch"}}), (used, {})):
        trace = merged_trace(columns, details, 0, 0, toolchain="none")
        assert not [e for e in trace.as_dict()["traceEvents"] if e.get("tid") == 2]
        assert trace.metadata["host_spans"]["drawn"] is False and trace.metadata["host_spans"]["table"] is None
        assert trace.json_text() == json.dumps(trace.as_dict())
