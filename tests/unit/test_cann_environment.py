"""Finding CANN on a node: set_env.sh in the 8.5+ or the older layout (its errors shown), the CANN version where 8.5
keeps it, and msprof's application form read from its --help (hand-made help texts of both forms)."""

import subprocess
from pathlib import Path

import pytest

from dispatchprof.node.preflight import run_checks
from dispatchprof.tools.envinfo import VERSION_FILES, _read_version, set_env_record
from dispatchprof.tools.profiling import (
    APPLICATION,
    TRAILING,
    msprof_application_form,
    msprof_command,
    render_probe,
    supported_options,
)
from dispatchprof.tools.toolchain import Toolchain, set_env_candidates

TEMPLATES = Path(__file__).parents[2] / "workflow/templates"

# CANN 8.1.RC1 on (the stand-in prints the same usage): the application after the options.
HELP_TRAILING = """Usage: msprof [options] <app> [args]
       msprof [options] --application="<app> <args>"
Options:
  --output=<dir>                 output directory
  --task-time=<l0|l1|on|off>     task time level (default on = l1)
"""
# CANN 6.x/7.x (ArgsManager::PrintHelp: "Usage:", "./msprof [--options]", then "--<name>" padded, <Optional>).
HELP_APPLICATION = """
Usage:
      ./msprof [--options]

Options:
      --output                          <Optional> Specify the directory that is used for storing data results.
      --application                     <Optional> Specify application path, considering the risk of privilege escalation, please pay attention to
      --task-time                       <Optional> Show task profiling data, the default value is on.
"""


def test_the_application_form_is_read_from_the_help():
    assert msprof_application_form(HELP_TRAILING)[0] == TRAILING
    form, why = msprof_application_form(HELP_APPLICATION)
    assert form == APPLICATION and "8.1.RC1" in why
    form, why = msprof_application_form("")
    assert form == TRAILING and "no msprof --help was captured" in why


def test_the_command_line_of_each_form(tmp_path):
    probe = tmp_path / "probe.sh"
    trailing = msprof_command(tmp_path / "out", ["--task-time=on"], probe)
    assert trailing[-2:] == ["bash", str(probe)] and not any(a.startswith("--application") for a in trailing)
    old = msprof_command(tmp_path / "out", ["--task-time=on"], probe, APPLICATION)
    assert old == ["msprof", f"--output={tmp_path / 'out'}", "--task-time=on", f"--application=bash {probe}"]
    with pytest.raises(ValueError, match="holds whitespace"):
        msprof_command(tmp_path / "out", [], tmp_path / "a b" / "probe.sh", APPLICATION)
    # the options of the old help are found in its own line layout
    assert supported_options(["--task-time=on", "--aic-metrics=PipeUtilization"], HELP_APPLICATION)[0] == [
        "--task-time=on"
    ]


def test_set_env_candidates_auto_one_path_or_a_list():
    root = Path("/usr/local/Ascend")
    assert set_env_candidates("auto", root) == (
        "/usr/local/Ascend/cann/set_env.sh",
        "/usr/local/Ascend/ascend-toolkit/set_env.sh",
    )
    assert set_env_candidates("/opt/x.sh", root) == ("/opt/x.sh",)
    assert set_env_candidates(["/a.sh", "/b.sh"], root) == ("/a.sh", "/b.sh")


def layout(root: Path, old: bool, script: str = "export ASCEND_HOME_PATH={home}\n") -> Path:
    """An install of the 8.5+ layout (cann/) or the older one (ascend-toolkit/latest/...)."""
    home = root / ("ascend-toolkit/latest" if old else "cann")
    home.mkdir(parents=True)
    set_env = root / ("ascend-toolkit" if old else "cann") / "set_env.sh"
    set_env.write_text(script.format(home=home))
    return set_env


