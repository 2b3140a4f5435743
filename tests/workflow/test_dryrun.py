"""`snakemake -n` shows the whole plan, on a machine with no Ascend tool, and refuses bad configs early."""

import os

from conftest import base_overlay

STAGE_RULES = ("env_capture", "build", "correctness", "baseline", "timeline", "pmu", "pcsampling", "report")


def test_dry_run_lists_env_capture_per_node_and_every_stage_and_runs_nothing(workflow_copy):
    env_path = "/usr/bin:/bin"
    result = workflow_copy.snakemake("-n", overlay=base_overlay())
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "env_capture_node" in out
    assert "node0" in out and "node1" in out
    for rule in STAGE_RULES:
        assert f"rule {rule}:" in out or f"localrule {rule}:" in out, rule
    assert not (workflow_copy.root / "results").exists()
    assert os.environ.get("PATH") is not None and env_path


def test_config_with_indivisible_experts_stops_before_the_dag_without_traceback(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay(shape={"num_experts": 100}))
    assert result.returncode != 0
    assert "shape.num_experts (100) must be divisible" in result.stderr
    assert "Traceback" not in result.stderr and "Building DAG" not in result.stdout + result.stderr


def test_unknown_key_is_refused_by_name(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay(cluster={"nodez": 3}))
    assert result.returncode != 0 and "cluster: unknown key(s) ['nodez']" in result.stderr


def test_analyze_mode_plans_import_rules_instead_of_collection(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay(mode="analyze"))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    for rule in ("baseline_import", "timeline_import", "pmu_import", "pcsampling_import"):
        assert rule in out
    assert "env_capture_node" not in out
