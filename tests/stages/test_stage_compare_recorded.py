"""The comparison job with a recorded side (stages/comparison.py, comparison_record): whatever files the recorded
directory lacks, the record is whole (never an exception), each lacking file is named by its layer's row or a note,
and a side of another shape is refused naming the factor."""

import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import latency_table, write_part_status
from dispatchprof.shell.compare_config import RECORDED_FILES, recorded_inputs
from dispatchprof.stages.comparison import ComparisonJob, comparison_record

CONFIG = {
    "mode": "collect",
    "toolchain": "sim",
    "shape": {"num_tokens": 256, "hidden": 7168},
    "cluster": {"nodes": 2, "ranks_per_node": 2},
    "kernel": {"name": "elastic_dispatch_kernel"},
    "deepep": {"ref": None},
}
STATUS_OF = {  # the status each stage's file of a run dir holds (the layers needing tables are disabled)
    "baseline": "ok",
    "correctness": "ok",
    "timeline": "ok",
    "pmu": "disabled",
    "pcsampling": "disabled",
    "debugclock": "disabled",
}


def run_dir(root: Path, centre: float, config=CONFIG) -> Path:
    rng = np.random.default_rng(int(centre))
    for stage, state in STATUS_OF.items():
        write_part_status(root / stage / "status.json", stage, state)
    latency_table(rng, centre, n=20).to_parquet(root / "baseline/latency.parquet")
    (root / "baseline/stats.json").write_text(json.dumps({"bandwidth": {}}))
    stats = {"causes": [], "straggler": {"excess": {"period_us_per_launch": 5.0}}}
    (root / "timeline/stats.json").write_text(json.dumps(stats))
    for name in ("pmu/cores.parquet", "pcsampling/stalls.json", "debugclock/segments.parquet"):
        (root / name).write_text("placeholder")
    (root / "build").mkdir()
    (root / "build/build.json").write_text("{}")
    (root / "config.json").write_text(json.dumps({"config": config}))
    return root


def job(tmp: Path, lacking=(), a_config=CONFIG) -> ComparisonJob:
    old = run_dir(tmp / "old/baseline", 100.0, a_config)
    for name in lacking:
        (old / RECORDED_FILES[name]).unlink()
    new = run_dir(tmp / "results/b", 90.0)
    have, lacks = recorded_inputs(old)
    inputs = {f"a_{name}_old+baseline": path for name, path in have.items()}
    inputs.update({f"b_{name}_b": str(new / rel) for name, rel in RECORDED_FILES.items() if name != "config"})
    return ComparisonJob(
        names={"a": "old+baseline", "b": "b"},
        runs={"a": ["old+baseline"], "b": ["b"]},
        inputs=inputs,
        configs={"a": None, "b": {**CONFIG, "stats": {"bootstrap": {"resamples": 200, "seed": 0}}}},
        directories={"a": str(old)},
        missing={"a": lacks},
    )


def test_a_whole_recorded_side_is_compared_and_named():
    with tempfile.TemporaryDirectory() as tmp:
        result = comparison_record(job(Path(tmp)))
    assert result["state"] == "ok", result.get("reason")
    rows = {r["key"]: r for r in result["rows"]}
    assert rows["latency.kernel.median"]["verdict"] == "improved" and rows["precision.pass"]["verdict"] == "pass"
    assert result["recorded"]["a"].endswith("old/baseline") and result["sides"]["a"]["recorded"]
    assert any("compared from its files" in n for n in result["notes"])


def test_a_recorded_side_of_another_shape_or_toolchain_is_refused_naming_the_factors():
    other = {**CONFIG, "toolchain": "cann", "shape": {"num_tokens": 128, "hidden": 7168}}
    with tempfile.TemporaryDirectory() as tmp:
        result = comparison_record(job(Path(tmp), a_config=other))
    assert result["state"] == "refused" and result["rows"] == []
    assert "shape.num_tokens, toolchain" in result["reason"], result["reason"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.sampled_from(sorted(RECORDED_FILES)), max_size=len(RECORDED_FILES)))
def test_whatever_a_recorded_side_lacks_the_record_is_whole_and_names_it(lacking):
    with tempfile.TemporaryDirectory() as tmp:
        result = comparison_record(job(Path(tmp), lacking))
    assert result["state"] in ("ok", "refused")
    json.dumps(result)  # comparison.json can be written
    said = json.dumps(result.get("rows", [])) + json.dumps(result["notes"])
    for name in lacking - {"build"}:  # which build a side ran is comparison.json's sides, not a row
        if result["state"] == "ok" or name in ("config", "correctness", "baseline"):
            assert f"{RECORDED_FILES[name]} missing" in said, (name, said)
    if "latency" in lacking and result["state"] == "ok":
        rows = {r["key"]: r for r in result["rows"]}
        assert rows["latency.kernel.median"]["verdict"] == "not comparable"
