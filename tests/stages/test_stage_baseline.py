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
    run = stage_run(tmp_path, "baseline", outputs=OUTPUTS, params={"run_dir": None}, overlay={**TWO_RANKS, "analyze": {"latency_csv": str(csv)}})
    run.outputs["plots"].mkdir()
    status = baseline(run, {})
    assert status.state == "ok", status.reason
    assert status.reason.startswith("22 measured iterations on 2 ranks; per-iteration max median")
    stats = json.loads(run.outputs["stats"].read_text())
    assert stats["policy"]["synchronize_start"] == "unknown (imported)" and "summary" in stats
    assert (run.outputs["plots"] / "kernel_per_rank.png").is_file()


def test_a_csv_of_another_world_size_is_invalid(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 3)
    run = stage_run(tmp_path, "baseline", outputs=OUTPUTS, params={"run_dir": None}, overlay={**TWO_RANKS, "analyze": {"latency_csv": str(csv)}})
    status = baseline(run, {})
    assert status.state == "invalid" and "holds 3 ranks but the config has 2" in status.reason
