"""`snakemake -n` shows the whole plan, on a machine with no Ascend tool, and refuses bad configs early."""

import os
import shutil

from conftest import base_overlay

STAGE_RULES = (
    "env_capture",
    "build",
    "correctness",
    "baseline",
    "timeline",
    "pmu",
    "pcsampling",
    "pipe_timeline_collect",
    "pipe_timeline",
    "debugclock",
    "probe",
    "report",
)


ASCEND_TOOLS = ("msprof", "msopprof", "npu-smi", "msprof-analyze")


def test_dry_run_lists_env_capture_per_node_and_every_stage_and_runs_nothing(workflow_copy):
    # Nothing Ascend on PATH (not even the venv's msprof-analyze): the plan must not need a tool. The stand-ins
    # live under workflow/sim and are put on PATH only by the jobs that run them.
    path = os.pathsep.join(["/usr/bin", "/bin"])
    assert [t for t in ASCEND_TOOLS if shutil.which(t, path=path)] == []
    result = workflow_copy.snakemake("-n", overlay=base_overlay(), env={**os.environ, "PATH": path})
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "env_capture_node" in out
    assert "node0" in out and "node1" in out
    for rule in STAGE_RULES:
        assert f"rule {rule}:" in out or f"localrule {rule}:" in out, rule
    assert not (workflow_copy.root / "results").exists()


