"""The baseline stage as a library function, without Snakemake (the whole DAG: tests/workflow)."""

import json

from conftest import stage_run
from dispatchprof.stages.baseline import baseline

OUTPUTS = {"latency": "latency.parquet", "stats": "stats.json", "plots": "plots"}
TWO_RANKS = {"mode": "analyze", "cluster": {"nodes": 1, "ranks_per_node": 2}}
HEADER = "rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average,measurement,clock_hz\n"


def latency_csv(path, ranks, iterations=24, slow_rank=None):
    rows = []
    for rank in range(ranks):
        for i in range(iterations):
            us = 500.0 if i < 2 else 20.0 + (i % 5) + (30.0 if rank == slow_rank else 0.0)
            rows.append(f"{rank},{i},{us / 1000:.9f},{us:.9f},{int(i < 2)},{int(i >= 2)},kernel,50000000\n")
    path.write_text(HEADER + "".join(rows))
    return path


def test_an_imported_csv_gives_statistics_plots_and_a_reason(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 2, slow_rank=1)
    run = stage_run(
        tmp_path,
        "baseline",
        outputs=OUTPUTS,
        params={"run_dir": None},
        overlay={**TWO_RANKS, "analyze": {"latency_csv": str(csv)}},
    )
    run.outputs["plots"].mkdir()
    status = baseline(run, {})
    assert status.state == "ok", status.reason
    assert status.reason.startswith("22 measured iterations on 2 ranks; per-iteration max median")
    stats = json.loads(run.outputs["stats"].read_text())
    assert stats["policy"]["synchronize_start"] == "unknown (imported)" and "summary" in stats
    assert (run.outputs["plots"] / "kernel_per_rank.png").is_file()


def test_a_csv_of_another_world_size_is_invalid(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 3)
    run = stage_run(
        tmp_path,
        "baseline",
        outputs=OUTPUTS,
        params={"run_dir": None},
        overlay={**TWO_RANKS, "analyze": {"latency_csv": str(csv)}},
    )
    status = baseline(run, {})
    assert status.state == "invalid" and "holds 3 ranks but the config has 2" in status.reason


def test_an_implausible_latency_never_reaches_the_statistics(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 2)
    lines = csv.read_text().splitlines(keepends=True)
    lines[7] = lines[7].replace(lines[7].split(",")[3], "1e300")  # rank 0 iteration 6: line 8 of the file
    csv.write_text("".join(lines))
    run = stage_run(
        tmp_path,
        "baseline",
        outputs=OUTPUTS,
        params={"run_dir": None},
        overlay={**TWO_RANKS, "analyze": {"latency_csv": str(csv)}},
    )
    status = baseline(run, {})
    assert status.state == "invalid", status.reason
    assert (
        status.reason == f"{csv}: line 8: field 'elapsed_us' is 1e300, 1e+300 us, above "
        "stats.max_plausible_us (1e+06 us): not a plausible dispatch duration"
    )
    assert not run.outputs["stats"].exists() and not run.outputs["latency"].exists()


def test_the_plausibility_limit_is_the_configured_one(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 2)  # warm-up rows of 500 us on lines 2 and 3
    overlay = {**TWO_RANKS, "analyze": {"latency_csv": str(csv)}, "stats": {"max_plausible_us": 400}}
    status = baseline(stage_run(tmp_path, "baseline", outputs=OUTPUTS, params={"run_dir": None}, overlay=overlay), {})
    assert status.state == "invalid" and status.reason.startswith(
        f"{csv}: line 2: field 'elapsed_us' is 500.000000000, 500 us, above"
    ), status.reason


def test_an_imported_routing_dir_gives_the_link_bound_with_the_configured_peak(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 2)
    routing = tmp_path / "routing"
    routing.mkdir()
    for rank, tokens in (
        (0, 10),
        (1, 20),
    ):  # intra-node only (one node of 2 ranks): 200 and 400 bytes at hidden 10 bf16
        record = {
            "global_rank": rank,
            "available": True,
            "destinations": {str(1 - rank): {"tokens": tokens, "pairs": tokens, "remote": True, "same_node": True}},
        }
        (routing / f"rank{rank}.json").write_text(json.dumps(record))
    analyze = {"latency_csv": str(csv), "routing_dir": str(routing), "shape": {"hidden": 10, "dtype": "bf16"}}
    overlay = {
        **TWO_RANKS,
        "analyze": analyze,
        "hardware": {"links": {"intra_node": {"peak_gbps": 0.04, "source": "test"}}},
    }
    run = stage_run(tmp_path, "baseline", outputs=OUTPUTS, params={"run_dir": None}, overlay=overlay)
    run.outputs["plots"].mkdir()
    assert baseline(run, {}).state == "ok"
    summary = json.loads(run.outputs["stats"].read_text())["summary"]["bandwidth"]
    # rank 1 sends (and rank 0 receives) 400 B at 0.04 GB/s = 40 B/us: 10 us; measured medians are 22-24 us
    assert (
        summary["links"]["intra_node"]["bytes_per_launch"] == 600
        and summary["links"]["inter_node"]["bytes_per_launch"] == 0
    )
    assert summary["bound_us"] == 10.0 and summary["sets_bound"] == "intra_node" and 0 < summary["efficiency"] < 1
    assert summary["links"]["intra_node"]["peak_kind"] == "configured"


def test_without_a_configured_peak_the_bound_says_so(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 2)
    routing = tmp_path / "routing"
    routing.mkdir()
    record = {
        "global_rank": 0,
        "available": True,
        "destinations": {"1": {"tokens": 1, "pairs": 1, "remote": True, "same_node": True}},
    }
    (routing / "rank0.json").write_text(json.dumps(record))
    (routing / "rank1.json").write_text(json.dumps({**record, "global_rank": 1, "destinations": {}}))
    analyze = {"latency_csv": str(csv), "routing_dir": str(routing), "shape": {"hidden": 10, "dtype": "bf16"}}
    run = stage_run(
        tmp_path, "baseline", outputs=OUTPUTS, params={"run_dir": None}, overlay={**TWO_RANKS, "analyze": analyze}
    )
    run.outputs["plots"].mkdir()
    assert baseline(run, {}).state == "ok"
    summary = json.loads(run.outputs["stats"].read_text())["summary"]["bandwidth"]
    assert summary["bound_us"] is None and summary["efficiency"] is None and "peak not configured" in summary["reason"]
