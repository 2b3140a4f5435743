"""A comparison side that is a recorded results directory (issue 59): a run of another day, copied elsewhere, is
compared from its files without collecting it again (nothing is written under it, its files are unchanged), and a
recorded side of another shape is refused naming the factor; a file it lacks is a layer "not comparable" naming it.
"""

import hashlib
import json
import shutil

from conftest import base_overlay


def hashes(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def test_a_copied_results_directory_is_compared_from_its_files(workflow_copy):
    root = workflow_copy.root
    first = workflow_copy.snakemake(overlay=base_overlay(), timeout=1200)  # experiment baseline, every stage
    assert first.returncode == 0, first.stderr[-3000:]
    record = json.loads((root / "results/baseline/config.json").read_text())
    assert record["config"]["shape"]["num_tokens"] and record["config"]["toolchain"] == "sim"

    old = root / "tmp/old/baseline"
    shutil.copytree(root / "results/baseline", old)
    # another shape, by its record: refused, naming the factor
    other_shape = root / "tmp/other_shape/baseline"
    shutil.copytree(old, other_shape)
    changed = json.loads((other_shape / "config.json").read_text())
    changed["config"]["shape"]["num_tokens"] += 1
    (other_shape / "config.json").write_text(json.dumps(changed))
    # a copy that lost its PMU table and its precision status: those layers not comparable, naming the files
    partial = root / "tmp/partial/baseline"
    shutil.copytree(old, partial)
    (partial / "pmu/cores.parquet").unlink()
    (partial / "correctness/status.json").unlink()
    before = hashes(old)

    overlay = base_overlay(
        experiments={"late": {"sim": {"late_rank": 13, "late_us": 40}}},
        compare=[
            ["tmp/old/baseline", "late"],
            {"a": "tmp/other_shape/baseline", "b": "late"},
            ["tmp/partial/baseline", "late"],
        ],
    )
    result = workflow_copy.snakemake("--until", "compare", overlay=overlay, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]

    assert hashes(old) == before  # nothing collected or rewritten under the recorded side
    assert not (root / "results/tmp+old+baseline").exists()

    def comparison(name):
        return json.loads((root / f"results/compare/{name}/comparison.json").read_text())

    data = comparison("tmp+old+baseline_vs_late")
    assert data["state"] == "ok" and data["recorded"] == {"a": "tmp/old/baseline"}
    assert data["sides"]["a"]["recorded"] == "tmp/old/baseline" and data["runs"]["b"] == ["late"]
    rows = {r["key"]: r for r in data["rows"]}
    kernel = rows["latency.kernel.median"]
    assert isinstance(kernel["a"], float) and isinstance(kernel["b"], float) and kernel["ci95"] is not None
    assert rows["precision.pass"]["verdict"] == "pass"
    assert any(r["layer"] == "pmu" and r["verdict"] != "not comparable" for r in data["rows"])
    # the late rank is a cause on B only
    assert any(r["layer"] == "cost" and r["verdict"] == "appeared" and "13" in r["key"] for r in data["rows"])
    assert (root / "results/compare/tmp+old+baseline_vs_late/comparison.html").is_file()

    refused = comparison("tmp+other_shape+baseline_vs_late")
    assert refused["state"] == "refused" and "shape.num_tokens" in refused["reason"], refused["reason"]

    lacking = comparison("tmp+partial+baseline_vs_late")
    assert lacking["state"] == "ok"
    by_layer = {r["layer"]: r for r in lacking["rows"] if r["verdict"] == "not comparable"}
    assert "pmu/cores.parquet missing" in by_layer["pmu"]["note"]
    assert "correctness/status.json missing" in by_layer["precision"]["note"]
