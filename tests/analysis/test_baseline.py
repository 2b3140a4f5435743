"""The baseline analysis: which bytes the bandwidth uses, and the CSV's own byte columns set beside the accounting."""

import pandas as pd
import pytest

from dispatchprof.analysis.baseline import analyse
from dispatchprof.formats.latency_csv import LatencyTable

CONFIG = {
    "stats": {
        "bootstrap": {"resamples": 200, "seed": 0},
        "akl_last_n": 5,
        "tail_ci_ratio": 10.0,
        "own_excess_min_us": 5.0,
    },
    "shape": {"hidden": 10, "dtype": "bf16"},
    "mode": "collect",
    "cluster": {"nodes": 1, "ranks_per_node": 2},
    "analyze": {"shape": None},
}
# rank 0 sends 5 remote tokens, rank 1 sends 15: 100 and 300 cross-rank token bytes per call (hidden 10 x 2 bytes)
ROUTING = [
    {
        "global_rank": 0,
        "available": True,
        "destinations": {"1": {"tokens": 5, "pairs": 6, "remote": True, "same_node": True}},
    },
    {
        "global_rank": 1,
        "available": True,
        "destinations": {"0": {"tokens": 15, "pairs": 20, "remote": True, "same_node": True}},
    },
]
DURATIONS = {0: [1.0, 2.0, 1.0], 1: [2.0, 1.0, 4.0]}


def kernel(work=None):
    rows = [(r, i, us, False, True) for r, values in DURATIONS.items() for i, us in enumerate(values)]
    return LatencyTable(
        pd.DataFrame(rows, columns=["rank", "iteration", "us", "warmup", "in_average"]), "kernel", "1", "x.csv", work
    )


def work(sent):
    return pd.DataFrame(
        [(r, i, 999, sent[r]) for r in (0, 1) for i in range(3)],
        columns=["rank", "iteration", "processed_bytes", "sent_bytes"],
    )


def test_bandwidth_uses_the_computed_accounting_per_rank_and_per_group():
    b = analyse(kernel(), None, ROUTING, CONFIG, "none")["bytes"]
    assert b["used"] == "computed" and b["csv"] is None
    # group: 400 B / max(1,2), /max(2,1), /max(1,4) us -> 0.2, 0.2, 0.1 GB/s; rank 1: 300 B / 2, 1, 4 us -> median 0.15
    assert b["bandwidth"]["group"]["gbps_median"] == pytest.approx(0.2)
    assert b["bandwidth"]["per_rank"]["1"] == pytest.approx(0.15) and "late rank" in b["bandwidth"]["per_rank_caveat"]


def test_csv_byte_columns_are_compared_and_used_when_routing_is_missing():
    agreeing = analyse(kernel(work({0: 100, 1: 300})), None, ROUTING, CONFIG, "none")["bytes"]
    assert agreeing["used"] == "computed" and agreeing["agreement"]["pairs"]["sent_bytes"]["agree"] is True
    assert (
        agreeing["agreement"]["pairs"]["processed_bytes"]["agree"] is False
    )  # 999 against 120 / 400 logical output bytes
    differing = analyse(kernel(work({0: 100, 1: 600})), None, ROUTING, CONFIG, "none")["bytes"]
    assert differing["agreement"]["pairs"]["sent_bytes"]["mismatch"] == {"1": [600, 300]}
    only_csv = analyse(kernel(work({0: 100, 1: 600})), None, [], CONFIG, "none")["bytes"]
    assert (
        only_csv["used"] == "csv" and only_csv["agreement"] is None and "sent_bytes" in only_csv["bandwidth"]["bytes"]
    )
    assert only_csv["bandwidth"]["per_rank"]["1"] == pytest.approx(0.3)  # 600 B / 2, 1, 4 us -> median 0.3 GB/s
    assert "routing" in only_csv["used_why"]


def test_without_routing_or_csv_bytes_every_byte_key_is_still_there():
    # An imported latency CSV without work columns: the report read bytes.bandwidth and failed on a missing key.
    b = analyse(kernel(), None, [], CONFIG, "none")["bytes"]
    assert (b["used"], b["bandwidth"], b["csv"]) == (None, None, None) and "neither routing nor CSV" in b["used_why"]


PEAKS = {"intra_node": {"peak_gbps": 0.1, "source": "test", "kind": "configured"}, "inter_node": {"peak_gbps": None}}


def test_the_link_bound_reads_the_routing_and_the_kernel_scope():
    # one node of 2 ranks: rank 1 sends and rank 0 receives 300 intra-node bytes; at 0.1 GB/s = 100 B/us: 3 us.
    # Per-iteration maxima 2, 2, 4 us: median 2 us -> efficiency 1.5 (> 1: reported, not clamped, with a warning)
    bw = analyse(kernel(), None, ROUTING, CONFIG, "none", peaks=PEAKS)["bandwidth"]
    assert bw["links"]["intra_node"]["bytes_per_launch"] + bw["links"]["inter_node"]["bytes_per_launch"] == 400
    assert bw["bound_us"] == pytest.approx(3.0) and bw["sets_bound"] == "intra_node"
    assert bw["efficiency"] == pytest.approx(1.5) and "not clamped" in bw["warning"]


def test_imported_routing_needs_the_imported_shape():
    analyze = {**CONFIG, "mode": "analyze", "analyze": {"shape": None}}
    result = analyse(kernel(), None, ROUTING, analyze, "none", peaks=PEAKS)
    assert "analyze.shape" in result["bandwidth"]["reason"] and "analyze.shape" in result["bytes"]["reason"]
    no_dir = analyse(kernel(), None, [], analyze, "none", peaks=PEAKS)["bandwidth"]
    assert no_dir["reason"] == "no link bytes: not provided (analyze.routing_dir is not set)"
    known = {**analyze, "analyze": {"shape": {"hidden": 10, "dtype": "bf16"}}}
    assert analyse(kernel(), None, ROUTING, known, "none", peaks=PEAKS)["bandwidth"]["bound_us"] == pytest.approx(3.0)
