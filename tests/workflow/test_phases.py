"""Collection and analysis are separate phases (DESIGN.md): every schema key has one (x-phase); after one complete
run, changing an analysis key plans no collect, build, env-capture or correctness job and plans the analysis jobs
that use it, and changing a collection key plans its collection. A collect rule gates on its upstream analysis's
state and the timeline's kernel name, not on the files a re-analysis rewrites.

The walk plans one dry run per key in this process, through Snakemake's API: the DAG and the needrun decision of
`snakemake -n` (~0.15 s each instead of ~2 s for a new process), so every key gets its own dry run.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from conftest import ROOT, WorkflowCopy, assert_ended_by_fail_on, base_overlay, copy_workflow, without_slurm_probe
from dispatchprof.shell.config import fill_defaults, load_schema, phase_problems
from dispatchprof.shell.config_reads import ENV as READS_ENV
from dispatchprof.shell.config_reads import outside_row
from dispatchprof.shell.rule_keys import NO_FINGERPRINT, RULE_KEYS, UNFINGERPRINTED_READS, is_collection_rule, row_of

SCHEMA = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


# A value for the keys whose new value the schema alone does not give (patterns, lists, objects), valid with the
# rest of the default config. Keys that need other keys changed with them give those too (a dotted key -> value map).
VALUES: dict[str, Any] = {
    "experiment": "renamed",
    "history.path": "results/history_other",
    "history.series": "other",
    "history.reference_since": "2026-12-01T00:00:00+00:00",
    "history.exclude": {"0123456789abcdef": "a known-bad night"},
    "fail_on": ["failed"],
    "cluster.ranks_per_node": 4,
    "cluster.hosts": ["127.0.0.1", "127.0.0.1"],
    "cluster.master_addr": "localhost",
    "cluster.forward_env": ["TASK_QUEUE_ENABLE"],
    "slurm.srun_args": ["--exclusive"],
    "slurm.gres": "npu:8",
    "slurm.analysis_partition": "cpu",
    "slurm.cann_partition": "cann",
    "ssh.user": "someone",
    "ssh.identity_file": "~/.ssh/id_other",
    "ssh.options": ["ConnectTimeout=20"],
    "ssh.python": "python3.11",
    "cann.set_env": "/opt/Ascend/cann/set_env.sh",
    "cann.install_root": "/opt/Ascend",
    "deepep.python": "python3.11",
    "deepep.test": "test/test_other.py",
    "deepep.pass_pattern": "\\[rank (?P<rank>\\d+)\\].*precision check passed.*",
    "deepep.start_pattern": None,
    "deepep.fail_pattern": None,
    "deepep.log_glob": "*/rank*.txt",
    "deepep.transport": "rdma",
    "deepep.build_command": ["true"],
    "deepep.build_env": {"DEVICE_DEBUG_INFO": "OFF"},
    "deepep.build_dir": "build_other",
    "deepep.library_globs": ["build/**/*.so"],
    "cluster_lock.dir": "elsewhere/locks",
    "shape.num_tokens": 128,
    "shape.num_experts": 768,
    "shape.num_aiv": {
        "shape.num_aiv": 48,
        "kernel.roles": [
            {"name": "TokenCopyToBuffer", "count": 14},
            {"name": "URMASendToken", "count": 14},
            {"name": "SelfCopyToken", "count": 4},
            {"name": "CalCumSum", "count": 16},
        ],
    },
    "shape.route": "random",
    "kernel.name": "elastic_dispatch*",
    "kernel.roles": [
        {"name": "TokenCopyToBuffer", "count": 20},
        {"name": "URMASendToken", "count": 16},
        {"name": "SelfCopyToken", "count": 4},
        {"name": "CalCumSum", "count": 16},
    ],
    "baseline.dispatch_call": "buffer.dispatch_v2",
    "baseline.topk_key": "topk_ids",
    "timeline.msprof_options": ["--task-time=on"],
    "timeline.detail_ranks": [0, 1],
    "timeline.barrier_kernel": "other_barrier",
    "timeline.known_kernels": {"cached_notify_combine": "the barrier"},
    "timeline.skip_launches": 1,
    "timeline.nodes_per_job": 1,
    "pmu.metrics": ["PipeUtilization", "Memory"],
    "pmu.launch_skip_before_match": 1,
    "pipe_timeline.runs": ["InstrTimeline"],
    "pipe_timeline.instr_timeline_pipe": {
        "pipe_timeline.runs": ["PipeTimeline", "InstrTimeline"],
        "pipe_timeline.instr_timeline_pipe": "vector",
    },
    "pcsampling.metrics": ["PcSampling"],
    "probe.enabled": {"probe.enabled": True, "probe.soc_version": "Ascend910_9391", "probe.command": ["probe"]},
    "probe.command": ["probe", "--small"],
    "probe.soc_version": "Ascend910_9391",
    "probe.kernel_name": "probe_kernel",
    "report.insight_version": "8.0.RC1",
    "hardware.links.intra_node.source": "a datasheet",
    "hardware.links.inter_node.source": "a measured point-to-point rate",
    "debugclock.event_map": "ascend_deepep/lib/other_map.json",
    "debugclock.phase_names": {"CalCumSum": ["init", "counts_sent"]},
    "debugclock.wait_slots": {"CalCumSum": [2]},
    "sim.precision_fail_rank": 1,
    "sim.dead_node": 1,
    "sim.die_rank": 3,
    "sim.die_after_launches": 2,
    "sim.slow_rank": 1,
    "sim.spiky_rank": 1,
    "sim.late_rank": 1,
    "sim.late_rank2": 1,
    "sim.late_node": 1,
    "sim.role_speedup": {"CalCumSum": 1.2},
    "sim.missing_device": {"node": 1, "local_rank": 3},
    "sim.icache_hot_role": "CalCumSum",
    "sim.slow_role": {"rank": 1, "role": "CalCumSum", "factor": 1.3},
    "sim.slow_link": {"src_node": 0, "dst_node": 1, "factor": 1.3},
    "sim.link_gbps": {"intra_node": 20.0, "inter_node": 10.0},
    "sim.clock_offset_us": {"1": 30.0},
    "sim.clock_drift_ppm": {"1": 5.0},
    "sim.poll_pipe_share": {"mte2": 0.05},
    "sim.pre_kernels": "plain",
}

# Keys that cannot be changed alone in this test, and why.
NOT_WALKED = {
    "mode": (
        "analyze mode is another DAG (imports instead of collections): test_analyze_mode_reimports_only_changed_inputs"
    ),
    "toolchain": "cann needs the real toolchain on this machine",
    "launcher": "slurm and ssh need a cluster or sshd (tests/workflow/test_slurm.py, test_ssh.py)",
    "experiments": "its values are overlays of the other keys, each walked here",
    "compare": "needs two experiments (tests/workflow/test_dryrun.py)",
    "sweep": "its points are overlays of the other keys, each walked here (tests/workflow/test_sweep.py plans them)",
    "deepep.repo": "a checkout of the repository: the default is the simulator's stand-in",
    "deepep.ref": "a commit of a git repository as deepep.repo: tests/workflow/test_commit_ab.py",
    "pmu.timelines": "kept only to refuse an old config: any value but [] is refused",
    "analyze": "the inputs of analyze mode, unused in collect mode: test_analyze_mode_reimports_only_changed_inputs",
}


def leaves(
    node: dict[str, Any], key: str = "", phase: str | None = None
) -> Iterator[tuple[str, str | None, bool, dict]]:
    """(dotted key, phase, reruns, schema node) of every key that holds a value (sections are walked into)."""
    for name, child in node.get("properties", {}).items():
        dotted = f"{key}.{name}" if key else name
        own = child.get("x-phase", phase)
        if "properties" in child and child.get("default") == {}:  # a section (an object value such as
            yield from leaves(child, dotted, own)  # sim.missing_device is one key)
        else:
            yield dotted, own, bool(child.get("x-reruns", node.get("x-reruns", True))), child


def not_walked(key: str) -> str | None:
    for prefix, why in NOT_WALKED.items():
        if key == prefix or key.startswith(prefix + "."):
            return why
    return None


def get(config: dict, key: str) -> Any:
    for part in key.split("."):
        config = config[part]
    return config


def put(config: dict, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        config = config.setdefault(part, {})
    config[last] = value


def changed_value(key: str, node: dict, current: Any) -> Any:
    """A valid value other than ``current``, from VALUES or from the schema (enum, boolean, number, integer)."""
    if key == "deepep.test_args":
        return [*current, "--seed", "{seed}"]
    if key in VALUES:
        assert VALUES[key] != current, f"VALUES[{key!r}] is the current value"
        return VALUES[key]
    if "$ref" in node:
        node = {**SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]], **node}
    types = node.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "enum" in node:
        return next(v for v in node["enum"] if v != current)
    if "boolean" in types:
        return not current
    if current == "auto" and "integer" in types:
        return 29400
    if "integer" in types or "number" in types:
        step = 1 if "integer" in types else 0.05
        base = (
            current if isinstance(current, (int, float)) and not isinstance(current, bool) else node.get("minimum", 1)
        )
        up = base + step if current is not None else base
        if up > node.get("maximum", float("inf")):
            return base - step
        return up
    raise AssertionError(f"{key}: no changed value known; add one to VALUES (or a reason to NOT_WALKED)")


def overlay_with(base: dict, key: str, value: Any) -> dict:
    changed = copy.deepcopy(base)
    for k, v in value.items() if isinstance(value, dict) and key in value else [(key, value)]:
        put(changed, k, v)
    return changed


@contextlib.contextmanager
def chdir(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


class Refused(Exception):
    """The workflow refused the configuration (common.smk's refuse: a message, exit 1)."""


class Planner:
    """Dry runs of one workflow copy in this process: what `snakemake -n` plans, and which jobs' params changed."""

    def __init__(self, copy_: WorkflowCopy):
        self.copy = copy_

    def plan(self, overlay: dict) -> tuple[list[str], set[str]]:
        from snakemake.api import SnakemakeApi
        from snakemake.settings.types import (
            ConfigSettings,
            DAGSettings,
            DeploymentSettings,
            OutputSettings,
            ResourceSettings,
            StorageSettings,
            WorkflowSettings,
        )

        path = self.copy.overlay(overlay, "walk.yaml")
        refusal = io.StringIO()
        with (
            chdir(self.copy.root),
            contextlib.redirect_stderr(refusal),
            SnakemakeApi(OutputSettings(quiet={"all"})) as api,
        ):
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=2, resources={"npu_cluster": 1}),
                config_settings=ConfigSettings(configfiles=[self.copy.root / "config" / "config.yaml", path]),
                storage_settings=StorageSettings(),
                workflow_settings=WorkflowSettings(),
                deployment_settings=DeploymentSettings(),
                snakefile=self.copy.root / "Snakefile",
                workdir=self.copy.root,
            )
            try:
                workflow_api.dag(DAGSettings())
            except SystemExit as exit_:
                raise Refused(refusal.getvalue().strip()) from exit_
            workflow = workflow_api._workflow
            workflow._prepare_dag(forceall=False, ignore_incomplete=True, lock_warn_only=True)
            workflow._build_dag()
            dag = workflow.dag
            planned = sorted(job.rule.name for job in dag.needrun_jobs())
            changed = {job.rule.name for job in dag.jobs if workflow.persistence.params_changed(job)}
        return planned, changed


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[WorkflowCopy, dict]:
    """One complete run of the default demo with the short run settings, every stage."""
    copy_ = copy_workflow(tmp_path_factory.mktemp("phases") / "wf")
    overlay = base_overlay()
    result = copy_.snakemake(overlay=overlay, env=recording(copy_))
    assert result.returncode == 0, result.stderr[-3000:]
    return copy_, overlay


