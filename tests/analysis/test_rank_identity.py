"""One rank rule for timeline, PMU and PC sampling: sidecar, then the recorded rank, then the device id."""

import json
from pathlib import Path

import pytest

from dispatchprof.analysis.rank_identity import (
    RankIdentityError,
    RankSource,
    assign_ranks,
    coverage_of,
    load_identities,
)


def source(node, device, pid=None, recorded=None, name=None):
    return RankSource(Path(name or f"node{node}/PROF_{pid}_{device}"), node, device, pid, recorded)


def test_the_sidecar_wins_then_the_recorded_rank_then_the_device_id():
    sources = [source(1, 2, pid=100), source(1, 0, pid=101, recorded=9), source(1, 5, pid=102)]
    out = {a.source.pid: a for a in assign_ranks(sources, 8, {(1, 100): {"global_rank": 12}})}
    assert (out[100].rank, out[100].how) == (12, "sidecar")
    assert (out[101].rank, out[101].how) == (9, "recorded")
    # device_id: local rank = device id, whatever devices are missing around it
    assert (out[102].rank, out[102].how, out[102].inferred) == (13, "inferred (device_id)", True)


def test_device_order_numbers_by_position_as_msprof_analyze_does():
    sources = [source(0, 4, pid=1), source(0, 6, pid=2)]
    assert [a.rank for a in assign_ranks(sources, 8, {}, "device_order")] == [0, 1]
    assert [a.rank for a in assign_ranks(sources, 8, {}, "device_id")] == [4, 6]


def test_the_same_pid_on_two_nodes_is_two_processes(tmp_path):
    for node, rank in ((0, 3), (1, 11)):
        (tmp_path / f"rank{rank}.json").write_text(
            json.dumps({"node": node, "pid": 777, "global_rank": rank, "device_id": 3})
        )
    identities = load_identities(tmp_path)
    out = assign_ranks([source(0, 3, pid=777), source(1, 3, pid=777)], 8, identities)
    assert [(a.rank, a.how) for a in out] == [(3, "sidecar"), (11, "sidecar")]


def test_a_sidecar_naming_another_device_does_not_number_this_one():
    sources = [source(0, 0, pid=5), source(0, 1, pid=5)]  # one process, two devices in one PROF_
    out = assign_ranks(sources, 8, {(0, 5): {"global_rank": 0, "device_id": 0}})
    assert [(a.rank, a.how) for a in out] == [(0, "sidecar"), (1, "inferred (device_id)")]


def test_a_rank_claimed_twice_is_refused_naming_both_sources():
    sources = [source(0, 2, pid=1, name="node0/PROF_old"), source(0, 2, pid=2, name="node0/PROF_new")]
    with pytest.raises(RankIdentityError) as caught:
        assign_ranks(sources, 8, {})
    message = str(caught.value)
    assert "rank 2 is claimed twice" in message and "PROF_old" in message and "PROF_new" in message


def test_a_device_beyond_ranks_per_node_has_no_rank_rather_than_a_neighbours():
    (only,) = assign_ranks([source(0, 9, pid=1)], 8, {})
    assert (only.rank, only.how) == (None, "unknown")


def test_coverage_states_what_is_missing_and_whether_enough_remains():
    partial = coverage_of(16, [r for r in range(16) if r != 3], 0.5)
    assert partial.sentence() == "15/16 ranks (missing rank 3)" and partial.enough and not partial.complete
    few = coverage_of(16, [0, 1], 0.5)
    assert not few.enough and few.missing == list(range(2, 16))
    assert not coverage_of(16, [], 0.01).enough
    assert coverage_of(1, [0], 0.5).sentence() == "1/1 ranks"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"node": 0, "pid": 42, "global_rank"', "not JSON"),  # truncated
        (b"\x89PNG\r\n\x1a\n\x00\x00", "binary data"),
        (b"\xff\xfe" + '{"node": 0}'.encode("utf-16-le"), "UTF-16 LE"),
        (b"[1, 2]", "a JSON list"),
        (b'{"node": 0, "pid": "42", "global_rank": 3}', "field 'pid' is '42'"),
        (b'{"node": 0, "pid": 42, "global_rank": -1}', "field 'global_rank' is -1"),
        (b'{"node": true, "pid": 42, "global_rank": 1}', "field 'node' is True"),
    ],
)
def test_a_damaged_identity_sidecar_ends_in_an_error_naming_the_file_and_what_was_expected(tmp_path, content, expected):
    path = tmp_path / "n0-42.json"
    path.write_bytes(content)
    with pytest.raises(RankIdentityError) as caught:
        load_identities(tmp_path)
    assert str(path) in str(caught.value) and expected in str(caught.value)
    assert path.read_bytes() == content
