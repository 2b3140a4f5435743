import pandas as pd
import pytest

from dispatchprof.analysis.traffic import (
    DEFINITIONS,
    bandwidth_gbps,
    bandwidths,
    byte_accounting,
    compare_bytes,
    csv_bytes,
)


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
        {
            "global_rank": 1,
            "available": True,
            "destinations": {"0": {"tokens": 4, "pairs": 4, "remote": True, "same_node": False}},
        },
    ]
    acc = byte_accounting(routing, hidden=10, dtype="bf16")
    assert acc["cross_rank_token_bytes"] == (1 + 4) * 10 * 2
    assert acc["logical_output_bytes"] == (3 + 2 + 4) * 10 * 2
    assert acc["per_rank"]["0"]["cross_rank_token_bytes"] == 20
    assert "FP8 scales are not counted" in acc["definitions"]["excluded"]
    assert byte_accounting(routing, hidden=10, dtype="fp8")["logical_output_bytes"] == 90


def test_missing_routing_is_reported_not_zero():
    acc = byte_accounting([{"global_rank": 3, "available": False}], hidden=10, dtype="bf16")
    assert acc["available"] is False and "3" in acc["reason"] and "cross_rank_token_bytes" not in acc


def test_bandwidth_needs_a_positive_time():
    assert bandwidth_gbps(2_000_000, 1000.0) == pytest.approx(2.0)
    assert bandwidth_gbps(1, 0.0) is None


def test_the_fp8_note_says_what_the_guide_says_and_cites_it():
    # The guide: the FP8 path does not transfer or return *complete* scales. The old note claimed "the test does not
    # transfer them" (no scales at all), which no source supports.
    note = DEFINITIONS["excluded"]
    assert "does not transfer or return complete scales" in note and "issue 15" in note
    assert "docs/formats.md §3" in note and "--dtype fp8" in note and "QuantMode" in note
    assert "does not transfer them" not in note


def frame(rows, columns):
    return pd.DataFrame(rows, columns=columns)


# 2 ranks x 3 measured iterations; rank 0 moves 1000 B per call, rank 1 3000 B
MEASURED = frame(
    [(0, 0, 1.0), (1, 0, 2.0), (0, 1, 2.0), (1, 1, 1.0), (0, 2, 1.0), (1, 2, 4.0)], ["rank", "iteration", "us"]
)
PER_CALL = frame([(r, i, 1000 if r == 0 else 3000) for r in (0, 1) for i in range(3)], ["rank", "iteration", "bytes"])


def test_group_and_per_rank_bandwidths_follow_their_definitions():
    bw = bandwidths(PER_CALL, MEASURED, "cross-rank token bytes")
    # group: per iteration 4000 B / max(1, 2), / max(2, 1), / max(1, 4) us = 2.0, 2.0, 1.0 GB/s -> median 2.0
    assert bw["group"]["gbps_median"] == pytest.approx(2.0)
    # per rank: its own bytes / its own duration per call: rank 0 1.0, 0.5, 1.0 -> 1.0; rank 1 1.5, 3.0, 0.75 -> 1.5
    assert bw["per_rank"] == {"0": pytest.approx(1.0), "1": pytest.approx(1.5)}
    assert "all ranks" in bw["group"]["definition"] and "max" in bw["group"]["definition"]
    assert (
        "its own" in bw["per_rank_definition"]
        and "late rank" in bw["per_rank_caveat"]
        and "fastest" in bw["per_rank_caveat"]
    )


def test_a_zero_duration_gives_no_bandwidth_for_that_call():
    measured = MEASURED.assign(us=[0.0, 0.0, 2.0, 1.0, 1.0, 4.0])
    bw = bandwidths(PER_CALL, measured, "x")
    assert bw["group"]["gbps_median"] == pytest.approx(1.5) and bw["group"]["iterations"] == 2  # iteration 0 has max 0


def test_csv_bytes_are_compared_with_the_computed_accounting_per_rank():
    work = frame(
        [(r, i, 7000 + r, 1000 if r == 0 else 3000) for r in (0, 1) for i in range(3)],
        ["rank", "iteration", "processed_bytes", "sent_bytes"],
    )
    read = csv_bytes(work, MEASURED)
    assert read["per_rank"]["1"] == {"processed_bytes": 7001, "sent_bytes": 3000, "constant": True}
    computed = {
        "available": True,
        "per_rank": {
            "0": {"cross_rank_token_bytes": 1000, "logical_output_bytes": 7000},
            "1": {"cross_rank_token_bytes": 3000, "logical_output_bytes": 9},
        },
    }
    agreement = compare_bytes(computed, read)
    assert agreement["pairs"]["sent_bytes"]["agree"] is True
    assert agreement["pairs"]["processed_bytes"]["agree"] is False and agreement["pairs"]["processed_bytes"][
        "mismatch"
    ] == {"1": [7001, 9]}
    assert agreement["agree"] is False and "docs/formats.md §3" in agreement["note"]


def test_csv_bytes_that_vary_between_calls_say_so():
    work = frame(
        [(0, i, 10, 100 * (i + 1)) for i in range(3)] + [(1, i, 10, 5) for i in range(3)],
        ["rank", "iteration", "processed_bytes", "sent_bytes"],
    )
    read = csv_bytes(work, MEASURED)
    assert read["per_rank"]["0"]["constant"] is False and read["per_rank"]["0"]["sent_bytes"] == 200
