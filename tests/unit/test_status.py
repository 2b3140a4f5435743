import json

import pytest

from dispatchprof.shell.status import (
    SCHEMA,
    Status,
    StatusError,
    Validation,
    fold,
    gate,
    read_status,
    worst_state,
    write_status,
)


def make(stage="pmu", state="ok", reason="fine", **kw):
    return Status(stage=stage, experiment="baseline", state=state, reason=reason, toolchain="sim", **kw)


def test_status_file_carries_schema_toolchain_and_every_contract_field(tmp_path):
    path = tmp_path / "status.json"
    write_status(path, make(command=["msopprof", "--help"], exit_code=0, validations=[Validation("x", True)]))
    data = json.loads(path.read_text())
    assert data["schema"] == SCHEMA
    for key in (
        "stage",
        "experiment",
        "node",
        "state",
        "source",
        "reason",
        "upstream",
        "command",
        "exit_code",
        "started",
        "finished",
        "validations",
        "artifacts",
        "toolchain",
    ):
        assert key in data
    assert read_status(path) == make(command=["msopprof", "--help"], exit_code=0, validations=[Validation("x", True)])


@pytest.mark.parametrize(
    "field,value", [("state", "great"), ("stage", "nope"), ("toolchain", "gpu"), ("source", "web"), ("reason", "")]
)
def test_status_refuses_values_outside_the_contract(field, value):
    kwargs = {"stage": "pmu", "state": "ok", "reason": "r", "toolchain": "sim"}
    kwargs[field] = value
    with pytest.raises(StatusError):
        Status(experiment="e", **kwargs)


def test_validation_refuses_unknown_severity():
    with pytest.raises(StatusError):
        Validation("c", False, "fatal")


def test_worst_state_order_is_failed_timeout_invalid_skipped_ok():
    assert worst_state(["ok", "skipped", "invalid", "timeout", "failed"]) == "failed"
    assert worst_state(["ok", "skipped", "invalid", "timeout"]) == "timeout"
    assert worst_state(["ok", "skipped", "invalid"]) == "invalid"
    assert worst_state(["ok", "skipped"]) == "skipped"
    assert worst_state(["ok", "disabled"]) == "ok"
    with pytest.raises(StatusError):
        worst_state([])


def test_fold_names_the_worst_parts_in_its_reason():
    parts = {
        "node0": make(stage="env_capture"),
        "node1": make(stage="env_capture", state="failed", reason="npu-smi hung"),
    }
    folded = fold("env_capture", "baseline", "sim", parts)
    assert folded.state == "failed"
    assert "node1: npu-smi hung" in folded.reason
    assert folded.upstream == {"node0": "ok", "node1": "failed"}


def test_gate_blocks_on_needed_inputs_only_and_names_the_root_cause_once(tmp_path):
    write_status(tmp_path / "corr.json", make(stage="correctness", state="failed", reason="rank 5 did not pass"))
    direct = gate({"correctness": tmp_path / "corr.json"})
    assert direct.reason() == "needs correctness (failed: rank 5 did not pass)"
    cause = {"stage": "correctness", "state": "failed", "reason": "rank 5 did not pass"}
    assert direct.root_cause() == cause
    write_status(
        tmp_path / "base.json",
        make(stage="baseline", state="skipped", reason=direct.reason(), root_cause=direct.root_cause()),
    )
    write_status(tmp_path / "opt.json", make(stage="timeline", state="invalid", reason="missing device"))
    g = gate({"baseline": tmp_path / "base.json"}, optional={"timeline": tmp_path / "opt.json"})
    assert not g.open
    assert g.reason() == "needs baseline (skipped); root cause: correctness failed: rank 5 did not pass"
    assert g.root_cause() == cause
    assert g.upstream == {"timeline": "invalid", "baseline": "skipped"}
    assert gate({}, optional={"timeline": tmp_path / "opt.json"}).open


def test_a_long_skipped_chain_states_its_root_cause_once(tmp_path):
    # Before: each stage nested its input's reason, so the first failure appeared inside up to 15 "needs (...)".
    write_status(tmp_path / "s0.json", make(stage="env_capture", state="failed", reason="npu-smi hung"))
    for i in range(1, 16):
        g = gate({f"part{i - 1}": tmp_path / f"s{i - 1}.json"})
        write_status(
            tmp_path / f"s{i}.json", make(stage="pmu", state="skipped", reason=g.reason(), root_cause=g.root_cause())
        )
    last = read_status(tmp_path / "s15.json")
    assert last.reason.count("npu-smi hung") == 1 and last.reason.count("needs") == 1
    assert last.root_cause == {"stage": "env_capture", "state": "failed", "reason": "npu-smi hung"}


def test_a_folded_skipped_stage_keeps_its_parts_root_cause():
    cause = {"stage": "timeline", "state": "invalid", "reason": "no target kernel"}
    parts = {
        f"node{n}": make(stage="pmu", state="skipped", reason="needs timeline (invalid)", root_cause=cause)
        for n in range(2)
    }
    assert fold("pmu", "baseline", "sim", parts).root_cause == cause


def test_reading_a_broken_status_file_names_the_file(tmp_path):
    bad = tmp_path / "status.json"
    bad.write_text("{not json")
    with pytest.raises(StatusError, match="status.json"):
        read_status(bad)
    bad.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(StatusError, match="schema"):
        read_status(bad)
    with pytest.raises(StatusError, match="missing"):
        read_status(tmp_path / "absent.json")


def test_atomic_outputs_respect_the_umask_not_mkstemps_0600(tmp_path):
    import os

    from dispatchprof.shell.atomic import write_text_atomic

    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "report.html", "x")
        assert (tmp_path / "report.html").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        write_text_atomic(tmp_path / "private.json", "x")
        assert (tmp_path / "private.json").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_copies_and_generated_scripts_respect_the_umask_not_the_sources_mode(tmp_path):
    """A build output made under umask 022 (0644) copied into results/ under umask 027 is 0640, not world-readable;
    a generated probe script is 0750, not a fixed 0755; a copied tree's folders too (found by a new-user trial)."""
    import os

    from dispatchprof.shell.atomic import copy_under_umask, make_executable
    from dispatchprof.tools.debugbuild import make_tree

    lib, script = tmp_path / "lib.so", tmp_path / "build.sh"
    lib.write_text("x")
    script.write_text("#!/bin/sh\n")
    lib.chmod(0o644)
    script.chmod(0o755)
    old = os.umask(0o027)
    try:
        copy_under_umask(lib, tmp_path / "lib_copy.so")
        copy_under_umask(script, tmp_path / "build_copy.sh")
        assert (tmp_path / "lib_copy.so").stat().st_mode & 0o777 == 0o640
        assert (
            tmp_path / "build_copy.sh"
        ).stat().st_mode & 0o777 == 0o750  # still executable, as far as the umask allows
        probe = tmp_path / "node0.sh"
        probe.write_text("#!/bin/sh\n")
        make_executable(probe)
        assert probe.stat().st_mode & 0o777 == 0o750
        repo = tmp_path / "repo"  # not a git repository: the DEBUG build's tree is a copy
        (repo / "scripts").mkdir(parents=True)
        (repo / "scripts").chmod(0o755)
        (repo / "scripts" / "build.sh").write_text("#!/bin/sh\n")
        (repo / "scripts" / "build.sh").chmod(0o755)
        tree = make_tree(repo, tmp_path / "results" / "debug_tree").path
        assert (tree / "scripts").stat().st_mode & 0o777 == 0o750 and (
            tree / "scripts" / "build.sh"
        ).stat().st_mode & 0o777 == 0o750
    finally:
        os.umask(old)