def recording(copy_: WorkflowCopy) -> dict:
    """The environment of a run whose jobs write the config keys
    their scripts read (dispatchprof.shell.config_reads)."""
    return without_slurm_probe({**os.environ, READS_ENV: str(reads_dir(copy_))})


def reads_dir(copy_: WorkflowCopy) -> Path:
    return copy_.root.parent / "config_reads"


def read_problems(folder: Path) -> tuple[list[str], set[str]]:
    """Per rule that ran: the keys its script read outside its row of RULE_KEYS (x-reruns: false keys, the run's
    name and the gaps listed in UNFINGERPRINTED_READS aside), a rule that read keys with neither a row nor a reason
    in NO_FINGERPRINT, and a listed gap no longer read (the list only shrinks)."""
    reads: dict[str, set[str]] = {}
    for path in folder.glob("*.json"):
        record = json.loads(path.read_text())
        reads.setdefault(row_of(record["rule"]), set()).update(record["keys"])
    allowed = ["experiment", *(key for key, _, reruns, _ in leaves(SCHEMA) if not reruns)]
    problems = []
    for rule, keys in sorted(reads.items()):
        if rule not in RULE_KEYS:
            if rule not in NO_FINGERPRINT:
                problems.append(
                    f"{rule}: reads {sorted(keys)} and has no row in RULE_KEYS (nor a reason in NO_FINGERPRINT)"
                )
            continue
        gaps = UNFINGERPRINTED_READS.get(rule, {})
        outside = outside_row(keys, [*RULE_KEYS[rule], *gaps], allowed)
        if outside:
            problems.append(
                f"{rule}: its script reads {outside}, not in its row of RULE_KEYS: a change would not rerun it"
            )
        stale = sorted(gap for gap in gaps if not any(key == gap or key.startswith(gap + ".") for key in keys))
        if stale:
            problems.append(f"{rule}: UNFINGERPRINTED_READS lists {stale}, which it no longer reads: remove them")
    return problems, set(reads)