def test_a_home_that_cannot_be_written_plans_without_a_traceback(workflow_copy):
    # Snakemake's source cache defaults to ~/.cache/snakemake, made before the Snakefile is read; the workflow
    # profile keeps it in the run's temporary directory (shared-fs-usage without source-cache). /proc/... cannot be
    # created even by root, as a read-only HOME on a compute node cannot.
    env = {**os.environ, "HOME": "/proc/no-such-home"}
    env.pop("XDG_CACHE_HOME", None)
    result = workflow_copy.snakemake("-n", overlay=base_overlay(), env=env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "localrule report:" in result.stdout or "rule report:" in result.stdout


def test_config_with_indivisible_experts_stops_before_the_dag_without_traceback(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay(shape={"num_experts": 100}))
    assert result.returncode != 0
    assert "shape.num_experts (100) must be divisible" in result.stderr
    assert "Traceback" not in result.stderr and "Building DAG" not in result.stdout + result.stderr


def test_unknown_key_is_refused_by_name(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay(cluster={"nodez": 3}))
    assert result.returncode != 0 and "cluster: unknown key(s) ['nodez']" in result.stderr


def job_counts(out: str) -> dict[str, int]:
    """Snakemake's "Job stats" table of a dry run: rule -> planned jobs."""
    table = out[out.index("Job stats:") :].splitlines()[3:]
    rows = [line.split() for line in table[: next(i for i, line in enumerate(table) if line.startswith("total"))]]
    return {name: int(count) for name, count in rows}


def test_analyze_mode_plans_imports_for_what_is_given_and_one_job_for_the_rest(workflow_copy, tmp_path):
    # Experiment a gives only a timeline; b also a PMU tree. Everything else (collection-only stages, stages without
    # artifacts) is one not_provided job per experiment group, not two placeholder jobs per stage.
    overlay = base_overlay(
        mode="analyze",
        analyze={"timeline_dir": str(tmp_path)},
        experiments={"a": {}, "b": {"analyze": {"pmu_dir": str(tmp_path)}}},
    )
    result = workflow_copy.snakemake("-n", overlay=overlay)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    jobs = job_counts(out)
    assert jobs["not_provided"] == 1 and jobs["not_provided_2"] == 1, jobs
    assert jobs["timeline_import"] == 2 and jobs["pmu_import"] == 1 and jobs["pmu"] == 1, jobs
    for rule in (
        "baseline_import",
        "pcsampling_import",
        "pipe_timeline_import",
        "probe_import",
        "env_capture",
        "build",
        "correctness",
        "debugclock",
    ):
        assert rule not in jobs, jobs
    assert "env_capture_node" not in out
    assert "rule pmu_import:" in out and "wildcards: experiment=b" in out[out.index("rule pmu_import:") :][:600]


def test_a_knob_that_can_only_end_at_a_timeout_says_so_in_the_dry_run(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay(sim={"dead_node": 1, "replay": "hang"}))
    assert result.returncode == 0, result.stderr
    assert (
        "Note: sim.dead_node: 1: that node never starts its ranks, so correctness "
        "ends only at its timeout (timeouts.correctness = 600 s (10.0 min))" in result.stderr
    )
    assert (
        "sim.replay: hang: the kernel replay never returns, so pmu "
        "ends only at its timeout (timeouts.pmu = 1800 s (30.0 min))" in result.stderr
    )
    assert "Note:" not in workflow_copy.snakemake("-n", overlay=base_overlay()).stderr


def test_a_redirected_latency_csv_is_refused_before_anything_runs(workflow_copy):
    env = {**os.environ, "AKL_LATENCY_OUTPUT_DIR": "/tmp/elsewhere"}
    result = workflow_copy.snakemake("-n", overlay=base_overlay(), env=env)
    assert (
        result.returncode != 0
        and "AKL_LATENCY_OUTPUT_DIR='/tmp/elsewhere'" in result.stderr
        and "unset it" in result.stderr
    )
    assert "Building DAG" not in result.stdout + result.stderr


# Jobs that need an NPU node: the collective stages and the per-node jobs (env capture with preflight, build).
NPU_JOBS = {
    "env_capture_node",
    "build",
    "correctness",
    "baseline_collect",
    "timeline_collect",
    "pmu_collect",
    "pcsampling_collect",
    "pipe_timeline_collect",
    "debugclock_collect",
}


def planned_partitions(out: str) -> dict[str, set[str]]:
    """rule name -> the slurm_partition values of its planned jobs, read from a dry run's job blocks."""
    partitions: dict[str, set[str]] = {}
    rule = None
    for line in out.splitlines():
        if line.startswith(("rule ", "localrule ")):
            rule = line.split()[1].rstrip(":")
        elif rule and line.strip().startswith("resources:"):
            found = [p.split("=", 1)[1] for p in line.split(", ") if p.startswith("slurm_partition=")]
            partitions.setdefault(rule, set()).update(found or ["<none>"])
    return partitions


def test_with_an_analysis_partition_only_npu_jobs_go_to_the_npu_partition(workflow_copy):
    import pytest

    pytest.importorskip("snakemake_executor_plugin_slurm")
    overlay = base_overlay(slurm={"analysis_partition": "cpu", "cann_partition": "cann"}, probe={"enabled": True})
    result = workflow_copy.snakemake(
        "-n",
        "-j",
        "8",
        "--executor",
        "slurm",
        "--default-resources",
        "slurm_partition=npu",
        "slurm_account=a",
        overlay=overlay,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    partitions = planned_partitions(result.stdout + result.stderr)
    partitions.pop("all")  # the target rule runs nothing (Snakemake keeps it local)
    assert {rule for rule, parts in partitions.items() if parts == {"npu"}} == NPU_JOBS
    assert {rule for rule, parts in partitions.items() if parts == {"cann"}} == {"probe_collect"}
    assert {rule for rule, parts in partitions.items() if parts == {"cpu"}} == set(partitions) - NPU_JOBS - {
        "probe_collect"
    }
    assert {"report", "timeline_parse", "pmu", "pcsampling", "baseline"} <= set(partitions) - NPU_JOBS
    # Without the probe in any experiment, its job (it writes "disabled") is no CANN job either
    overlay["probe"]["enabled"] = False
    result = workflow_copy.snakemake(
        "-n",
        "-j",
        "8",
        "--executor",
        "slurm",
        "--default-resources",
        "slurm_partition=npu",
        "slurm_account=a",
        overlay=overlay,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert planned_partitions(result.stdout + result.stderr)["probe_collect"] == {"cpu"}


def test_a_rule_that_takes_another_rules_fingerprint_row_is_refused(workflow_copy):
    """A rule copied from another that kept its rule_fingerprint name would hash the other rule's keys
    (RULE_KEYS, fingerprints.smk check_fingerprints)."""
    rules = workflow_copy.root / "workflow" / "rules" / "timeline.smk"
    rules.write_text(rules.read_text().replace('rule_fingerprint("timeline_rank")', 'rule_fingerprint("timeline")'))
    result = workflow_copy.snakemake("-n", overlay=base_overlay())
    assert result.returncode == 1
    assert (
        "rule timeline_rank: config_fingerprint=rule_fingerprint('timeline') names another rule's row"
        in result.stdout + result.stderr
    )


def plans_of(out: str, rule: str) -> list[str]:
    """The plan blocks a dry run prints for ``rule``'s jobs (the rule's message), each up to its Reason line."""
    blocks = out.split("what this job runs, as the config decides it:")[1:]
    return [b[: b.index("Reason:")] for b in blocks if b.lstrip().startswith(f"rule {rule}:")]


def check_profiler_lines(out: str, nodes: int) -> None:
    """Every node of every collect job has its profiler line: msprof with --output for the timeline, the op profiler
    with --kernel-name for pmu, pcsampling and pipe_timeline; what env capture settles is marked."""
    (timeline,) = plans_of(out, "timeline_collect")
    for node in range(nodes):
        line = next(x for x in timeline.splitlines() if x.strip().startswith("profiler:") and f"raw/node{node} " in x)
        assert "msprof --output=" in line and "<decided on the node: of --task-time=on" in line, line
    for rule in ("pmu_collect", "pcsampling_collect", "pipe_timeline_collect"):
        plans = plans_of(out, rule)
        assert plans, rule
        for plan in plans:
            lines = [x for x in plan.splitlines() if x.strip().startswith("profiler:")]
            assert len(lines) == nodes, (rule, plan)
            assert all(
                "<decided on the node: `msopprof` or `msprof op`" in x and "--kernel-name=elastic_dispatch_kernel" in x
                for x in lines
            ), plan
    (baseline,) = plans_of(out, "baseline_collect")
    assert "profiler:" not in baseline and baseline.count("test: python3 ") == nodes


def test_dry_run_shows_each_collect_jobs_commands_per_node_under_sim(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay())
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    check_profiler_lines(out, 2)
    (plan,) = plans_of(out, "timeline_collect")
    assert "environment script: none (toolchain sim" in plan and "WARNING" not in out
    names = next(x for x in plan.splitlines() if "variables set:" in x).split(":", 1)[1].split()
    assert {"MASTER_PORT", "RANK", "DISPATCHPROF_OUT", "PATH"} <= set(names) and not [n for n in names if "=" in n]


def test_dry_run_under_cann_shows_the_plan_and_warns_once_of_what_this_host_lacks(workflow_copy, tmp_path):
    overlay = base_overlay(
        toolchain="cann", deepep={"repo": str(tmp_path)}, cann={"install_root": str(tmp_path / "Ascend")}
    )
    result = workflow_copy.snakemake("-n", overlay=overlay, env={**os.environ, "PATH": "/usr/bin:/bin"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    check_profiler_lines(out, 2)
    (plan,) = plans_of(out, "pmu_collect")
    assert (
        "environment script: source the first existing of "
        f"{tmp_path}/Ascend/cann/set_env.sh | {tmp_path}/Ascend/ascend-toolkit/set_env.sh" in plan
    )
    assert "DEEPEP_SIM_" not in plan
    for warned in ("WARNING: cann.set_env: none of", "WARNING: msprof: neither on PATH", "WARNING: deepep: the test"):
        assert result.stderr.count(warned) == 1, (warned, result.stderr[:2000])
