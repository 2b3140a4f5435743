"""Printed commands carry the run's own --configfile/--config words, after the targets (shell.invocation)."""

import shlex
from pathlib import Path

from dispatchprof.report.summary import next_steps
from dispatchprof.shell.invocation import invocation_args, snakemake_command


def test_config_files_are_relative_to_the_workflow_when_under_it_and_absolute_otherwise(tmp_path):
    wf = tmp_path / "wf"
    (wf / "config").mkdir(parents=True)
    words = invocation_args(
        [wf / "config" / "config.yaml", wf / "exp.yaml", tmp_path / "elsewhere.yaml"], ["toolchain=sim"], wf
    )
    assert words == [
        "--configfile",
        "config/config.yaml",
        "exp.yaml",
        str(tmp_path / "elsewhere.yaml"),
        "--config",
        "toolchain=sim",
    ]
    assert invocation_args([], None, wf) == []


def test_targets_come_before_the_options_that_take_every_word_after_them():
    cmd = snakemake_command(
        ["results/exp one/pmu/status.json"], ["--configfile", "config/config.yaml", "my runs/exp.yaml"]
    )
    words = shlex.split(cmd)
    assert words == [
        "snakemake",
        "--cores",
        "2",
        "results/exp one/pmu/status.json",
        "--configfile",
        "config/config.yaml",
        "my runs/exp.yaml",
    ]


def test_every_next_step_command_carries_the_invocation():
    causes = [
        {"evidence": "late_arrival", "rank": 11, "node": 1, "ranks": [11]},
        {"evidence": "own_work", "rank": 3, "node": 0, "ranks": [3]},
        {"evidence": "late_ending_node", "rank": None, "node": 1, "ranks": [8, 9]},
    ]
    invocation = ["--configfile", "config/config.yaml", "exp.yaml"]
    steps = next_steps(causes, "exp", invocation)
    commands = [c for s in steps for c in s["commands"]]

    def carries(words):  # the invocation's words in a row, after the targets (--config words may follow them)
        return any(words[i : i + 3] == invocation for i in range(4, len(words)))

    assert len(commands) >= 4 and all(carries(shlex.split(c)) for c in commands), commands
    assert (
        "snakemake --cores 2 results/exp/timeline/ranks/rank11/detail.json --configfile config/config.yaml exp.yaml"
        in commands
    )
    assert all(Path(shlex.split(c)[3]).parts[:2] == ("results", "exp") for c in commands)


def test_the_recorded_invocation_reads_back_and_a_missing_or_broken_record_is_none(tmp_path):
    from dispatchprof.shell.invocation import read_invocation, write_invocation

    assert read_invocation(tmp_path) == []
    write_invocation(tmp_path, ["--configfile", "config/config.yaml", "exp one.yaml"])
    assert read_invocation(tmp_path) == ["--configfile", "config/config.yaml", "exp one.yaml"]
    (tmp_path / "invocation.json").write_text("{truncated")
    assert read_invocation(tmp_path) == []
