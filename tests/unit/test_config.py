import copy
import json
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from conftest import ROOT
from dispatchprof.shell.config import (
    ConfigError,
    check_config,
    experiment_problems,
    is_plain_host,
    render_args,
    schema_problems,
    yaml_booleans_as_words,
)

SCHEMA_PATH = ROOT / "workflow" / "schemas" / "config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text())
DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def merged(overlay: dict) -> dict:
    config = copy.deepcopy(DEFAULT)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key].update(value)
        else:
            config[key] = value
    return config


def problems(overlay: dict, workdir: Path = Path("/tmp")) -> list[str]:
    config = merged(overlay)
    found = schema_problems(config, SCHEMA)
    if found:
        return found
    validate(config, str(SCHEMA_PATH), set_default=True)
    return check_config(config, workdir, [config["experiment"]])


def test_default_config_is_accepted():
    assert problems({}) == []


def test_an_empty_config_gets_every_default_from_the_schema():
    config: dict = {}
    assert schema_problems(config, SCHEMA) == []
    validate(config, str(SCHEMA_PATH), set_default=True)
    assert config["cluster"]["nodes"] == 2 and config["timeouts"]["pmu"] == 1800
    assert sum(r["count"] for r in config["kernel"]["roles"]) == config["shape"]["num_aiv"]


