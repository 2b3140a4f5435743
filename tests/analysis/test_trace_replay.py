"""The run without its top cause as a trace (issue 63, analysis/trace_replay): hand-built launches where what the
replay must draw follows from what happened, and any tables (hypothesis)."""

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_trace_causes import B_DURS, B_STARTS, DURS, STARTS, details, finite, span, table

from dispatchprof.analysis.timeline import ChromeTrace, merged_trace
from dispatchprof.analysis.trace_replay import LaunchReplay, ReplayedCause, replayed_tracks


def tracks_of(used, n_rank, barrier="cached_notify_combine"):
    trace = merged_trace(used, details(n_rank), 0, 0, {0: 0.0, 1: 0.0}, toolchain="sim", barrier_kernel=barrier)
    return trace.tracks


def cause(launches, saved_through, rows=None):
    rows = sorted(launches) if rows is None else rows
    return ReplayedCause("late arrival, rank 3", 10.0, [8.0, 12.0], launches, rows, saved_through)


def by_rank(tracks):
    return {t.rank: t for t in tracks}


def test_a_late_arrival_removed_moves_its_arrival_the_release_and_every_slice_after_it():
    # rank 3 arrives 60 us after the next-last arrival (rank 2, at 30 us) in both launches; everyone waits for it
    tracks = tracks_of(table(STARTS, DURS, B_STARTS, B_DURS), 4)
    late = {k: LaunchReplay(60.0, 0.0, 0.0, {3: 60.0}, {3: 0.0}) for k in (0, 1)}
    replayed, meta = replayed_tracks(tracks, cause(late, [60.0, 120.0]))
    before, after = by_rank(tracks), by_rank(replayed)
    # launch 0: rank 3 arrives with rank 2 (90 - 60 = 30 us); the barrier releases 60 us earlier for everyone
    assert after[3].barrier_ts_us[0] == before[2].barrier_ts_us[0]
    release = {r: before[r].barrier_ts_us[0] + before[r].barrier_dur_us[0] for r in range(4)}
    for r in range(4):
        assert after[r].barrier_ts_us[0] + after[r].barrier_dur_us[0] == release[r] - 60.0
        assert after[r].ts_us[0] == before[r].ts_us[0] - 60.0 and after[r].dur_us[0] == before[r].dur_us[0]
    # launch 1 starts earlier by launch 0's saving too: 60 + 60 us
    assert [a.ts_us[1] for a in replayed] == [b.ts_us[1] - 120.0 for b in tracks]
    assert after[3].barrier_ts_us[1] == before[3].barrier_ts_us[1] - 120.0
    assert meta["replay"]["saved_by_the_last_drawn_launch_us"] == 120.0
    assert meta["replay"]["launches_struck_drawn"] == 2


def test_an_own_delay_removed_ends_the_slow_rank_with_the_next_last_and_the_others_keep_their_ends():
    # one launch: rank 1 ends 30 us after the next-last end (rank 3, 70 us); the cost account's end shift is that lead
    tracks = tracks_of(table([[0.0] * 4], [[55.0, 100.0, 55.0, 70.0]]), 4, barrier=None)
    slow = {0: LaunchReplay(0.0, 30.0, 0.0, {1: 0.0}, {1: 30.0})}
    replayed, _ = replayed_tracks(tracks, cause(slow, [0.0]))
    zero = tracks[0].ts_us[0]  # the trace's clock: the earliest end of launch 0 is 0
    assert [t.ts_us[0] + t.dur_us[0] - zero for t in replayed] == [55.0, 70.0, 55.0, 70.0]
    assert [a.ts_us for a in replayed] == [b.ts_us for b in tracks]  # nobody was late: every start as it was


def test_a_rank_that_waited_for_the_cause_s_data_ends_with_the_replay_s_last_end():
    # rank 0 ended with rank 1 (it waited for rank 1's tokens); the replay's last end is 30 us earlier: so is rank 0's
    tracks = tracks_of(table([[0.0] * 3], [[100.0, 100.0, 70.0]]), 3, barrier=None)
    slow = {0: LaunchReplay(0.0, 30.0, 0.0, {1: 0.0}, {1: 30.0})}
    replayed, _ = replayed_tracks(tracks, cause(slow, [0.0]))
    zero = tracks[0].ts_us[0]
    assert [t.ts_us[0] + t.dur_us[0] - zero for t in replayed] == [70.0, 70.0, 70.0]


def test_a_delay_of_the_whole_group_removed_moves_every_end_and_no_start():
    tracks = tracks_of(table([[0.0] * 3], [[100.0, 100.0, 90.0]]), 3, barrier=None)
    group = {0: LaunchReplay(0.0, 0.0, 40.0, {}, {})}
    replayed, _ = replayed_tracks(tracks, cause(group, [40.0]))
    zero = tracks[0].ts_us[0]
    assert [t.ts_us[0] + t.dur_us[0] - zero for t in replayed] == [60.0, 60.0, 50.0]
    assert [a.ts_us for a in replayed] == [b.ts_us for b in tracks]


def test_launches_the_cause_did_not_strike_only_move_by_the_savings_before_them():
    tracks = tracks_of(table(STARTS, DURS, B_STARTS, B_DURS), 4)
    only_first = {0: LaunchReplay(60.0, 0.0, 0.0, {3: 60.0}, {3: 0.0})}
    replayed, _ = replayed_tracks(tracks, cause(only_first, [60.0, 60.0], rows=[0, 1]))
    before, after = by_rank(tracks), by_rank(replayed)
    for r in range(4):
        assert after[r].ts_us[1] == before[r].ts_us[1] - 60.0
        assert after[r].dur_us[1] == before[r].dur_us[1] and after[r].barrier_dur_us[1] == before[r].barrier_dur_us[1]