def test_every_schema_key_has_a_phase() -> None:
    assert phase_problems(SCHEMA) == []
    assert all(phase in ("collection", "analysis") for _, phase, _, _ in leaves(SCHEMA))


def test_a_key_without_a_phase_is_named() -> None:
    schema = {
        "properties": {
            "a": {"x-phase": "analysis", "properties": {"b": {}}},
            "c": {"properties": {"d": {"x-phase": "collection"}, "e": {"type": "integer"}}},
        }
    }
    assert phase_problems(schema) == [
        "c.e: no x-phase (collection or analysis), on the key or on the section that holds it"
    ]
    schema["properties"]["a"]["properties"]["b"]["x-phase"] = "analysis"
    assert any(p.startswith("a: marked x-phase and so are keys inside it") for p in phase_problems(schema))


def test_each_key_plans_its_phase(complete_run: tuple[WorkflowCopy, dict]) -> None:
    """The walk: per key, one dry run after the complete run, with that key changed."""
    copy_, overlay = complete_run
    planner = Planner(copy_)
    assert planner.plan(overlay) == ([], set()), "the complete run left jobs to do"
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for key, value in [(k, v) for k, v in _flatten(overlay)]:
        put(config, key, value)
    fill_defaults(config, SCHEMA)
    problems, walked = [], 0
    for key, phase, reruns, node in leaves(SCHEMA):
        if not_walked(key):
            continue
        value = changed_value(key, node, get(config, key))
        try:
            planned, changed = planner.plan(overlay_with(overlay, key, value))
        except Refused as refused:
            problems.append(f"{key}: {value!r} refused: {refused}")
            continue
        walked += 1
        collections = sorted({name for name in planned if is_collection_rule(name)})
        missed = sorted(changed - set(planned))
        if missed:
            problems.append(f"{key}: params changed but not planned: {missed}")
        if not reruns:
            if planned:
                problems.append(f"{key} (x-reruns: false) plans {planned}")
        elif phase == "analysis":
            if collections or any(is_collection_rule(name) for name in changed):
                problems.append(f"{key} (analysis) plans collection {collections}, params changed: {sorted(changed)}")
            if not (set(planned) - {"report", "all"} or key.startswith("report.")):  # the report lists every key
                problems.append(f"{key} (analysis) plans no analysis: no rule fingerprints it")
        elif not collections:
            problems.append(f"{key} (collection) plans no collection: {planned}")
    assert not problems, "\n".join(problems)
    assert walked > 120