@pytest.mark.parametrize(
    "overlay,expected",
    [
        (
            {"shape": {"num_experts": 100}},
            "shape.num_experts (100) must be divisible by cluster.nodes x cluster.ranks_per_node (2 x 8 = 16)",
        ),
        ({"shape": {"num_aiv": 80}}, "shape.num_aiv (80) is out of range"),
        ({"kernel": {"roles": [{"name": "A", "count": 10}]}}, "kernel.roles counts sum to 10 but shape.num_aiv is 56"),
        ({"kernel": {"name": "elastic-dispatch"}}, "kernel.name ('elastic-dispatch') must match ^[A-Za-z0-9_*]+$"),
        ({"cluster": {"hosts": ["node0", "x; rm -rf /"]}}, "cluster.hosts[1] ('x; rm -rf /') is not a plain hostname"),
        ({"cluster": {"master_port": 70000}}, "cluster.master_port: 70000 is greater than the maximum of 65535"),
        ({"cluster": {"shmem_port": 0}}, "cluster.shmem_port: 0 is less than the minimum of 1"),
        (
            {"cluster": {"infer_rank": "sorted"}},
            "cluster.infer_rank: 'sorted' is not one of ['device_id', 'device_order']",
        ),
        ({"stats": {"min_rank_coverage": 0}}, "stats.min_rank_coverage: 0 is less than or equal to the minimum of 0"),
        ({"surprise": 1}, "unknown key(s) ['surprise']"),
        ({"shape": {"hiden": 7168}}, "shape: unknown key(s) ['hiden']"),
        ({"timeouts": {"pmu": 0}}, "timeouts.pmu: 0 is less than or equal to the minimum of 0"),
        ({"launcher": "ssh"}, "launcher: ssh needs cluster.hosts with one host per node"),
        ({"ssh": {"options": ["ProxyCommand=nc %h"]}}, "ssh.options.0:"),
        ({"deepep": {"pass_pattern": "PASSED rank \\d+"}}, "deepep.pass_pattern must have a named group (?P<rank>"),
        ({"deepep": {"test_args": ["--x", "{nonsense}"]}}, "deepep.test_args: unknown placeholder {nonsense}"),
        ({"sim": {"precision_fail_rank": 16}}, "sim.precision_fail_rank (16) must be below the number of ranks (16)"),
        ({"sim": {"die_rank": 16}}, "sim.die_rank (16) must be below the number of ranks (16)"),
        ({"timeline": {"detail_ranks": [3, 16]}}, "timeline.detail_ranks: [16] outside the cluster's 16 ranks (0..15)"),
        ({"timeline": {"nodes_per_job": 0}}, "timeline.nodes_per_job: 0 is less than the minimum of 1"),
        ({"timeline": {"crosscheck": "yes"}}, "timeline.crosscheck: 'yes' is not one of ['auto', 'off']"),
        ({"sim": {"late_rank": 16}}, "sim.late_rank (16) must be below the number of ranks (16)"),
        ({"sim": {"late_node": 2}}, "sim.late_node (2) must be below cluster.nodes (2)"),
        ({"sim": {"late_prob": 1.5}}, "sim.late_prob: 1.5 is greater than the maximum of 1"),
        ({"sim": {"late_rank2": 16}}, "sim.late_rank2 (16) must be below the number of ranks (16)"),
        ({"sim": {"late_prob2": 1.5}}, "sim.late_prob2: 1.5 is greater than the maximum of 1"),
        ({"sim": {"late_us2": -1}}, "sim.late_us2: -1 is less than the minimum of 0"),
        ({"sim": {"slow_role": {"rank": 3, "role": "Send", "factor": 2}}}, "sim.slow_role.role: 'Send' is not one of"),
        (
            {"sim": {"slow_role": {"rank": 30, "role": "CalCumSum", "factor": 2}}},
            "sim.slow_role.rank (30) must be below the number of ranks (16)",
        ),
        ({"sim": {"slow_role": {"rank": 3, "role": "CalCumSum"}}}, "sim.slow_role: 'factor' is a required property"),
        (
            {"sim": {"slow_link": {"src_node": 0, "dst_node": 5, "factor": 2}}},
            "names a node outside the cluster's 2 nodes (0..1)",
        ),
        ({"sim": {"clock_offset_us": {7: 100}}}, "sim.clock_offset_us: nodes [7] are outside the cluster's 2 nodes"),
        ({"sim": {"clock_drift_ppm": {"one": 5}}}, "sim.clock_drift_ppm: 'one' does not match"),
        # Before: any name was accepted, collected by msopprof and
        # never read (the pmu stage parsed PipeUtilization only).
        (
            {"pmu": {"metrics": ["PipeUtilization", "Occupancy"]}},
            "pmu.metrics.1: 'Occupancy' is not one of ['PipeUtilization', 'ArithmeticUtilization',",
        ),
        ({"pmu": {"metrics": ["Memory"]}}, "pmu.metrics (['Memory']) must include PipeUtilization or Default"),
        ({"pmu": {"launch_count": 3, "iterations": 2}}, "pmu.launch_count (3) exceeds pmu.iterations (2)"),
    ],
)
def test_refusals_name_the_key_and_the_rule(overlay, expected):
    found = problems(overlay)
    assert any(expected in p for p in found), found


def test_an_analyze_path_that_does_not_exist_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "prof").mkdir()
    found = problems(
        {"mode": "analyze", "analyze": {"timeline_dir": "prof", "pmu_dir": str(tmp_path / "nowhere")}}, workdir=tmp_path
    )
    assert found == [
        f"analyze.pmu_dir: {tmp_path / 'nowhere'} does not exist (relative paths are read from {tmp_path})"
    ]
    (tmp_path / "a.csv").write_text("")
    assert (
        "is a file; expected a directory"
        in problems({"mode": "analyze", "analyze": {"timeline_dir": "a.csv"}}, workdir=tmp_path)[0]
    )


def test_collect_only_checks_do_not_refuse_an_analyze_run_of_someone_elses_data():
    collect_only = {
        "shape": {"num_experts": 100},
        "sim": {"precision_fail_rank": 99},
        "baseline": {"iterations": 5, "warmup": 10},
    }
    assert any("num_experts" in p for p in problems(collect_only))
    assert problems({**collect_only, "mode": "analyze"}) == []
    # what the analysis itself uses is still checked
    assert any(
        "kernel.roles counts" in p
        for p in problems({"mode": "analyze", "kernel": {"roles": [{"name": "A", "count": 10}]}})
    )


