"""The stand-in `msopprof simulator`: its output parses, and the parsed CACHEMISS counts equal what it wrote
(its own record, sim_truth.json, ground truth for tests only); its refusals."""

import json
import os
import subprocess
import sys

from conftest import ROOT
from dispatchprof.analysis.probe import probe_result
from dispatchprof.formats.simulator import simulator_runs

BIN = ROOT / "workflow" / "sim" / "bin"
PROBE = ROOT / "workflow" / "sim" / "probe" / "descriptor_probe.py"


def run(tmp_path, *opts, knob=None, args=()):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("DEEPEP_SIM_PROBE", None)
    if knob:
        env["DEEPEP_SIM_PROBE"] = knob
    cmd = ["msopprof", "simulator", *opts, f"--output={tmp_path}", sys.executable, str(PROBE), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def test_parsed_cachemiss_counts_equal_the_events_the_stand_in_wrote(tmp_path):
    out = run(
        tmp_path,
        "--soc-version=Ascend950PR_9599",
        "--timeout=1",
        args=("--descriptors", "40", "--cores", "3", "--slow-every", "5"),
    )
    assert out.returncode == 0 and "Profiling results saved in" in out.stdout, out.stdout
    truth = json.loads((tmp_path / "sim_truth.json").read_text())["cachemiss"]
    result = probe_result(simulator_runs(tmp_path), top=100)
    assert result["cachemiss"]["total"] == truth["total"] > 0
    assert result["cachemiss"]["per_core"] == truth["per_core"] and len(truth["per_core"]) == 3
    assert {p["pc"]: p["count"] for p in result["cachemiss"]["top_pcs"]} == truth["per_pc"]
    assert result["cachemiss_agreement"]["summary_trace"] == truth["total"]


def test_a_slow_path_every_descriptor_misses_more_than_none(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    run(tmp_path / "a", "--soc-version=Ascend950PR_9599", args=("--slow-every", "1"))
    run(tmp_path / "b", "--soc-version=Ascend950PR_9599", args=("--slow-every", "0"))
    often, never = (probe_result(simulator_runs(tmp_path / d), top=5)["cachemiss"]["total"] for d in "ab")
    assert often > 10 * never and never == 2 * 3  # cold misses only: 3 body lines on each of 2 cores


def test_refusals_unknown_soc_multi_card_and_timeout_out_of_range(tmp_path):
    unknown = run(tmp_path, "--soc-version=Ascend910Z")
    assert unknown.returncode == 255 and "[ERROR] --soc-version=Ascend910Z is invalid" in unknown.stdout
    forced = run(tmp_path, "--soc-version=Ascend950PR_9599", knob="unknown_soc")
    assert forced.returncode == 255 and "[ERROR]" in forced.stdout
    multi = run(tmp_path, "--soc-version=Ascend950PR_9599", knob="multi_card")
    assert multi.returncode == 0 and "[ERROR] Simulator only supports single-card scenarios" in multi.stdout
    assert simulator_runs(tmp_path) == []
    assert run(tmp_path, "--timeout=0").returncode == 255
