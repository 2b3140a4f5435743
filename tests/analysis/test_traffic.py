import pytest

from dispatchprof.analysis.traffic import bandwidth_gbps, byte_accounting


def test_bytes_follow_their_definitions():
    routing = [
        {
            "global_rank": 0,
            "available": True,
            "destinations": {
                "0": {"tokens": 2, "pairs": 3, "remote": False, "same_node": True},
                "1": {"tokens": 1, "pairs": 2, "remote": True, "same_node": False},
            },
        },
        {"global_rank": 1, "available": True, "destinations": {"0": {"tokens": 4, "pairs": 4, "remote": True, "same_node": False}}},
    ]
    acc = byte_accounting(routing, hidden=10, dtype="bf16")
    assert acc["cross_rank_token_bytes"] == (1 + 4) * 10 * 2
    assert acc["logical_output_bytes"] == (3 + 2 + 4) * 10 * 2
    assert acc["per_rank"]["0"]["cross_rank_token_bytes"] == 20
    assert "FP8 scales are excluded" in acc["definitions"]["excluded"]
    assert byte_accounting(routing, hidden=10, dtype="fp8")["logical_output_bytes"] == 90


def test_missing_routing_is_reported_not_zero():
    acc = byte_accounting([{"global_rank": 3, "available": False}], hidden=10, dtype="bf16")
    assert acc["available"] is False and "3" in acc["reason"] and "cross_rank_token_bytes" not in acc


def test_bandwidth_needs_a_positive_time():
    assert bandwidth_gbps(2_000_000, 1000.0) == pytest.approx(2.0)
    assert bandwidth_gbps(1, 0.0) is None