def test_each_script_reads_only_its_rule_keys(complete_run: tuple[WorkflowCopy, dict]) -> None:
    """RULE_KEYS against what the scripts of a complete run read (every stage of collect mode)."""
    copy_, _ = complete_run
    problems, ran = read_problems(reads_dir(copy_))
    assert not problems, "\n".join(problems)
    assert {
        "env_capture_node",
        "correctness",
        "baseline_collect",
        "timeline_collect",
        "timeline_parse",
        "pmu",
        "report",
    } <= ran


def test_a_read_outside_the_row_fails_the_check(tmp_path: Path) -> None:
    (tmp_path / "pmu.1.2.json").write_text(
        json.dumps({"rule": "pmu", "keys": ["pmu.metrics", "timeline.waits.own_work_min_us", "timeouts.pmu"]})
    )
    (tmp_path / "newrule.1.2.json").write_text(json.dumps({"rule": "newrule", "keys": ["mode"]}))
    problems, _ = read_problems(tmp_path)
    assert problems == [
        "newrule: reads ['mode'] and has no row in RULE_KEYS (nor a reason in NO_FINGERPRINT)",
        "pmu: its script reads ['timeline.waits.own_work_min_us'], "
        "not in its row of RULE_KEYS: a change would not rerun it",
    ]


