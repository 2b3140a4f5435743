"""Preflight on a node: every problem that would fail a collective stage after its allocation, listed at once."""

import json
import socket
import sys
from pathlib import Path

from dispatchprof.node.preflight import flags_of, missing_flags, run_checks
from dispatchprof.tools.preflight_plan import node_spec, profiler_findings
from dispatchprof.tools.toolchain import Toolchain

FAKE_TEST = """
import argparse
p = argparse.ArgumentParser()
for flag in ("--ep-size", "--route", "--router-mode", "--log-dir"):
    p.add_argument(flag)
p.parse_args()
"""


def spec(tmp_path: Path, **overrides) -> dict:
    script = tmp_path / "fake_test.py"
    script.write_text(FAKE_TEST)
    base = {
        "node": 0,
        "timeout_s": 30,
        "test_help": {"argv": [sys.executable, str(script), "--help"], "cwd": str(tmp_path), "env": None},
        "flags": ["--ep-size", "--route", "--log-dir"],
        "set_env": None,
        "disk": {"path": str(tmp_path / "results"), "need_bytes": 1, "what": "test"},
        "ports": [],
        "shared_token": None,
    }
    base.update(overrides)
    return base


def failed(findings):
    return {f["check"]: f["detail"] for f in findings if not f["ok"]}


def test_flags_are_read_from_the_argument_list_and_matched_as_whole_words():
    assert flags_of(["--ep-size", "{x}", "--shmem-ip-port", "tcp://h:1", "--route=a", "-v", "--route"]) == [
        "--ep-size",
        "--shmem-ip-port",
        "--route",
    ]
    assert missing_flags(["--route", "--seed"], "  --router ROUTER\n  --seed-value N\n") == ["--route", "--seed"]
    assert missing_flags(["--route"], "usage: t [--route ROUTE]") == []


def test_a_clean_node_passes_every_check(tmp_path):
    findings = run_checks(spec(tmp_path), environ={})
    assert failed(findings) == {} and len(findings) == 2


def test_every_problem_is_listed_with_what_was_expected(tmp_path):
    with socket.socket() as held:
        held.bind(("", 0))
        held.listen()
        port = held.getsockname()[1]
        findings = run_checks(
            spec(
                tmp_path,
                flags=["--ep-size", "--seed"],
                set_env=str(tmp_path / "Ascend" / "set_env.sh"),
                disk={"path": str(tmp_path / "results"), "need_bytes": 2**60, "what": "16 ranks"},
                ports=[port],
                shared_token=str(tmp_path / "token.json"),
            ),
            environ={"AKL_LATENCY_OUTPUT_DIR": "/elsewhere"},
        )
    problems = failed(findings)
    assert "--seed (deepep.test_args)" in problems["deepep.test_args flags in the test's --help"]
    assert "set_env.sh does not exist (cann.set_env)" in problems["CANN set_env.sh"]
    assert "need about 1073741824.0 GiB" in problems["disk space"]
    assert "in use" in problems[f"port {port} free on node 0"]
    assert "not visible here" in problems["results/ on a shared filesystem"]
    assert "/elsewhere" in problems["environment AKL_LATENCY_OUTPUT_DIR"]


def test_a_test_that_cannot_print_its_help_is_a_problem_not_a_crash(tmp_path):
    broken = spec(
        tmp_path,
        test_help={"argv": [sys.executable, "-c", "import sys; sys.exit('no torch_npu')"], "cwd": None, "env": None},
    )
    assert "exit 1" in failed(run_checks(broken, environ={}))["test --help"]
    absent = spec(tmp_path, test_help={"argv": [str(tmp_path / "nope")], "cwd": None, "env": None})
    assert "could not start" in failed(run_checks(absent, environ={}))["test --help"]


def test_the_script_runs_alone_as_it_does_over_ssh(tmp_path):
    import subprocess

    from dispatchprof.node import preflight

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec(tmp_path, flags=["--nope"])))
    out = subprocess.run(
        [sys.executable, preflight.__file__, str(spec_file)], capture_output=True, text=True, env={}, check=True
    ).stdout
    assert failed(json.loads(out)) == {
        "deepep.test_args flags in the test's --help": (
            f"not in `{sys.executable} {tmp_path / 'fake_test.py'} --help`: --nope (deepep.test_args)"
        )
    }


