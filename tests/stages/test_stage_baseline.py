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


def test_an_implausible_latency_never_reaches_the_statistics(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 2)
    lines = csv.read_text().splitlines(keepends=True)
    lines[7] = lines[7].replace(lines[7].split(",")[3], "1e300")  # rank 0 iteration 6: line 8 of the file
    csv.write_text("".join(lines))
    run = stage_run(tmp_path, "baseline", outputs=OUTPUTS, params={"run_dir": None}, overlay={**TWO_RANKS, "analyze": {"latency_csv": str(csv)}})
    status = baseline(run, {})
    assert status.state == "invalid", status.reason
    assert status.reason == f"{csv}: line 8: field 'elapsed_us' is 1e300, 1e+300 us, above stats.max_plausible_us (1e+06 us): not a plausible dispatch duration"
    assert not run.outputs["stats"].exists() and not run.outputs["latency"].exists()


def test_the_plausibility_limit_is_the_configured_one(tmp_path):
    csv = latency_csv(tmp_path / "dispatch_latency.csv", 2)  # warm-up rows of 500 us on lines 2 and 3
    overlay = {**TWO_RANKS, "analyze": {"latency_csv": str(csv)}, "stats": {"max_plausible_us": 400}}
    status = baseline(stage_run(tmp_path, "baseline", outputs=OUTPUTS, params={"run_dir": None}, overlay=overlay), {})
    assert status.state == "invalid" and status.reason.startswith(f"{csv}: line 2: field 'elapsed_us' is 500.000000000, 500 us, above"), status.reason
