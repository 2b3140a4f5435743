"""Paths with spaces and non-ASCII characters reach msprof whole (form `msprof [options] bash <probe>`,
docs/formats.md §1); an --output msprof refuses is refused before the DAG, with the reason."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from unit.test_config import problems

from conftest import ROOT
from dispatchprof.shell.config import MSPROF_OUTPUT_REFUSED, msprof_output_problem
from dispatchprof.tools.profiling import msprof_command

SIM_MSPROF = ROOT / "workflow" / "sim" / "bin" / "msprof"


@pytest.mark.parametrize("where", ["with space", "non-ASCII é ü 测试", "tab\tand space"])
def test_the_probe_is_its_own_argument_whatever_its_path(tmp_path, where):
    probe = tmp_path / where / "node0.sh"
    argv = msprof_command(tmp_path / where / "raw", ["--task-time=on"], probe)
    assert argv == ["msprof", f"--output={tmp_path / where / 'raw'}", "--task-time=on", "bash", str(probe)]


def test_the_stand_in_msprof_runs_a_probe_in_a_path_with_space_and_non_ascii(tmp_path):
    where = tmp_path / "my runs" / "é測"
    where.mkdir(parents=True)
    probe = where / "node0.sh"
    probe.write_text('#!/bin/bash\necho "probe ran in $(dirname "$0")"\n')
    out = subprocess.run(
        ["python3", str(SIM_MSPROF), *msprof_command(where / "raw", [], probe)[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
    )
    assert out.returncode == 0, out
    assert f"probe ran in {where}" in out.stdout


@pytest.mark.parametrize("char", sorted(MSPROF_OUTPUT_REFUSED))
def test_an_output_msprof_refuses_is_refused_with_the_character(tmp_path, char):
    output = tmp_path / f"a{char}b"
    with pytest.raises(ValueError, match="which msprof refuses in --output"):
        msprof_command(output, [], tmp_path / "probe.sh")
    assert repr(char) in msprof_output_problem(output)
    # and the stand-in refuses it too, as msprof does
    out = subprocess.run(
        ["python3", str(SIM_MSPROF), f"--output={output}", "bash", "-c", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "invalid characters" in out.stderr


@given(st.text(alphabet=st.characters(blacklist_characters=MSPROF_OUTPUT_REFUSED + "\x00"), max_size=40))
def test_any_other_character_is_accepted(name):
    assert msprof_output_problem(Path("/results") / name) is None


def test_a_workdir_msprof_cannot_write_under_is_refused_before_the_dag(tmp_path):
    workdir = tmp_path / "runs;old"
    found = problems({}, workdir)
    assert any(
        p.startswith(f"output path {workdir.resolve() / 'results'} holds ';', which msprof refuses") for p in found
    ), found
    assert problems({}, tmp_path / "with space é") == []
