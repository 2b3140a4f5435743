"""DebugClock analysis on the hand-built fixtures (exact medians), busiest slot, wait/work, overhead, the decision."""

import numpy as np
import pandas as pd
import pytest

from conftest import FIXTURES
from dispatchprof.analysis.debugclock import (
    akl_segments,
    busiest,
    busiest_node,
    clipped_counts,
    legacy_segments,
    overhead,
    per_rank_table,
    phase_chart,
    pooled,
    role_mismatches,
    slowest_core_table,
    summarize,
    wait_work,
)
from dispatchprof.formats.debugclock import find_captures, parse_capture, parse_event_map, parse_legacy_csv
from dispatchprof.tools.debugbuild import decide

ROOT = FIXTURES / "deepep" / "debugclock"
ROLES = ["URMASendToken", "URMASendToken", "CalCumSum"]
PHASES = {
    "URMASendToken": [
        "init",
        "ids_ready",
        "mapping_ready",
        "queues_ready",
        "send_complete",
        "pipe_barrier",
        "local_window_copy",
    ],
    "CalCumSum": [
        "init",
        "counts_sent",
        "dispatch_ready",
        "recv_counts_ready",
        "experts_written",
        "pipe_barrier",
        "local_window_copy",
    ],
}
WAIT = {"CalCumSum": [2, 6], "URMASendToken": [6]}


@pytest.fixture
def legacy():
    frames = [(k, 0, parse_legacy_csv(p)) for k, p in enumerate(sorted((ROOT / "legacy").rglob("*.csv")))]
    return legacy_segments(frames, ROLES, PHASES, 1e9)


@pytest.fixture
def akl():
    events = parse_event_map(ROOT / "akl" / "event_map.json")
    caps = [(int(p.parent.name.removeprefix("node")), parse_capture(p, events)) for p in find_captures(ROOT / "akl")]
    return akl_segments(caps, PHASES, 1e9)


def test_legacy_slot_medians_are_exact(legacy):
    table = per_rank_table(legacy, "legacy_csv")
    row = table[(table["rank"] == 1) & (table.role == "URMASendToken") & (table.slot == 4)].iloc[0]
    assert row.median_us == pytest.approx(6.0) and row.phase == "send_complete" and row.n == 2
    assert table[(table["rank"] == 0) & (table.role == "URMASendToken") & (table.slot == 4)].median_us.iloc[
        0
    ] == pytest.approx(2.0)
    missing = table[(table["rank"] == 1) & (table.role == "URMASendToken") & (table.slot == 6)].iloc[0]
    assert (missing.n, missing.missing, missing.median_us) == (1, 1, pytest.approx(0.6))
    roles = pooled(legacy, "legacy_csv", WAIT)
    assert roles["URMASendToken"]["slots"]["4"]["median_us"] == pytest.approx(4.0)  # 1000, 3000, 5000, 7000 cycles
    assert roles["CalCumSum"]["slots"]["2"]["wait"] and not roles["CalCumSum"]["slots"]["3"]["wait"]


def test_legacy_start_offsets_are_cumulative(legacy):
    core = legacy[(legacy["rank"] == 0) & (legacy.block == 0)].sort_values("slot")
    assert core["start_us"].tolist() == pytest.approx([0.0, 0.1, 0.3, 0.6, 1.0, 2.0, 2.05])


def test_clipped_values_are_counted_not_zeroed(legacy):
    assert clipped_counts(legacy) == {"missing": 1, "above_500000_cycles": 1}
    assert legacy["us"].max() == pytest.approx(600.0)


def test_akl_phase_medians_are_exact_and_the_send_loop_is_one_phase(akl):
    seg, _ = akl
    table = per_rank_table(seg, "akl_trace")
    send = table[(table.role == "URMASendToken") & (table.phase == "send_complete")].set_index("rank")
    assert send.loc[0, "median_us"] == pytest.approx(2.1) and send.loc[1, "median_us"] == pytest.approx(6.1)
    assert send.loc[0, "slot_of_phase"] == 4 and send.loc[0, "start_median_us"] == pytest.approx(1.0)
    roles = pooled(seg, "akl_trace", WAIT)
    assert roles["CalCumSum"]["phases"]["dispatch_ready"]["median_us"] == pytest.approx(2.3)
    assert roles["CalCumSum"]["phases"]["dispatch_ready"]["wait"]


