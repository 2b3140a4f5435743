"""Ctrl-C during a stage: one line and exit code 130, no KeyboardInterrupt traceback; the default profile reruns
incomplete jobs, so the next plain `snakemake` completes the run."""

from __future__ import annotations

import pytest
import yaml

from conftest import ROOT, stage_run
from dispatchprof.shell import stage as stage_module


def test_ctrl_c_in_a_stage_ends_with_one_line_and_code_130(tmp_path, monkeypatch, capsys):
    run = stage_run(tmp_path, "baseline")
    monkeypatch.setattr(stage_module.StageRun, "from_snakemake", classmethod(lambda cls, smk, stage, part=None: run))

    def body(_run):
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as ended:
        stage_module.run_stage(object(), "baseline", body, part="collect")
    assert ended.value.code == 130 and ended.value.__cause__ is None and ended.value.__suppress_context__
    err = capsys.readouterr().err
    assert err == "baseline/collect: interrupted (Ctrl-C); the next snakemake reruns this job\n"
    assert not run.status_path.exists()  # no status: Snakemake sees the job incomplete and reruns it


def test_the_default_profile_reruns_incomplete_jobs():
    profile = yaml.safe_load((ROOT / "profiles" / "default" / "config.yaml").read_text())
    assert profile["rerun-incomplete"] is True


def test_a_status_that_cannot_be_written_ends_with_one_line_and_no_traceback(tmp_path, monkeypatch, capsys):
    run = stage_run(tmp_path, "baseline")
    monkeypatch.setattr(stage_module.StageRun, "from_snakemake", classmethod(lambda cls, smk, stage, part=None: run))

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(run.status_path.parent / ".status.json.x.tmp"))

    monkeypatch.setattr(stage_module.StageRun, "finish", refuse)
    with pytest.raises(SystemExit) as ended:
        stage_module.run_stage(object(), "baseline", lambda r: r.status("ok", "fine"))
    assert ended.value.code == 1 and ended.value.__suppress_context__
    err = capsys.readouterr().err
    assert (
        err == f"baseline: cannot write {run.status_path.parent / '.status.json.x.tmp'}: "
        "Permission denied; the run cannot record this stage\n"
    )


def test_another_os_error_is_a_bug_and_keeps_its_traceback(tmp_path, monkeypatch):
    run = stage_run(tmp_path, "baseline")
    monkeypatch.setattr(stage_module.StageRun, "from_snakemake", classmethod(lambda cls, smk, stage, part=None: run))

    def body(_run):
        raise FileNotFoundError(2, "No such file or directory", "missing.json")

    with pytest.raises(FileNotFoundError):
        stage_module.run_stage(object(), "baseline", body)


def test_ctrl_c_before_run_stage_also_ends_with_one_line(tmp_path):
    """A stage script interrupted while it still imports or loads Snakemake's params (before run_stage's try): the
    package's excepthook says one line; Python still ends the process by SIGINT, so Snakemake sees the interrupt."""
    import subprocess
    import sys

    script = tmp_path / "tmp1kmdut_e.timeline_collect.py"  # how Snakemake names the copy of an entry script it runs
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'workflow' / 'scripts')!r})\nimport "
        "dispatchprof.shell.atomic\nraise KeyboardInterrupt\n"
    )
    ended = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert (
        ended.returncode == -2
        and ended.stderr == "timeline_collect: interrupted (Ctrl-C); the next snakemake reruns this job\n"
    ), ended.stderr
    other = tmp_path / "other.py"
    other.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'workflow' / 'scripts')!r})\nimport "
        "dispatchprof\nraise ValueError('a bug')\n"
    )
    bug = subprocess.run([sys.executable, str(other)], capture_output=True, text=True, timeout=60)
    assert bug.returncode == 1 and "Traceback" in bug.stderr and "ValueError: a bug" in bug.stderr