def test_a_launch_without_its_barrier_slice_keeps_none_and_the_trace_stays_json():
    b_starts = [row[:] for row in B_STARTS]
    b_starts[0][1] = math.nan
    tracks = tracks_of(table(STARTS, DURS, b_starts, B_DURS), 4)
    late = {0: LaunchReplay(60.0, 0.0, 0.0, {3: 60.0}, {3: 0.0})}
    replayed, meta = replayed_tracks(tracks, cause(late, [60.0, 60.0], rows=[0, 1]))
    assert by_rank(replayed)[1].barrier_ts_us[0] is None
    trace = ChromeTrace(replayed, {"toolchain": "sim", **meta})
    assert json.loads(trace.json_text()) == json.loads(json.dumps(trace.as_dict()))


@st.composite
def tables_and_replays(draw):
    n_rank, n_launch = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    grid = st.lists(st.lists(finite, min_size=n_rank, max_size=n_rank), min_size=n_launch, max_size=n_launch)
    grid_span = st.lists(st.lists(span, min_size=n_rank, max_size=n_rank), min_size=n_launch, max_size=n_launch)
    barrier = draw(st.booleans())
    used = table(draw(grid), draw(grid_span), draw(grid) if barrier else None, draw(grid_span) if barrier else None)
    ranks = draw(st.lists(st.integers(0, n_rank - 1), max_size=n_rank, unique=True))
    struck = draw(st.lists(st.integers(0, n_launch + 1), max_size=n_launch + 2, unique=True))
    saving = st.floats(0.0, 1e4)
    launches = {
        k: LaunchReplay(
            draw(saving), draw(saving), draw(saving), {r: draw(saving) for r in ranks}, {r: draw(saving) for r in ranks}
        )
        for k in struck
    }
    rows = sorted(set(struck) | set(draw(st.lists(st.integers(0, n_launch), max_size=3))))
    through = np.cumsum([launches[k].arrival_saving + launches[k].group_delay if k in launches else 0.0 for k in rows])
    return used, n_rank, barrier, cause(launches, through.tolist(), rows)


@settings(max_examples=150, deadline=None)
@given(tables_and_replays())
def test_any_tables_and_savings_replay_to_valid_json_that_never_ends_a_launch_later(case):
    used, n_rank, barrier, replayed_cause = case
    tracks = tracks_of(used, n_rank, "b" if barrier else None)
    replayed, meta = replayed_tracks(tracks, replayed_cause)
    trace = ChromeTrace(replayed, {"toolchain": "sim", **meta})
    assert json.loads(trace.json_text()) == json.loads(json.dumps(trace.as_dict()))
    last = {}
    for name, group in (("before", tracks), ("after", replayed)):
        for t in group:
            assert all(d >= 0 for d in t.dur_us)
            for ts, dur, k in zip(t.ts_us, t.dur_us, t.launch):
                last.setdefault(k, {}).setdefault(name, []).append(ts + dur)
    for ends in last.values():
        assert max(ends["after"]) <= max(ends["before"]) + 1e-6 * max(1.0, abs(max(ends["before"])))


def test_a_late_host_s_launch_call_moves_with_its_arrival_and_every_call_with_its_launch():
    used = table(STARTS, DURS, B_STARTS, B_DURS)
    used["api_start_ns"] = used["start_ns"] - 150_000  # every call 150 us before its kernel
    used["api_dur_ns"] = np.full(len(used["rank"]), 5_000)
    info = {r: {**d, "host_api": "launch"} for r, d in details(4).items()}
    tracks = merged_trace(used, info, 0, 0, {0: 0.0, 1: 0.0}, toolchain="sim", barrier_kernel="b").tracks
    late = {k: LaunchReplay(60.0, 0.0, 0.0, {3: 60.0}, {3: 0.0}) for k in (0, 1)}
    replayed, _ = replayed_tracks(tracks, cause(late, [60.0, 120.0]))
    before, after = by_rank(tracks), by_rank(replayed)
    assert after[3].host_ts_us == [before[3].host_ts_us[0] - 60.0, before[3].host_ts_us[1] - 120.0]
    assert after[0].host_ts_us == [before[0].host_ts_us[0], before[0].host_ts_us[1] - 60.0]
    assert after[0].host_dur_us == before[0].host_dur_us


def test_each_cause_rank_loses_its_own_delay_even_below_the_replay_s_last_end():
    # a node's two ranks both work 30 us longer: rank 1 ends last (100), rank 2 at 90; the next-last end is rank 3's 70
    tracks = tracks_of(table([[0.0] * 4], [[55.0, 100.0, 90.0, 70.0]]), 4, barrier=None)
    node = {0: LaunchReplay(0.0, 30.0, 0.0, {1: 0.0, 2: 0.0}, {1: 30.0, 2: 30.0})}
    replayed, meta = replayed_tracks(tracks, cause(node, [0.0]))
    zero = tracks[0].ts_us[0]
    assert [t.ts_us[0] + t.dur_us[0] - zero for t in replayed] == [55.0, 70.0, 60.0, 70.0]
    said = meta["replay"]
    assert (said["without"], said["cost_us_per_launch"], said["cost_ci_us"]) == (
        "late arrival, rank 3",
        10.0,
        [8.0, 12.0],
    )
    assert (said["launches_struck"], said["launches_struck_drawn"]) == (1, 1)
