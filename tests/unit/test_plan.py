"""The dry run's plan of a collect job (tools/plan.py): the command lines the stages build, per node, with what the
nodes decide marked and the environment named, never valued."""

import copy

import yaml

from conftest import ROOT
from dispatchprof.tools import collective
from dispatchprof.tools.plan import planned_commands, planned_env_capture, submit_host_warnings
from dispatchprof.tools.toolchain import resolve

DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def cann_config(tmp_path, **cluster) -> dict:
    config = copy.deepcopy(DEFAULT)
    config.update(toolchain="cann", experiment="exp")
    config["deepep"]["repo"] = str(tmp_path)
    config["cann"]["install_root"] = str(tmp_path / "Ascend")
    config["cluster"].update(cluster)
    return config


def node_lines(plan: str, node: int) -> dict[str, str]:
    block = plan.split(f"  node {node}:\n")[1].split("  node ")[0]
    return dict(line.strip().split(": ", 1) for line in block.splitlines() if ": " in line)


def test_the_timeline_plan_is_msprof_with_its_output_per_node_and_the_nodes_choices_marked(tmp_path):
    config = cann_config(tmp_path, nodes=3)
    plan = planned_commands(config, "timeline_collect", "exp")
    assert plan.count("  node ") == 3
    for node in range(3):
        lines = node_lines(plan, node)
        assert (
            lines["profiler"].startswith("msprof --output=")
            and f"/results/exp/timeline/raw/node{node} " in lines["profiler"]
        )
        assert (
            "<decided on the node: of --task-time=on --ascendcl=on "
            "--runtime-api=on, those the node's msprof --help lists>" in lines["profiler"]
        )
        assert "--application=" in lines["profiler"] and "<decided on the node:" in lines["environment script"]
        assert (
            f"{tmp_path}/Ascend/cann/set_env.sh | {tmp_path}/Ascend/ascend-toolkit/set_env.sh"
            in lines["environment script"]
        )


def test_the_test_line_is_the_stages_own_command_and_variables_are_names_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the stages' paths are relative to the working directory, the plan's too
    config = cann_config(tmp_path, master_port=29500, shmem_port=8399, master_addr="10.0.0.1")
    lines = node_lines(planned_commands(config, "baseline_collect", "exp"), 1)
    assert "profiler" not in lines
    driver, run_dir = tmp_path / "results/exp/baseline/perf_driver.py", tmp_path / "results/exp/baseline/run/deepep"
    assert lines["test"].split() == collective.test_command(
        config, resolve(config), run_dir, "exp_baseline", str(driver)
    )
    names = lines["variables set"].split()
    assert {"RANK", "MASTER_ADDR", "MASTER_PORT", "DISPATCHPROF_OUT", "AKL_LATENCY_CLOCK_HZ"} <= set(names)
    assert "10.0.0.1" not in lines["variables set"] and "29500" not in lines["variables set"]


def test_auto_ports_are_marked_as_decided_when_the_run_starts(tmp_path):
    config = cann_config(tmp_path, master_port="auto", shmem_port="auto")
    test = node_lines(planned_commands(config, "timeline_collect", "exp"), 0)["test"]
    assert "<decided on the node: shmem_port, a free port picked when the run starts>" in test


def test_op_profiler_plans_name_the_kernel_the_metrics_and_the_entry_the_nodes_choose(tmp_path):
    config = cann_config(tmp_path, nodes=2)
    config["pipe_timeline"]["instr_timeline_pipe"] = "mte2|mte3"
    pmu = node_lines(planned_commands(config, "pmu_collect", "exp", kernel="found_kernel"), 1)["profiler"]
    assert pmu.startswith(
        "<decided on the node: `msopprof` or `msprof op`, the entry env capture found> --kernel-name=found_kernel "
    )
    assert "--aic-metrics=" + ",".join(config["pmu"]["metrics"]) in pmu and "pmu/raw/node1" in pmu
    instr = node_lines(planned_commands(config, "pipe_timeline_collect", "exp", kernel="k", kind="instr"), 0)[
        "profiler"
    ]
    assert (
        "--aic-metrics=InstrTimeline" in instr
        and "--instr-timeline-pipe=mte2|mte3" in instr
        and "pipe_timeline/instr/raw/node0" in instr
    )
    pcs = node_lines(planned_commands(config, "pcsampling_collect", "exp"), 0)["profiler"]
    assert (
        "--kernel-name=" + config["kernel"]["name"] in pcs
        and "--aic-metrics=" + ",".join(config["pcsampling"]["metrics"]) in pcs
    )


def test_what_the_submit_host_lacks_is_warned_only_under_cann(tmp_path):
    config = cann_config(tmp_path)
    warnings = submit_host_warnings(config)
    assert [w.split(":")[0] for w in warnings] == ["cann.set_env", "msprof", "deepep"]
    assert all("the nodes may differ" in w for w in warnings)
    (tmp_path / "Ascend" / "cann" / "bin").mkdir(parents=True)
    (tmp_path / "Ascend" / "cann" / "set_env.sh").write_text("")
    (tmp_path / "Ascend" / "cann" / "bin" / "msprof").write_text("")
    test = tmp_path / config["deepep"]["test"]
    test.parent.mkdir(parents=True, exist_ok=True)
    test.write_text("")
    assert submit_host_warnings(config) == []
    assert submit_host_warnings({**config, "toolchain": "sim"}) == []


def test_the_env_capture_plan_lists_the_checks_preflight_will_run_on_that_node(tmp_path):
    config = cann_config(tmp_path, nodes=2, ranks_per_node=4)
    config["preflight"]["expected_mib_per_rank"] = 1024
    config["launcher"] = "ssh"
    plan = planned_env_capture(config, "exp", 1, first_experiment=True)
    assert plan.startswith("plan of env_capture_node (exp) on node 1:")
    checks = [line[4:] for line in plan.splitlines() if line.startswith("  - ")]
    assert any(c.startswith("the test's --help lists deepep.test_args' flags (--ep-size") for c in checks)
    assert any("about 8.0 GiB free" in c and "8 ranks" in c for c in checks)  # 8 ranks x 1024 MiB
    assert any(c.startswith("CANN set_env.sh exists: the first of") for c in checks)
    assert any("filesystem every node shares" in c for c in checks)  # ssh: the token check
    assert not any(c.startswith("ports free") for c in checks)  # ports are node 0's check
    config["launcher"], config["toolchain"] = "local", "sim"
    local = planned_env_capture(config, "exp", 0, first_experiment=True)
    assert "set_env" not in local and "every node shares" not in local
