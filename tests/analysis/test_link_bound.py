"""The link bound and the group's efficiency on hand-built byte tables (no simulator)."""

from __future__ import annotations

import pytest

from dispatchprof.analysis.linkbound import link_bound

MEASURED = {"median": 2000.0, "median_ci95": [1900.0, 2100.0], "n": 50}
PEAKS = {
    "intra_node": {"peak_gbps": 2.0, "source": "test", "kind": "configured"},
    "inter_node": {"peak_gbps": 1.0, "source": "test", "kind": "configured"},
}


def table(intra_sent, inter_sent, intra_recv=None, inter_recv=None):
    def link(sent, recv):
        recv = recv if recv is not None else sent
        return {
            "bytes_per_launch": sum(sent.values()),
            "sent_per_rank": sent,
            "received_per_rank": recv,
            "per_node_pair": {},
        }

    links = {"intra_node": link(intra_sent, intra_recv), "inter_node": link(inter_sent, inter_recv)}
    return {"available": True, "links": links, "definition": "test bytes"}


def test_the_bound_is_the_largest_class_time_on_the_busiest_rank():
    # inter: rank 1 sends 1.0e6 B at 1 GB/s = 1000 us; intra: 1.2e6 B at 2 GB/s = 600 us -> inter sets the bound
    out = link_bound(table({"0": 1_200_000, "1": 400_000}, {"0": 500_000, "1": 1_000_000}), PEAKS, MEASURED)
    assert out["links"]["inter_node"]["bound_us"] == pytest.approx(1000.0)
    assert out["links"]["intra_node"]["bound_us"] == pytest.approx(600.0)
    assert out["bound_us"] == pytest.approx(1000.0) and out["sets_bound"] == "inter_node"
    assert out["busiest"]["where"] == "rank 1 sends and receives"
    assert out["efficiency"] == pytest.approx(0.5)
    assert out["efficiency_ci95"] == pytest.approx([1000 / 2100, 1000 / 1900])
    # achieved: the busiest rank's bytes over the whole kernel (2000 us): 1e6 B / 2e6 B/ms... = 0.5 GB/s
    assert out["links"]["inter_node"]["achieved_gbps"] == pytest.approx(0.5)
    assert (
        out["links"]["inter_node"]["efficiency"] is None
        and "DebugClock" in out["links"]["inter_node"]["efficiency_why"]
    )
    assert "not a link counter" in out["not"] and "congestion" in out["not"]


def test_a_hot_receiver_binds_harder_than_any_sender():
    sent = {str(r): 250_000 for r in range(4)}
    out = link_bound(table({}, sent, inter_recv={"0": 1_000_000}), PEAKS, MEASURED)
    assert out["busiest"]["where"] == "rank 0 receives" and out["bound_us"] == pytest.approx(1000.0)


def test_a_class_with_bytes_and_no_peak_leaves_the_bound_not_established():
    peaks = {**PEAKS, "inter_node": {"peak_gbps": None, "source": None, "kind": "configured"}}
    out = link_bound(table({"0": 100}, {"0": 100}), peaks, MEASURED)
    assert out["bound_us"] is None and out["efficiency"] is None
    assert "peak not configured" in out["reason"] and "hardware.links.inter_node.peak_gbps" in out["reason"]
    assert out["links"]["inter_node"]["note"] == "peak not configured (hardware.links.inter_node.peak_gbps)"


def test_a_class_without_bytes_needs_no_peak():
    peaks = {**PEAKS, "inter_node": {"peak_gbps": None}}  # one node: nothing crosses nodes
    out = link_bound(table({"0": 2_000_000}, {}), peaks, MEASURED)
    assert out["sets_bound"] == "intra_node" and out["bound_us"] == pytest.approx(1000.0)


def test_an_efficiency_above_one_is_reported_not_clamped():
    out = link_bound(table({}, {"0": 4_000_000}), PEAKS, MEASURED)  # 4000 us at the peak, measured 2000 us
    assert out["efficiency"] == pytest.approx(2.0)
    assert "peak" in out["warning"] and "not clamped" in out["warning"]


def test_missing_bytes_say_why():
    out = link_bound({"available": False, "reason": "routing not recorded for ranks [3]"}, PEAKS, MEASURED)
    assert out["links"] is None and "ranks [3]" in out["reason"]


def test_far_below_marks_a_group_far_from_its_bound():
    tables = table({}, {"0": 1_000_000})  # 1000 us at the peak, measured 2000 us: efficiency 0.5
    assert link_bound(tables, PEAKS, MEASURED, far_below=0.6)["far"] is True
    assert link_bound(tables, PEAKS, MEASURED, far_below=0.4)["far"] is False


def test_an_even_load_names_no_single_rank():
    even = {str(r): 1_000_000 for r in range(4)}
    out = link_bound(table({}, even), PEAKS, MEASURED)
    assert (
        out["busiest"]["where"] == "rank 0 sends and receives, as much as 3 other ranks"
        and out["busiest"]["ranks_at_max"] == 4
    )
