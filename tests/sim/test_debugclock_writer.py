"""The stand-in's DEBUG_CLOCK_ON outputs: derived from the event model, readable by the workflow's parsers (written
by separate code), each slot where docs/formats.md §3 puts it, and the fault knobs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"))

from ascend_deepep._collective import Cluster, CollectiveModel, Knobs  # noqa: E402
from ascend_deepep._debugclock import DebugClockWriter, event_paths, path_hash, write_event_map  # noqa: E402

from dispatchprof.formats.debugclock import (
    DebugClockFormatError,
    find_captures,
    parse_capture,
    parse_event_map,
    parse_legacy_csv,
)  # noqa: E402

ROW = 7168 * 2
CLUSTER = Cluster(world=4, ranks_per_node=4, num_aiv=56, num_experts=32)
SENDS = [[96 * ROW] * 4 for _ in range(4)]


def debug_repo(tmp_path: Path) -> Path:
    (tmp_path / "repo" / "build").mkdir(parents=True)
    (tmp_path / "repo" / "build" / "device_compile_flags.txt").write_text("-O2 -DDEBUG_CLOCK_ON\n")
    return tmp_path / "repo"


def write(tmp_path, monkeypatch, knobs=None, fmt="both", fault="ok", launches=3):
    monkeypatch.setenv("DISPATCH_CLOCK_DIR", str(tmp_path / "clock"))
    monkeypatch.setenv("DEEPEP_SIM_DEBUGCLOCK_FORMAT", fmt)
    monkeypatch.setenv("DEEPEP_SIM_DEBUGCLOCK", fault)
    model = CollectiveModel(CLUSTER, knobs or Knobs())
    repo = debug_repo(tmp_path)
    writers = [DebugClockWriter(r, repo) for r in range(4)]
    last = None
    for call in range(launches):
        last = model.launch(call, SENDS, True)
        for r, w in enumerate(writers):
            w.record(last.ranks[r])
    write_event_map(tmp_path / "clock" / "event_map.json")
    return last


def test_event_ids_are_the_guides():
    ids = {"/".join(p): path_hash(p) for p in event_paths()}
    assert ids["dispatch/Init/entry"] == 0xE693BD81 and ids["dispatch/Process/URMASendToken/iteration"] == 0x7F304D6F


def test_off_build_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPATCH_CLOCK_DIR", str(tmp_path / "clock"))
    writer = DebugClockWriter(0, tmp_path)
    assert not writer.on and writer.marker_overhead_us == 0.0


def test_legacy_slots_follow_the_model(tmp_path, monkeypatch):
    last = write(tmp_path, monkeypatch, fmt="legacy")
    frame = parse_legacy_csv(tmp_path / "clock" / "dispatch_clock_rank_0.csv")
    roles = CollectiveModel(CLUSTER, Knobs()).tiling
    core = {c.block_id: c for c in last.ranks[0].cores}
    for aiv in (roles.index("CalCumSum"), roles.index("URMASendToken"), roles.index("SelfCopyToken")):
        slots = frame[frame.aiv_id == aiv].sort_values("slot")["cycles"].astype(int).tolist()
        # the slots add up to the core's time after the entry barrier (plus the markers' own cost)
        assert sum(slots) / 1000 == pytest.approx(core[aiv].end - core[aiv].start_tick, abs=0.35)
    cum = roles.index("CalCumSum")
    wait = sum(p.us for p in core[cum].phases if p.name == "wait_dispatch")
    assert int(frame[(frame.aiv_id == cum) & (frame.slot == 2)]["cycles"].iloc[0]) / 1000 == pytest.approx(
        wait, abs=0.05
    )
    assert not find_captures(tmp_path / "clock")
    assert sorted(p.name for p in (tmp_path / "clock").glob("dispatch_clock*.csv")) == [
        f"dispatch_clock_rank_{r}.csv" for r in range(4)
    ]


def test_akl_captures_decode_one_per_launch(tmp_path, monkeypatch):
    write(tmp_path, monkeypatch, fmt="akl")
    events = parse_event_map(tmp_path / "clock" / "event_map.json")
    caps = [parse_capture(p, events) for p in find_captures(tmp_path / "clock")]
    assert sorted((c.rank, c.launch) for c in caps) == [(r, n) for r in range(4) for n in range(3)]
    assert caps[0].events["block"].nunique() == 56
    assert not list((tmp_path / "clock").glob("dispatch_clock*.csv"))


def test_slow_role_stretches_the_send_slot(tmp_path, monkeypatch):
    plain = write(tmp_path / "a", monkeypatch, fmt="legacy")
    slow = write(tmp_path / "b", monkeypatch, knobs=Knobs(slow_role=(0, "URMASendToken", 2.0)), fmt="legacy")
    assert plain and slow
    a = parse_legacy_csv(tmp_path / "a" / "clock" / "dispatch_clock_rank_0.csv")
    b = parse_legacy_csv(tmp_path / "b" / "clock" / "dispatch_clock_rank_0.csv")
    urma = CollectiveModel(CLUSTER, Knobs()).tiling.index("URMASendToken")
    pick = lambda f: int(f[(f.aiv_id == urma) & (f.slot == 4)]["cycles"].iloc[0])  # noqa: E731
    # x2 on the core's own work: the send slot (WQE building + waiting for the wire) is the core's send phases in the
    # events, and grows by theirs. The WQE building doubles; the wire is the link's: not x2, but shared on the ports
    # (sim.link_gbps), so it moves with when the other ranks' sends into the same receive port run (rank 0's, posted
    # late, shares the port less: 235.9 -> 219.5 us on this shape), never by the core's factor.
    wqe = {k: phase_us(launch, urma, "send_to_") for k, launch in (("a", plain), ("b", slow))}
    wire = {k: phase_us(launch, urma, "complete_") for k, launch in (("a", plain), ("b", slow))}
    assert wqe["a"] > 0 and wqe["b"] == pytest.approx(2 * wqe["a"], rel=1e-6)
    assert 0 < wire["b"] <= wire["a"]
    grown = (wqe["b"] + wire["b"]) - (wqe["a"] + wire["a"])
    assert pick(b) - pick(a) == pytest.approx(grown * 1000, rel=0.01)


def phase_us(launch, block: int, prefix: str) -> float:
    """Rank 0's time in one core's phases whose names start with prefix (the event truth)."""
    return sum(p.us for p in launch.ranks[0].cores[block].phases if p.name.startswith(prefix))


@pytest.mark.parametrize("fmt", ["legacy", "akl"])
def test_corrupt_knob_gives_files_the_parsers_refuse(tmp_path, monkeypatch, fmt):
    write(tmp_path, monkeypatch, fmt=fmt, fault="corrupt", launches=1)
    with pytest.raises(DebugClockFormatError):
        if fmt == "legacy":
            parse_legacy_csv(tmp_path / "clock" / "dispatch_clock_rank_0.csv")
        else:
            events = parse_event_map(tmp_path / "clock" / "event_map.json")
            parse_capture(find_captures(tmp_path / "clock")[0], events)


def test_missing_knob_writes_nothing(tmp_path, monkeypatch):
    write(tmp_path, monkeypatch, fault="missing", launches=1)
    assert not list((tmp_path / "clock").glob("dispatch_clock*")) and not find_captures(tmp_path / "clock")


def test_keep_last_keeps_the_newest_capture_only(tmp_path, monkeypatch):
    monkeypatch.setenv("AKL_TRACE_KEEP_LAST", "1")
    write(tmp_path, monkeypatch, fmt="akl")
    assert {p.name.rsplit("-", 1)[1] for p in find_captures(tmp_path / "clock")} == {"launch2"}