def test_the_wrapped_command_sources_the_first_existing_candidate(tmp_path):
    set_env = layout(tmp_path, old=True)
    chain = Toolchain("cann", tmp_path, tmp_path, set_env=set_env_candidates("auto", tmp_path))
    done = subprocess.run(
        chain.wrap(["sh", "-c", 'echo "$ASCEND_HOME_PATH"']), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and done.stdout.strip() == str(tmp_path / "ascend-toolkit/latest"), done.stderr
    broken = Toolchain("cann", tmp_path, tmp_path, set_env=(str(tmp_path / "none.sh"), str(set_env)))
    set_env.write_text("echo 'set_env.sh: /usr/local/Ascend/x: No such file' >&2\nfalse\n")
    done = subprocess.run(broken.wrap(["true"]), capture_output=True, text=True, timeout=30)
    assert done.returncode == 127 and "No such file" in done.stderr and f"cannot source {set_env}" in done.stderr
    missing = Toolchain("cann", tmp_path, tmp_path, set_env=(str(tmp_path / "none.sh"),))
    done = subprocess.run(missing.wrap(["true"]), capture_output=True, text=True, timeout=30)
    assert done.returncode == 127 and "none of" in done.stderr and "none.sh" in done.stderr


def test_env_capture_records_which_set_env_ran_and_what_it_said_on_stderr(tmp_path):
    set_env = layout(
        tmp_path / "Ascend",
        old=False,
        script="echo 'warning: driver older than toolkit' >&2\necho noise\nexport ASCEND_HOME_PATH={home}\n",
    )
    chain = Toolchain("cann", tmp_path, tmp_path / "Ascend", set_env=set_env_candidates("auto", tmp_path / "Ascend"))
    record = set_env_record(chain, tmp_path, 30)
    assert record["sourced"] == str(set_env) and record["exit_code"] == 0 and "error" not in record
    assert record["stderr"] == ["warning: driver older than toolkit"]  # stdout dropped, stderr kept
    assert record["ASCEND_HOME_PATH"] == str(tmp_path / "Ascend/cann")
    assert "warning: driver older" in Path(record["output_file"]).read_text()
    none = set_env_record(Toolchain("cann", tmp_path, tmp_path, set_env=(str(tmp_path / "no.sh"),)), tmp_path, 30)
    assert none["sourced"] is None and "none of" in none["error"]
    assert set_env_record(Toolchain("sim", tmp_path, tmp_path), tmp_path, 30) == {"used": False, "candidates": []}


def test_the_cann_version_is_read_from_the_85_layout_and_the_older_ones(tmp_path):
    new = tmp_path / "new"
    (new / "cann").mkdir(parents=True)
    (new / "cann/version.info").write_text("Version=8.5.2\nversion_dir=8.5.2\n")
    assert _read_version(new, VERSION_FILES["cann"])["version"] == "8.5.2"
    old = tmp_path / "old"
    (old / "ascend-toolkit/latest/aarch64-linux").mkdir(parents=True)
    (old / "ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=7.0.0\n"
    )
    found = _read_version(old, VERSION_FILES["cann"])
    assert found["version"] == "7.0.0" and found["file"].endswith("ascend_toolkit_install.info")
    assert not _read_version(tmp_path / "empty", VERSION_FILES["cann"])["available"]


def test_preflight_and_the_probe_script_take_the_candidates(tmp_path):
    set_env = layout(tmp_path, old=True)
    candidates = list(set_env_candidates("auto", tmp_path))
    spec = {
        "node": 0,
        "timeout_s": 10,
        "flags": [],
        "set_env": candidates,
        "disk": None,
        "ports": [],
        "shared_token": None,
        "write_dirs": [],
    }
    finding = next(f for f in run_checks(spec, environ={}) if f["check"] == "CANN set_env.sh")
    assert finding["ok"] and str(set_env) in finding["detail"] and "first of 2 candidates" in finding["detail"]
    script = render_probe(TEMPLATES, 0, tmp_path, ["python3", "driver.py"], candidates)
    assert f"for candidate in {candidates[0]} {candidates[1]}; do" in script
    (tmp_path / "driver.py").write_text("import os; print(os.environ['ASCEND_HOME_PATH'])\n")
    script_path = tmp_path / "probe.sh"
    script_path.write_text(render_probe(TEMPLATES, 0, tmp_path, ["python3", str(tmp_path / "driver.py")], candidates))
    done = subprocess.run(["bash", str(script_path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == str(tmp_path / "ascend-toolkit/latest"), done.stderr