def _flatten(overlay: dict, key: str = "") -> Iterator[tuple[str, Any]]:
    for name, value in overlay.items():
        dotted = f"{key}.{name}" if key else name
        if isinstance(value, dict):
            yield from _flatten(value, dotted)
        else:
            yield dotted, value


ACCEPTANCE = {  # issue 30: the analysis jobs planned, and no collection
    "pmu.busiest_min_excess": {"pmu", "report"},
    "timeline.waits.own_work_min_us": {"timeline", "report"},
    "stats.bootstrap.resamples": {"baseline", "report"},
    "debugclock.busiest_min_excess": {"debugclock", "report"},
    "report.insight_version": {"report"},
    "kernel.roles": {"pmu", "pipe_timeline", "debugclock", "report"},
}


@pytest.mark.parametrize("key", sorted(ACCEPTANCE))
def test_an_analysis_change_reanalyses_without_collecting(complete_run: tuple[WorkflowCopy, dict], key: str) -> None:
    copy_, overlay = complete_run
    config = copy.deepcopy(overlay)
    full = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    fill_defaults(full, SCHEMA)
    current = get(full, key)
    node = next(n for k, _, _, n in leaves(SCHEMA) if k == key)
    planned, _ = Planner(copy_).plan(overlay_with(config, key, changed_value(key, node, current)))
    assert not [name for name in planned if is_collection_rule(name)]
    assert ACCEPTANCE[key] <= set(planned)


@pytest.mark.parametrize(
    "key, value, collected",
    [
        ("shape.num_tokens", 128, "correctness"),
        ("pmu.metrics", ["PipeUtilization", "Memory"], "pmu_collect"),
        # the perf driver's environment: without the barrier kernel the timeline measures another thing
        ("baseline.synchronize_start", False, "timeline_collect"),
        ("kernel.clock_hz", 50_000_000, "baseline_collect"),
    ],
)
def test_a_collection_change_collects(
    complete_run: tuple[WorkflowCopy, dict], key: str, value: Any, collected: str
) -> None:
    copy_, overlay = complete_run
    planned, _ = Planner(copy_).plan(overlay_with(overlay, key, value))
    assert collected in planned