def test_the_collective_knobs_are_accepted_and_reach_the_simulated_cluster():
    from dispatchprof.tools.toolchain import resolve

    overlay = {
        "sim": {
            "late_rank": 5,
            "late_us": 80,
            "late_rank2": 11,
            "late_us2": 120,
            "late_prob2": 0.15,
            "slow_role": {"rank": 3, "role": "LocalWindowCopy", "factor": 1.5},
            "slow_link": {"src_node": 0, "dst_node": 1, "factor": 2.0},
            "clock_offset_us": {1: 2500},
            "clock_drift_ppm": {"1": 20},
            "poll_pipe_share": {"scalar": 0.1, "vec": 0.05},
            "pre_kernels": "collective",
        }
    }
    assert problems(overlay) == []
    config = merged(overlay)
    validate(config, str(SCHEMA_PATH), set_default=True)
    env = resolve(config, ROOT).sim_env
    assert env["DEEPEP_SIM_SLOW_ROLE"] == "rank=3,role=LocalWindowCopy,factor=1.5"
    assert env["DEEPEP_SIM_SLOW_LINK"] == "src_node=0,dst_node=1,factor=2.0"
    assert env["DEEPEP_SIM_CLOCK_OFFSET_US"] == "1=2500" and env["DEEPEP_SIM_CLOCK_DRIFT_PPM"] == "1=20"
    assert env["DEEPEP_SIM_LATE_RANK"] == "5" and env["DEEPEP_SIM_LATE_US"] == "80"
    assert (
        env["DEEPEP_SIM_LATE_RANK2"] == "11"
        and env["DEEPEP_SIM_LATE_US2"] == "120"
        and env["DEEPEP_SIM_LATE_PROB2"] == "0.15"
    )
    assert env["DEEPEP_SIM_POLL_PIPE_SHARE"] == "scalar=0.1,vec=0.05" and env["DEEPEP_SIM_PRE_KERNELS"] == "collective"
    assert problems({"sim": {"pre_kernels": "layout"}})
    assert problems({"sim": {"poll_pipe_share": {"cube": 0.1}}}) and problems(
        {"sim": {"poll_pipe_share": {"vec": 1.5}}}
    )


def test_a_knob_set_to_zero_reaches_the_stand_in_and_an_unset_one_does_not():
    # rank 0, node 0 and a probability or lateness of 0 are values: dropped, the stand-in's defaults (late_us 50,
    # late_prob 1.0) would act in every launch instead
    from dispatchprof.tools.toolchain import resolve

    config = merged({"sim": {"late_rank": 0, "late_us": 0, "late_prob": 0, "slow_rank": 0, "late_node": 0}})
    validate(config, str(SCHEMA_PATH), set_default=True)
    env = resolve(config, ROOT).sim_env
    assert (
        env["DEEPEP_SIM_LATE_RANK"] == "0" and env["DEEPEP_SIM_SLOW_RANK"] == "0" and env["DEEPEP_SIM_LATE_NODE"] == "0"
    )
    assert float(env["DEEPEP_SIM_LATE_US"]) == 0.0 and float(env["DEEPEP_SIM_LATE_PROB"]) == 0.0
    assert (
        "DEEPEP_SIM_LATE_RANK2" not in env
        and "DEEPEP_SIM_SLOW_ROLE" not in env
        and "DEEPEP_SIM_EXPORT_MISSING" not in env
    )


def test_output_paths_beyond_msopprof_limit_are_refused(tmp_path):
    deep = tmp_path / ("d" * 120) / ("e" * 60)
    found = problems({}, workdir=deep)
    assert any("msopprof refuses --output longer than 200" in p for p in found), found


def test_hosts_must_be_plain_names_or_addresses():
    assert is_plain_host("node-0.cluster.local") and is_plain_host("10.0.0.1") and is_plain_host("::1")
    for bad in ("", "-node", "a b", "x;y", "$(id)", "a" * 64):
        assert not is_plain_host(bad), bad