def test_busiest_names_the_slow_sender_not_the_waiters(akl):
    seg, _ = akl
    best = busiest(per_rank_table(seg, "akl_trace"), "akl_trace", 0.1)
    assert (best["rank"], best["role"], best["slot"], best["phase"]) == (1, "URMASendToken", 4, "send_complete")
    assert type(best["slot"]) is int  # rendered as "slot 4", never "slot 4.0"
    assert best["excess_us"] == pytest.approx(4.0)


def test_a_rank_waiting_less_than_its_peers_is_not_busiest():
    rows = [
        {"rank": r, "role": "CalCumSum", "slot": 2, "phase": "dispatch_ready", "slot_of_phase": 2, "median_us": 10.0}
        for r in range(4)
    ]
    rows[2]["median_us"] = 1.0  # rank 2 waits less (it is the slow one the others wait for)
    assert busiest(pd.DataFrame(rows), "legacy_csv", 0.1) is None


def test_role_check_flags_cores_whose_paths_name_another_role(akl):
    _, cores = akl
    assert role_mismatches(cores, ROLES) == []
    wrong = role_mismatches(cores, ["CalCumSum", "URMASendToken", "CalCumSum"])
    assert {(w["rank"], w["block"]) for w in wrong} == {(0, 0), (1, 0)}


def test_wait_and_work_per_rank_and_role(legacy):
    table = per_rank_table(legacy, "legacy_csv")
    ww = {(w["rank"], w["role"]): w for w in wait_work(table, WAIT)}
    assert ww[(0, "CalCumSum")]["wait_slots_us"] == pytest.approx(2.0 + 0.8)
    assert ww[(0, "CalCumSum")]["work_slots_us"] == pytest.approx(0.1 + 0.5 + 0.6 + 0.3 + 0.04)


def test_phase_chart_keeps_start_order(akl):
    seg, _ = akl
    bars = phase_chart(per_rank_table(seg, "akl_trace"), "akl_trace")["URMASendToken"]
    assert [b["phase"] for b in bars][:3] == ["init", "ids_ready", "mapping_ready"]
    assert all(a["start_us"] <= b["start_us"] for a, b in zip(bars, bars[1:]))


def test_overhead_both_scopes():
    on = {"kernel": np.array([11.0, 12.0, 13.0]), "api": np.array([60.0, 61.0, 62.0])}
    off = {"kernel": np.array([10.0, 10.0, 10.0]), "api": np.array([30.0, 30.0, 30.0])}
    out = overhead(on, off)
    assert (out["on_median_us"], out["off_median_us"], out["ratio"]) == (12.0, 10.0, pytest.approx(1.2))
    assert out["scopes"]["api"]["ratio"] == pytest.approx(61.0 / 30.0)
    assert overhead(on, {"kernel": off["kernel"]})["scopes"]["api"] is None


@pytest.mark.parametrize(
    "when, pmu, runs",
    [
        ("fallback", "ok", False),
        ("fallback", "timeout", True),
        ("fallback", "invalid", True),
        ("fallback", None, True),
        ("always", "ok", True),
        ("never", "timeout", False),
    ],
)
def test_decision(when, pmu, runs):
    run, reason = decide(when, pmu, "why")
    assert run is runs and reason


def test_wait_slots_never_make_a_rank_busiest():
    rows = [
        {
            "rank": r,
            "role": "URMASendToken",
            "slot": 6,
            "phase": "local_window_copy",
            "slot_of_phase": 6,
            "median_us": 10.0,
        }
        for r in range(4)
    ]
    rows[1]["median_us"] = 30.0  # rank 1 waits longest for incoming tokens: a waiter, not the slow rank
    frame = pd.DataFrame(rows)
    assert busiest(frame, "legacy_csv", 0.1, {"URMASendToken": [6]}) is None
    assert busiest(frame, "legacy_csv", 0.1, {})["rank"] == 1  # unflagged, the same numbers would name it