def test_a_new_kernel_name_from_the_timeline_recollects_the_op_profiler_stages(
    complete_run: tuple[WorkflowCopy, dict],
) -> None:
    """pmu_collect, pcsampling_collect and pipe_timeline_collect replay the kernel the timeline found: the name is a
    param, so a timeline that finds another name re-collects them (and a re-analysis that finds the same does not)."""
    copy_, overlay = complete_run
    stats_path = copy_.root / "results" / "baseline" / "timeline" / "stats.json"
    before, stat = stats_path.read_text(), stats_path.stat()
    stats = json.loads(before)
    assert stats["kernel_name"].split(",")[0] == "elastic_dispatch_kernel"
    try:
        stats_path.write_text(json.dumps({**stats, "kernel_name": "elastic_dispatch_kernel_v2"}))
        planned, _ = Planner(copy_).plan(overlay)
    finally:
        stats_path.write_text(before)
        os.utime(stats_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert {"pmu_collect", "pcsampling_collect", "pipe_timeline_collect"} <= set(planned)
    assert not {"timeline_collect", "baseline_collect", "correctness", "build", "env_capture_node"} & set(planned)


def test_a_collection_skipped_for_its_upstream_collects_once_that_is_ok(workflow_copy: WorkflowCopy) -> None:
    """The stale placeholder: pmu_collect wrote `skipped` because the timeline was invalid (a rank's device data
    missing, below stats.min_rank_coverage); an analysis change makes the timeline ok, and the same `snakemake`
    collects PMU, without collecting anything before it."""
    overlay = base_overlay(
        sim={"missing_device": {"node": 1, "local_rank": 3}},
        stats={"min_rank_coverage": 1.0},
        pipe_timeline={"runs": []},
        debugclock={"when": "never"},
    )
    first = workflow_copy.snakemake(overlay=overlay)
    assert_ended_by_fail_on(first, "baseline/timeline is invalid")
    assert workflow_copy.status("timeline")["state"] == "invalid"
    assert workflow_copy.status("pmu/collect")["state"] == "skipped"

    overlay["stats"]["min_rank_coverage"] = 0.5
    planner = Planner(workflow_copy)
    planned, _ = planner.plan(overlay)
    assert {"timeline", "pmu_collect", "pmu", "pcsampling_collect"} <= set(planned)
    assert not {"env_capture_node", "build", "correctness", "baseline_collect", "timeline_collect"} & set(planned)
    second = workflow_copy.snakemake(overlay=overlay)
    assert second.returncode == 0, second.stderr[-3000:]
    assert workflow_copy.status("timeline")["state"] == "ok"
    assert workflow_copy.status("pmu/collect")["state"] == "ok"
    assert workflow_copy.status("pmu")["state"] == "ok"
    assert planner.plan(overlay) == ([], set())


def test_analyze_mode_reimports_only_changed_inputs(workflow_copy: WorkflowCopy, tmp_path: Path) -> None:
    """Analyze mode: an analysis key's change re-analyses without re-reading the user's files; a change of one
    imported tree re-reads that tree only."""
    from workflow.test_end_to_end import synthetic_timeline

    csv = tmp_path / "dispatch_latency.csv"
    rows = "".join(f"{r},{i},{10 + r},{int(i == 0)},{int(i != 0)}\n" for i in range(3) for r in range(16))
    csv.write_text("rank,iteration,elapsed_us,is_warmup,in_average\n" + rows)
    synthetic_timeline(tmp_path / "timeline")
    overlay = base_overlay(
        mode="analyze", analyze={"latency_csv": str(csv), "timeline_dir": str(tmp_path / "timeline")}
    )
    result = workflow_copy.snakemake(overlay=overlay, env=recording(workflow_copy))
    assert result.returncode == 0, result.stderr[-3000:]
    problems, ran = read_problems(reads_dir(workflow_copy))  # the import rules' and not_provided's rows
    assert not problems, "\n".join(problems)
    assert {"baseline_import", "timeline_import", "not_provided"} <= ran
    planner = Planner(workflow_copy)
    assert planner.plan(overlay) == ([], set())
    for key, value, analysed in [
        ("stats.bootstrap.resamples", 3000, "baseline"),
        ("timeline.waits.own_work_min_us", 7, "timeline"),
        ("report.insight_version", "8.0.RC1", "report"),
    ]:
        planned, _ = planner.plan(overlay_with(overlay, key, value))
        assert analysed in planned, (key, planned)
        assert not [name for name in planned if name.endswith("_import")], (key, planned)
    csv.write_text(csv.read_text() + "1,3,11,0,1\n")  # the user's latency file changes
    planned, _ = planner.plan(overlay)
    assert "baseline_import" in planned and "timeline_import" not in planned, planned