def test_render_args_fills_placeholders_and_refuses_unknown_ones():
    assert render_args(
        ["--ep-size", "{ranks_per_node}", "tcp://{master_addr}:{shmem_port}"],
        {"ranks_per_node": 8, "master_addr": "h", "shmem_port": 1},
    ) == [
        "--ep-size",
        "8",
        "tcp://h:1",
    ]
    with pytest.raises(ConfigError, match="unknown placeholder"):
        render_args(["{nope}"], {})


def test_an_experiment_cannot_change_the_timeline_job_graph():
    config = merged({"experiments": {"a": {}, "b": {"timeline": {"nodes_per_job": 2}}}, "compare": [["a", "b"]]})
    found = experiment_problems(config, SCHEMA)
    assert any("experiments.b: timeline.nodes_per_job cannot be overridden" in p for p in found), found


def test_yaml_booleans_are_read_as_the_documented_on_off_words():
    # Unquoted, YAML 1.1 reads these as booleans: before, "False is not of type 'string'".
    config = merged(
        yaml.safe_load("timeline: {crosscheck: off}\ndeepep: {build_env: {DEBUG_CLOCK_ON: OFF, DEVICE_DEBUG_INFO: on}}")
    )
    config["experiments"] = yaml.safe_load("quiet: {timeline: {crosscheck: no}}")
    assert schema_problems(copy.deepcopy(config), SCHEMA) != []
    changed = yaml_booleans_as_words(config, SCHEMA)
    assert sorted(changed) == [
        "deepep.build_env.DEBUG_CLOCK_ON",
        "deepep.build_env.DEVICE_DEBUG_INFO",
        "experiments.quiet.timeline.crosscheck",
        "timeline.crosscheck",
    ]
    assert config["timeline"]["crosscheck"] == "off"
    assert config["deepep"]["build_env"] == {"DEBUG_CLOCK_ON": "OFF", "DEVICE_DEBUG_INFO": "ON"}
    assert config["experiments"]["quiet"]["timeline"]["crosscheck"] == "off"
    assert schema_problems(config, SCHEMA) == []


def test_a_boolean_where_no_on_off_word_is_documented_is_still_refused():
    config = merged({"shape": {**DEFAULT["shape"], "dtype": True}})
    yaml_booleans_as_words(config, SCHEMA)
    assert any(p.startswith("shape.dtype:") for p in schema_problems(config, SCHEMA))


def schema_keys(node: dict, prefix: list[str]):
    for key, child in (node.get("properties") or {}).items():
        yield prefix + [key], child
        if isinstance(child, dict) and child.get("properties"):
            yield from schema_keys(child, prefix + [key])


def test_config_readme_documents_every_key_and_every_sim_knob():
    # Before: fail_on, start_pattern, clock_hz, the pmu run's keys and others were in the schema but not explained.
    readme = (ROOT / "config" / "README.md").read_text()
    undocumented = []
    for path, child in schema_keys(SCHEMA, []):
        forms = [".".join(path[i:]) for i in range(len(path))]
        named = any(f"`{form}`" in readme for form in forms)
        parent_of_named = bool(child.get("properties")) and any(f"`{form}." in readme for form in forms)
        if not (named or parent_of_named):
            undocumented.append(".".join(path))
    assert undocumented == []
    assert "refused until then" not in readme


def test_the_old_pmu_timelines_key_is_refused_with_a_pointer_to_pipe_timeline_runs():
    found = problems({"pmu": {**DEFAULT["pmu"], "timelines": ["PipeTimeline"]}})
    assert len(found) == 1 and "pmu.timelines" in found[0] and "pipe_timeline.runs" in found[0]
    assert problems({"pmu": {**DEFAULT["pmu"], "timelines": []}}) == []  # the old default still loads