def test_akl_captures_of_two_runs_and_two_subblocks_stay_separate_cores(tmp_path):
    """Launch counters restart in every process and subblocks share a blockIdx: neither may add two cores' phases."""
    import shutil

    from dispatchprof.formats.debugclock import load_tree

    for run in ("run0", "run1"):
        shutil.copytree(ROOT / "akl", tmp_path / run)
    shutil.copy(ROOT / "akl" / "event_map.json", tmp_path / "event_map.json")
    loaded = load_tree(tmp_path)
    once, _ = akl_segments([(n, c) for n, c in loaded.captures if c.run == 0], PHASES, 1e9)
    both, _ = akl_segments(loaded.captures, PHASES, 1e9)
    assert len(both) == 2 * len(once) and sorted(both["us"]) == pytest.approx(sorted([*once["us"], *once["us"]]))
    capture = loaded.captures[0][1]
    doubled = capture.events.copy()
    doubled["sub_block"] = 1
    capture.events = pd.concat([capture.events, doubled], ignore_index=True)
    split, _ = akl_segments([(0, capture)], PHASES, 1e9)
    single, _ = akl_segments(
        [(0, loaded.captures[0][1].__class__(**{**capture.__dict__, "events": capture.events.iloc[: len(doubled)]}))],
        PHASES,
        1e9,
    )
    assert len(split) == 2 * len(single) and split["us"].max() == pytest.approx(single["us"].max())


def test_a_missing_legacy_slot_leaves_later_starts_unknown_not_shifted():
    frame = pd.DataFrame(
        {"rank": 0, "aiv_id": 0, "slot": [0, 1, 2, 3], "cycles": pd.array([100, None, 300, 400], dtype="Int64")}
    )
    seg = legacy_segments([(0, 0, frame)], ["URMASendToken"], PHASES, 1e9).sort_values("slot")
    assert seg["start_us"].tolist()[:2] == pytest.approx([0.0, 0.1])
    assert seg["start_us"].iloc[2:].isna().all()


def test_markers_the_recorder_dropped_are_counted_in_the_stats():
    import yaml
    from snakemake.utils import validate

    from conftest import ROOT as REPO
    from dispatchprof.formats.debugclock import load_tree

    defaults = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    validate(defaults, str(REPO / "workflow" / "schemas" / "config.schema.yaml"), set_default=True)
    loaded = load_tree(ROOT / "akl")
    clean = summarize(loaded, defaults)[0]
    loaded.captures[0][1].dropped = 3
    assert (clean["dropped_markers"], summarize(loaded, defaults)[0]["dropped_markers"]) == (0, 3)


def test_the_local_window_copy_slot_per_rank_adds_wait_and_copy_against_the_other_ranks():
    from dispatchprof.analysis.debugclock import local_window_copy, wait_work_grids

    rows = []
    for rank in range(4):
        for block in range(2):
            for launch in range(3):
                wait, copy = 10.0 + launch, 2.0 + [0.0, 0.5, 3.0, 1.0][rank]  # rank 2 copies longest
                rows += [
                    {"rank": rank, "launch": launch, "block": block, "phase": "LW:wait", "us": wait},
                    {"rank": rank, "launch": launch, "block": block, "phase": "LW:copy", "us": copy},
                    {
                        "rank": rank,
                        "launch": launch,
                        "block": block,
                        "phase": "send_complete",
                        "us": 50.0,
                    },  # not the slot
                ]
    lw = local_window_copy(pd.DataFrame(rows))
    two, three = lw["per_rank"]["2"], lw["per_rank"]["3"]
    assert (two["median_us"], two["peers_median_us"], two["excess_us"]) == (
        pytest.approx(16.0),
        pytest.approx(13.5),
        pytest.approx(2.5),
    )
    assert two["peers_spread_us"] == pytest.approx(1.4826 * 0.5) and two["stands_out"]  # 2.5 us > 2.33 x 0.74 us
    assert (
        three["excess_us"] == pytest.approx(0.5) and not three["stands_out"] and lw["phases"] == ["LW:copy", "LW:wait"]
    )
    grids = wait_work_grids(
        [
            {"rank": r, "role": role, "wait_slots_us": 1.0 + r, "work_slots_us": 2.0 * r}
            for r in range(3)
            for role in ("A", "B")
        ]
    )
    assert grids["wait_us"]["rows"] == ["0", "1", "2"] and grids["wait_us"]["columns"] == ["A", "B"]
    assert grids["work_us"]["values"][2] == [4.0, 4.0] and grids["wait_us"]["unit"] == "us"


def _node_table(
    values: dict[int, float],
    ranks_per_node: int,
    role: str = "URMASendToken",
    slot: int = 4,
    phase: str = "send_complete",
) -> pd.DataFrame:
    rows = [
        {
            "rank": r,
            "node": r // ranks_per_node,
            "role": role,
            "slot": slot,
            "phase": phase,
            "slot_of_phase": slot,
            "median_us": us,
        }
        for r, us in values.items()
    ]
    return pd.DataFrame(rows)