def config(launcher="local", master_port="auto", shmem_port="auto"):
    return {
        "launcher": launcher,
        "cluster": {"nodes": 2, "ranks_per_node": 8, "master_port": master_port, "shmem_port": shmem_port},
        "deepep": {
            "python": "python3",
            "test": "t.py",
            "test_args": ["--ep-size", "{ranks_per_node}", "--seed", "{seed}"],
        },
        "preflight": {"expected_mib_per_rank": 100},
        "kernel": {"name": "elastic_dispatch_kernel"},
        "pmu": {
            "metrics": ["PipeUtilization"],
            "timelines": [],
            "launch_count": 1,
            "warm_up": 0,
            "launch_skip_before_match": None,
        },
    }


def test_the_plan_checks_node_zeros_fixed_ports_and_the_expected_disk_space(tmp_path):
    chain = Toolchain("cann", tmp_path, tmp_path, set_env="/opt/set_env.sh")
    auto = node_spec(config(), chain, 0, tmp_path, None, 10, check_ports=True)
    assert auto["ports"] == [] and auto["flags"] == ["--ep-size", "--seed"] and auto["set_env"] == ["/opt/set_env.sh"]
    assert auto["disk"]["need_bytes"] == 16 * 100 * 2**20
    assert node_spec(config(master_port=4000), chain, 0, tmp_path, None, 10, check_ports=True)["ports"] == [4000]
    assert node_spec(config("slurm"), chain, 0, tmp_path, None, 10, check_ports=True)["ports"] == [29520, 8399]
    assert node_spec(config("slurm"), chain, 1, tmp_path, None, 10, check_ports=True)["ports"] == []
    assert node_spec(config("slurm"), chain, 0, tmp_path, None, 10, check_ports=False)["ports"] == []


def help_capture(tmp_path, msopprof_help: str) -> dict:
    """An env capture whose msprof and msopprof --help outputs are files under tmp_path."""
    (tmp_path / "msprof.txt").write_text('msprof [options] --application="<app>"\n  --output=<path>\n')
    (tmp_path / "msopprof.txt").write_text(msopprof_help)
    return {
        "op_profiler_entry": "msopprof",
        "probes": {
            "msprof_help": {"available": True, "output_file": str(tmp_path / "msprof.txt")},
            "msopprof_help": {"available": True, "output_file": str(tmp_path / "msopprof.txt")},
        },
    }


def test_profiler_options_are_checked_against_the_captured_help(tmp_path):
    capture = help_capture(tmp_path, "  --kernel-name=<n>\n  --aic-metrics=<m>\n  --output=<p>\n  --warm-up=<n>\n")
    findings = profiler_findings(config(), capture)
    assert failed(findings) == {"msopprof options in its --help": "not in `msopprof --help`: --launch-count"}


def test_the_instr_timeline_pipe_option_is_checked_only_when_instr_timeline_runs(tmp_path):
    capture = help_capture(
        tmp_path, "  --kernel-name=<n>\n  --aic-metrics=<m>\n  --output=<p>\n  --warm-up=<n>\n  --launch-count=<n>\n"
    )
    instr = {
        **config(),
        "pipe_timeline": {"runs": ["PipeTimeline", "InstrTimeline"], "instr_timeline_pipe": "mte2|vector"},
    }
    assert failed(profiler_findings(instr, capture)) == {
        "msopprof options in its --help": "not in `msopprof --help`: --instr-timeline-pipe"
    }
    pipe_only = {**config(), "pipe_timeline": {"runs": ["PipeTimeline"], "instr_timeline_pipe": None}}
    assert failed(profiler_findings(pipe_only, capture)) == {}


def test_preflight_writes_where_every_stage_will_write_and_names_what_it_cannot(tmp_path):
    from dispatchprof.node.preflight import run_checks
    from dispatchprof.tools.preflight_plan import write_dirs

    results = tmp_path / "results"
    (results / "baseline" / "timeline" / "raw" / "node0" / "deep").mkdir(parents=True)
    dirs = write_dirs(results)
    assert dirs == [
        str(results),
        *(str(results / p) for p in ("baseline", "baseline/timeline", "baseline/timeline/raw")),
    ]
    ok = [f for f in run_checks({"write_dirs": dirs}) if f["check"] == "results/ writable"]
    assert ok == [
        {"check": "results/ writable", "ok": True, "detail": "a file was written and removed in each of 4 directories"}
    ]
    assert sorted(p.name for p in (results / "baseline").iterdir()) == ["timeline"]  # the probe files are gone
    # A directory that cannot take a file (the tests run as root, for whom permissions do not count: a file in the way)
    (results / "baseline" / "pmu").write_text("")
    bad = [
        f
        for f in run_checks({"write_dirs": [*dirs, str(results / "baseline" / "pmu")]})
        if f["check"] == "results/ writable"
    ]
    assert bad[0]["ok"] is False and bad[0]["detail"].startswith(f"cannot write in {results / 'baseline' / 'pmu'}: "), (
        bad
    )