@pytest.mark.parametrize("pipes", ["mte2|mte3|vector", "cube", "fixp|mte1"])
def test_instr_timeline_pipe_accepts_the_documented_pipes(pipes):
    assert problems({"pipe_timeline": {"runs": ["InstrTimeline"], "instr_timeline_pipe": pipes}}) == []


@pytest.mark.parametrize("pipes", ["scalar", "mte2,mte3", "MTE2", "mte2|", ""])
def test_instr_timeline_pipe_refuses_anything_else_by_key(pipes):
    found = problems({"pipe_timeline": {"runs": ["InstrTimeline"], "instr_timeline_pipe": pipes}})
    assert found and all(p.startswith("pipe_timeline.instr_timeline_pipe") for p in found)


def test_instr_timeline_pipe_without_an_instr_timeline_run_is_refused():
    found = problems({"pipe_timeline": {"runs": ["PipeTimeline"], "instr_timeline_pipe": "mte2"}})
    assert found == [
        "pipe_timeline.instr_timeline_pipe is set but pipe_timeline.runs has no "
        "InstrTimeline (msopprof accepts --instr-timeline-pipe only with InstrTimeline)"
    ]


def test_a_missing_pipe_timeline_dir_is_refused_before_anything_runs(tmp_path):
    found = problems({"mode": "analyze", "analyze": {"pipe_timeline_dir": str(tmp_path / "nowhere")}}, workdir=tmp_path)
    assert found == [
        f"analyze.pipe_timeline_dir: {tmp_path / 'nowhere'} does not exist (relative paths are read from {tmp_path})"
    ]


def test_defaults_are_filled_as_snakemakes_validate_fills_them(tmp_path):
    # fill_defaults replaces snakemake.utils.validate(set_default=True) at every Snakemake start: same result, at
    # every depth (a nested section given in part keeps its other defaults), on the schema already loaded
    from snakemake.utils import validate

    from dispatchprof.shell.config import fill_defaults, load_schema

    schema_path = ROOT / "workflow" / "schemas" / "config.schema.yaml"
    given = {**copy.deepcopy(DEFAULT), "timeline": {"iterations": 7}, "pmu": {}}
    del given["cluster"]["ready_timeout"], given["analyze"]
    ours, theirs = copy.deepcopy(given), copy.deepcopy(given)
    fill_defaults(ours, load_schema(schema_path))
    validate(theirs, str(schema_path), set_default=True)
    assert ours == theirs
    assert (
        ours["timeline"]["iterations"] == 7 and ours["cluster"]["ready_timeout"] == DEFAULT["cluster"]["ready_timeout"]
    )
    assert ours["pmu"] == DEFAULT["pmu"]  # an empty section gets every default of its own


def test_filling_defaults_leaves_the_schema_as_it_was():
    # a section left out gets a copy of its default {}, filled in place: the schema's own {} must stay empty, or the
    # next config filled from the same loaded schema (one Snakemake start loads it once) sees the first one's values
    from dispatchprof.shell.config import fill_defaults, load_schema

    schema = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    before = copy.deepcopy(schema)
    config = copy.deepcopy(DEFAULT)
    del config["cluster_lock"], config["pmu"]
    fill_defaults(config, schema)
    assert config["cluster_lock"] == DEFAULT["cluster_lock"] and config["pmu"] == DEFAULT["pmu"]
    assert schema == before


def write_status(results, experiment, stage, source):
    from dispatchprof.shell.status import Status, write_status

    write_status(
        results / experiment / stage / "status.json", Status(stage, experiment, "ok", "ran", "sim", source=source)
    )


