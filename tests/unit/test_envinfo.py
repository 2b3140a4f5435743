import json
import os
from pathlib import Path

from conftest import ROOT
from dispatchprof.tools.envinfo import capture_node, compare_nodes, compile_flags, op_profiler_entry
from dispatchprof.tools.toolchain import Toolchain

SIM = ROOT / "workflow" / "sim"


def chain_with_path(path: str, repo: Path, install_root: Path) -> Toolchain:
    """A toolchain whose commands see only ``path`` (no Ascend tool unless put there)."""
    chain = Toolchain("cann", repo, install_root)
    chain.env = lambda base=None, extra=None: {"PATH": path, "HOME": os.environ.get("HOME", "/root"), **(extra or {})}  # type: ignore[method-assign]
    return chain


def test_capture_on_a_node_without_ascend_tools_records_each_probe_as_unavailable(tmp_path):
    chain = chain_with_path("/usr/bin:/bin", tmp_path / "no-repo", tmp_path / "no-ascend")
    env = capture_node(0, chain, "python3", tmp_path / "probes", timeout_s=60)
    for name in ("npu_smi_info", "msprof_help", "msopprof_help", "msprof_op_help", "repo_commit"):
        probe = env["probes"][name]
        assert probe["available"] is False and probe["error"], name
        assert Path(probe["output_file"]).is_file()
    assert env["op_profiler_entry"] == "none"
    assert env["versions"]["cann"]["available"] is False and "version.cfg" in env["versions"]["cann"]["error"]
    assert env["compile_flags"]["available"] is False
    json.dumps(env)  # the record must be serialisable as it is


def test_capture_with_the_simulated_tools_finds_msopprof_versions_and_flags(tmp_path):
    chain = Toolchain("sim", SIM / "ascend_deepep", SIM / "Ascend", bin_dir=SIM / "bin")
    env = capture_node(1, chain, "python3", tmp_path / "probes", timeout_s=60)
    assert env["probes"]["npu_smi_info"]["available"]
    assert env["op_profiler_entry"] == "msopprof"
    assert env["versions"]["cann"]["version"] == "9.0.0-sim"
    assert env["compile_flags"]["optimization"] == ["-O2"] and env["compile_flags"]["debug_info"]


def test_msprof_op_is_the_fallback_entry_when_msopprof_is_not_usable(tmp_path):
    chain = Toolchain(
        "sim", SIM / "ascend_deepep", SIM / "Ascend", bin_dir=SIM / "bin", sim_env={"DEEPEP_SIM_OP_ENTRY": "msprof_op"}
    )
    env = capture_node(0, chain, "python3", tmp_path / "probes", timeout_s=60)
    assert env["probes"]["msopprof_help"]["available"] is False
    assert env["op_profiler_entry"] == "msprof op"


def test_an_unrelated_program_named_msopprof_is_not_taken_for_the_profiler(tmp_path):
    out = tmp_path / "msopprof_help.txt"
    out.write_text("usage: msopprof [file]\n")
    probes = {"msopprof_help": type("P", (), {"available": True, "output_file": str(out)})()}
    assert op_profiler_entry(probes) == "none"


def test_compile_flags_ignore_comments_and_see_debug_info(tmp_path):
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "AscendDeepEPKernel.cmake").write_text("# -g would help\nset(FLAGS -O3 -xasc)\n")
    flags = compile_flags(tmp_path)
    assert flags["optimization"] == ["-O3"] and flags["debug_info"] is False


def test_cross_node_mismatches_are_named():
    def env(node, cann, commit):
        return {
            "node": node,
            "versions": {"cann": {"version": cann}, "driver": {"version": "d"}},
            "probes": {"repo_commit": {"value": commit}},
            "compile_flags": {"optimization": ["-O2"], "debug_info": True},
            "op_profiler_entry": "msopprof",
        }

    warnings = compare_nodes([env(0, "9.0", "abc"), env(1, "9.1", "abc")])
    assert warnings == ["CANN version differs across nodes: node 0: 9.0, node 1: 9.1"]


def test_clock_sync_names_chrony_with_its_offset_or_says_nothing_was_found(tmp_path):
    from dispatchprof.tools.envinfo import ProbeRecord, clock_sync

    tracking = tmp_path / "clock_chrony.txt"
    tracking.write_text(
        "Reference ID    : C0A80001 (ntp1)\nStratum         : "
        "3\nSystem time     : 0.000012345 seconds fast of NTP time\n"
    )
    probes = {
        "clock_chrony": ProbeRecord("clock_chrony", ["chronyc"], True, 0, str(tracking), None, "Reference ID"),
        "clock_ntp_synchronized": ProbeRecord(
            "clock_ntp_synchronized", ["timedatectl"], True, 0, None, None, "NTPSynchronized=yes"
        ),
        "clock_ptp": ProbeRecord("clock_ptp", ["pmc"], False, 127, None, "not found"),
    }
    assert clock_sync(probes) == "chrony (0.000012345 seconds fast of NTP time); NTPSynchronized=yes"
    nothing = {k: ProbeRecord(k, [k], False, 127, None, "not found") for k in probes}
    assert clock_sync(nothing).startswith("not found")