def test_busiest_node_names_a_node_whose_every_rank_sends_slower_than_the_other_nodes_ranks():
    rng = np.random.default_rng(3)
    values = {r: 4000.0 + rng.normal(0, 30) for r in range(16)}
    for r in range(8):  # every rank of node 0: its sends out of the node take half as long again
        values[r] += 2000.0
    table = _node_table(values, 8)
    best = busiest_node(table, "legacy_csv", 0.1, 0.01)
    assert (best["node"], best["role"], best["slot"], best["phase"]) == (0, "URMASendToken", 4, "send_complete")
    assert best["ranks"] == list(range(8))
    assert best["excess_us"] == pytest.approx(
        float(np.median([values[r] for r in range(8)]) - np.median([values[r] for r in range(8, 16)]))
    )
    # per rank, seven of its fifteen peers share the slowdown: the rank-level comparison names one rank, as if alone
    assert busiest(table, "legacy_csv", 0.1)["rank"] in range(8)


def test_busiest_node_ignores_one_slow_rank_and_nodes_within_the_spread_of_ranks():
    rng = np.random.default_rng(4)
    values = {r: 4000.0 + rng.normal(0, 100) for r in range(12)}
    assert busiest_node(_node_table(values, 4), "legacy_csv", 0.0, 0.01) is None  # no fault: within the ranks' spread
    values[5] += 3000.0  # one slow rank on node 1: its node's median barely moves, and its other ranks are not slower
    assert busiest_node(_node_table(values, 4), "legacy_csv", 0.0, 0.01) is None
    assert busiest(_node_table(values, 4), "legacy_csv", 0.1)["rank"] == 5  # the rank-level comparison names it


def test_busiest_node_needs_the_floor_and_leaves_wait_slots_out():
    values = {r: 100.0 + 0.01 * r for r in range(12)}
    for r in range(4):
        values[r] += 5.0  # far beyond the ranks' spread, but 5% of the peers' median: below busiest_min_excess 0.1
    assert busiest_node(_node_table(values, 4), "legacy_csv", 0.1, 0.01) is None
    assert busiest_node(_node_table(values, 4), "legacy_csv", 0.0, 0.01)["node"] == 0
    waits = _node_table(
        values, 4, slot=6, phase="local_window_copy"
    )  # the receivers wait longer: waiters, not the cause
    assert busiest_node(waits, "legacy_csv", 0.0, 0.01, {"URMASendToken": [6]}) is None


def test_busiest_node_is_none_on_one_node_or_too_few_other_ranks():
    assert busiest_node(_node_table({r: 10.0 + 5 * (r < 2) for r in range(8)}, 8), "legacy_csv", 0.0, 0.01) is None
    assert busiest_node(_node_table({0: 20.0, 1: 20.0, 2: 10.0, 3: 10.0}, 2), "legacy_csv", 0.0, 0.01) is None
    assert busiest_node(pd.DataFrame(), "legacy_csv", 0.0, 0.01) is None


def test_the_slowest_core_table_takes_each_launchs_slowest_core_then_the_median_over_launches(legacy, akl):
    rows = []
    for launch, (fast, slow) in enumerate([(10.0, 30.0), (11.0, 50.0), (12.0, 40.0)]):
        for block, us in ((0, fast), (1, slow), (2, fast)):  # one slow sender core among same-node ones
            rows.append(
                {
                    "rank": 0,
                    "node": 0,
                    "launch": launch,
                    "block": block,
                    "role": "URMASendToken",
                    "slot": 4,
                    "phase": "send_complete",
                    "us": us,
                }
            )
    table = slowest_core_table(pd.DataFrame(rows), "akl_trace")
    assert table[["rank", "role", "phase", "median_us"]].values.tolist() == [
        [0, "URMASendToken", "send_complete", 40.0]
    ]
    assert per_rank_table(pd.DataFrame(rows).assign(start_us=0.0, cycles=0), "akl_trace")["median_us"].tolist() == [
        12.0
    ]  # the median core: a fast one
    for seg, source in ((legacy, "legacy_csv"), (akl[0], "akl_trace")):  # both formats' segment tables
        table = slowest_core_table(seg, source)
        assert len(table) == len(per_rank_table(seg, source)) and (table["median_us"] >= 0).all()