def test_a_run_in_the_other_mode_under_an_experiment_that_holds_results_is_refused_naming_them(tmp_path):
    from dispatchprof.shell.config import results_of_other_mode

    results = tmp_path / "results"
    for stage in ("pmu", "baseline", "timeline"):
        write_status(results, "baseline", stage, "collected")
    write_status(results, "shared", "timeline", "import")
    (results / "baseline" / "report").mkdir()
    (results / "baseline" / "report" / "status.json").write_text("{not json")  # unreadable: left to its stage
    analyze = {"baseline": {"mode": "analyze"}, "shared": {"mode": "analyze"}, "fresh": {"mode": "analyze"}}
    [problem] = results_of_other_mode(results, analyze)
    assert (
        problem.startswith("experiment 'baseline':")
        and "holds collect-mode results (baseline, pmu, timeline)" in problem
    )
    assert (
        "e.g. baseline_analyzed, as `experiment:` or as a key of `experiments:`" in problem
        and f"move {results / 'baseline'}/ away" in problem
    )
    repeated = {
        "baseline_r2": {"mode": "analyze", "_experiment": "baseline"}
    }  # repeats: the name to change is the experiment's
    write_status(results, "baseline_r2", "pmu", "collected")
    (results / "baseline_r2" / "timeline").mkdir(parents=True)
    (results / "baseline_r2" / "timeline" / "status.json").write_text(
        json.dumps({"source": "collected"})
    )  # damaged: not counted
    [problem] = results_of_other_mode(results, repeated)
    assert "e.g. baseline_analyzed," in problem and "holds collect-mode results (pmu)" in problem
    [problem] = results_of_other_mode(results, {"shared": {"mode": "collect"}, "baseline": {"mode": "collect"}})
    assert (
        problem.startswith("experiment 'shared':")
        and "analyze-mode results (timeline)" in problem
        and "shared_collected" in problem
    )
    assert results_of_other_mode(tmp_path / "nowhere", analyze) == []


def _default_config() -> dict:
    from dispatchprof.shell.config import fill_defaults

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    fill_defaults(config, SCHEMA)
    return config


def test_phase_view_keeps_the_collection_keys_of_a_section_and_the_named_keys() -> None:
    from dispatchprof.shell.config import phase_view

    config = _default_config()
    view = phase_view(config, SCHEMA, ["pmu", "timeline.waits", "stats.min_rank_coverage"], "collection")
    assert set(view) == {"pmu"}  # timeline.waits and stats are analysis
    assert "busiest_min_excess" not in view["pmu"] and view["pmu"]["metrics"] == config["pmu"]["metrics"]
    analysis = phase_view(config, SCHEMA, ["pmu", "timeline.waits", "stats.min_rank_coverage"], "analysis")
    assert analysis == {
        "pmu": {
            "busiest_min_excess": config["pmu"]["busiest_min_excess"],
            "busiest_alpha": config["pmu"]["busiest_alpha"],
        },
        "timeline.waits": config["timeline"]["waits"],
        "stats.min_rank_coverage": 0.5,
    }


def test_a_collection_job_cannot_read_an_analysis_key() -> None:
    from dispatchprof.shell.config import collection_config

    config = {**_default_config(), "_repeat": 1}
    seen = collection_config(config, SCHEMA)
    assert (
        seen["_repeat"] == 1
        and seen["shape"] == config["shape"]
        and seen["timeline"]["iterations"] == config["timeline"]["iterations"]
    )
    for section, key in [
        ("timeline", "waits"),
        ("pmu", "busiest_min_excess"),
        ("kernel", "roles"),
        ("debugclock", "phase_names"),
    ]:
        with pytest.raises(KeyError):
            seen[section][key]
    assert "stats" not in seen and "report" not in seen


def test_the_report_lists_every_analysis_key_that_changes_a_result() -> None:
    from dispatchprof.shell.config import analysis_settings

    keys = dict(analysis_settings(_default_config(), SCHEMA))
    assert (
        keys["pmu.busiest_min_excess"] == 0.0
        and keys["pmu.busiest_alpha"] == 0.01
        and keys["timeline.waits.own_work_min_us"] == 5
        and keys["stats.bootstrap.resamples"] == 2000
    )
    assert "fail_on" not in keys and "pmu.metrics" not in keys  # x-reruns: false; a collection key
