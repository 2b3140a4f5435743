"""A damaged status file (an edit, a truncated copy, a tool that rewrote it) is a StatusError naming the file and the
field, never another exception: the stages downstream are skipped naming the file, and the end-of-run table prints."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatchprof.shell.runtable import format_lines, stage_lines
from dispatchprof.shell.stage import needed_parts_or_end
from dispatchprof.shell.status import (
    Status,
    StatusError,
    Validation,
    gate,
    read_input_status,
    read_status,
    write_status,
)


def good(stage: str = "timeline", **kw) -> Status:
    return Status(stage, "exp", "ok", "all ranks found", "sim", validations=[Validation("coverage", True)], **kw)


def place(root: Path, stage: str = "timeline") -> Path:
    path = root / "results" / "exp" / stage / "status.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def tampered(root: Path, change, stage: str = "timeline") -> Path:
    """A good status of ``stage`` whose parsed JSON ``change`` edited in place."""
    path = place(root, stage)
    data = good(stage).to_dict()
    change(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "change,said",
    [
        (
            lambda d: d.update(validations="coverage ok"),
            "field 'validations' is a string ('coverage ok'), expected a list of validations",
        ),
        (lambda d: d.update(validations=[["coverage", True]]), "field 'validations' is a list"),
        (
            lambda d: d["validations"][0].update(passed="yes"),
            "validation 1: field 'passed' is a string ('yes'), expected true or false",
        ),
        (lambda d: d["validations"][0].pop("check"), "validation 1: field 'check' is missing"),
        (
            lambda d: d["validations"][0].update(severity="fatal"),
            "validation 1: field 'severity' is a string ('fatal'), expected one of error, warning",
        ),
        (lambda d: d.pop("reason"), "field 'reason' is missing (expected a string)"),
        (lambda d: d.pop("state"), "field 'state' is missing"),
        (
            lambda d: d.update(state="great"),
            "field 'state' is 'great', expected one of ok, failed, timeout, invalid, skipped, disabled",
        ),
        (lambda d: d.update(stage="nope"), "field 'stage' is 'nope', expected one of env_capture"),
        (lambda d: d.update(node="1"), "field 'node' is a string ('1'), expected an integer or null"),
        (lambda d: d.update(node=True), "field 'node' is a boolean (True), expected an integer or null"),
        (lambda d: d.update(upstream=["ok"]), "field 'upstream' is a list (['ok']), expected a mapping"),
        (lambda d: d.update(root_cause="env"), "field 'root_cause' is a string ('env'), expected a mapping"),
        (lambda d: d.update(details=None), "field 'details' is null, expected a mapping"),
        (lambda d: d.update(command="msprof --help"), "field 'command' is a string"),
        (lambda d: d.update(reason=""), "field 'reason' is empty"),
        (
            lambda d: d.update(schema="dispatchprof.status/0"),
            "field 'schema' is 'dispatchprof.status/0', expected 'dispatchprof.status/1'",
        ),
    ],
)
def test_a_field_of_the_wrong_type_or_missing_or_unknown_is_named_with_what_was_expected(tmp_path, change, said):
    path = tampered(tmp_path, change)
    with pytest.raises(StatusError) as caught:
        read_status(path)
    assert str(caught.value).startswith(f"{path}: ") and said in str(caught.value)


@pytest.mark.parametrize(
    "content,said",
    [
        (b'{"schema": "dispatchprof.status/1", "stage": "timel', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "holds a list ([1, 2]), expected a mapping of status fields"),
        (b'"ok"', "holds a string ('ok'), expected a mapping"),
        (b"null", "holds null, expected a mapping"),
        ('{"reason": "d\u00e9j\u00e0"}'.encode("latin-1"), "not UTF-8 text (byte 13"),
        ('{"reason": "x"}'.encode("utf-16"), "not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_a_json_mapping_in_utf8_is_named(tmp_path, content, said):
    path = place(tmp_path)
    path.write_bytes(content)
    with pytest.raises(StatusError, match=f"^{path}: .*") as caught:
        read_status(path)
    assert said in str(caught.value)


def test_a_directory_in_place_of_the_file_is_named(tmp_path):
    path = place(tmp_path)
    path.mkdir()
    with pytest.raises(StatusError, match="status.json: status file cannot be read"):
        read_status(path)


# What a status file can be turned into: a JSON value of any kind in place of the whole or of one field, a field
# deleted, the bytes truncated, or the text written in another encoding.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
FIELDS = list(good().to_dict())


@st.composite
def mangled(draw) -> bytes:
    data = good(root_cause={"stage": "baseline", "state": "failed", "reason": "r"}, command=["msprof"]).to_dict()
    how = draw(st.sampled_from(["whole", "retype", "delete", "validation", "truncate", "encoding"]))
    if how == "whole":
        return json.dumps(draw(json_values)).encode()
    if how == "retype":
        data[draw(st.sampled_from(FIELDS))] = draw(json_values)
    elif how == "delete":
        del data[draw(st.sampled_from(FIELDS))]
    elif how == "validation":
        data["validations"] = [
            draw(json_values)
            if draw(st.booleans())
            else {
                **data["validations"][0],
                draw(st.sampled_from(["check", "passed", "severity", "detail"])): draw(json_values),
            }
        ]
    text = json.dumps(data, ensure_ascii=False)
    if how == "truncate":
        raw = text.encode()
        return raw[: draw(st.integers(0, len(raw)))]
    if how == "encoding":
        return text.encode(draw(st.sampled_from(["utf-16", "utf-32", "latin-1", "cp1252"])), errors="replace") + draw(
            st.binary(max_size=4)
        )
    return text.encode()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=mangled())
def test_any_mangled_status_file_ends_in_a_status_or_a_status_error(tmp_path, raw):
    path = place(tmp_path)
    path.write_bytes(raw)
    try:
        status = read_status(path)
    except StatusError as exc:
        assert str(exc).startswith(f"{path}: ")
        stand_in = read_input_status(path)  # what a stage downstream sees instead: skipped, the file its root cause
        assert (
            stand_in.state == "skipped"
            and stand_in.root_cause["state"] == "unreadable"
            and str(path) in stand_in.reason
        )
    else:
        assert isinstance(status, Status) and all(isinstance(v, Validation) for v in status.validations)
        assert Status.from_dict(json.loads(json.dumps(status.to_dict())), path) == status  # what was read writes back
    [line] = stage_lines(tmp_path / "results", ["exp"], ("timeline",))
    assert format_lines([line], width=100)


def test_a_stage_gating_on_a_damaged_status_is_skipped_naming_the_file(tmp_path):
    path = tampered(tmp_path, lambda d: d.update(validations="coverage ok"))
    g = gate({"timeline": path})
    assert not g.open and g.upstream == {"timeline": "skipped"}
    assert g.root_cause() == {
        "stage": "timeline",
        "state": "unreadable",
        "reason": str(read_input_status(path).root_cause["reason"]),
    }
    assert g.reason().startswith(
        f"needs timeline (skipped); root cause: timeline unreadable: {path}: field 'validations' is a string"
    )
    # the next stage down states the same root cause once
    downstream = place(tmp_path, "pmu")
    write_status(downstream, Status("pmu", "exp", "skipped", g.reason(), "sim", root_cause=g.root_cause()))
    assert gate({"pmu": downstream}).root_cause() == g.root_cause()


@pytest.mark.parametrize(
    "where,place",
    [
        ("baseline/baseline/collect", ("baseline", "baseline", "collect")),  # an experiment named like a stage
        ("exp/timeline/nodes/nodes0-1", ("exp", "timeline", "nodes/nodes0-1")),
        ("exp/pipe_timeline/pipe/collect", ("exp", "pipe_timeline", "pipe/collect")),
        ("exp/env_capture/node1", ("exp", "env_capture", "node1")),
        ("exp/pmu", ("exp", "pmu", None)),
    ],
)
def test_a_damaged_part_is_named_by_experiment_stage_and_part(tmp_path, where, place):
    path = tmp_path / "results" / where / "status.json"
    path.parent.mkdir(parents=True)
    path.write_text("{")
    stand_in = read_input_status(path)
    assert (stand_in.experiment, stand_in.stage, stand_in.part) == place
    assert stand_in.root_cause["stage"] == "/".join(p for p in place[1:] if p)


class FakeSnakemake:
    """What needed_parts_or_end reads of the snakemake object: the needed labels, their inputs, the outputs."""

    def __init__(self, root: Path, inputs: dict[str, Path]):
        self.input = inputs
        self.params = {"needed": list(inputs)}
        self.output = {
            "status": root / "results" / "exp" / "pmu" / "status.json",
            "stats": root / "results" / "exp" / "pmu" / "stats.json",
        }
        self.log = []
        self.wildcards = {"experiment": "exp"}
        self.config = {}


def test_a_stage_folding_a_damaged_needed_part_ends_skipped_naming_the_file(tmp_path, monkeypatch):
    import dispatchprof.shell.stage as stage_module

    damaged = tampered(tmp_path, lambda d: d.pop("state"))
    collect = tmp_path / "results" / "exp" / "pmu" / "collect" / "status.json"
    write_status(collect, good("pmu", part="collect"))
    smk = FakeSnakemake(tmp_path, {"timeline": damaged, "pmu_collect": collect})

    class Run:
        experiment, toolchain = "exp", "sim"

        def finish(self, status):
            self.written = status

    run = Run()
    monkeypatch.setattr(stage_module.StageRun, "from_snakemake", classmethod(lambda cls, smk, stage: run))
    with pytest.raises(SystemExit) as ended:
        needed_parts_or_end(smk, "pmu")
    assert ended.value.code == 0
    assert (
        run.written.state == "skipped"
        and f"timeline: its status file is unreadable: {damaged}: field 'state' is missing" in run.written.reason
    )
    assert run.written.root_cause["state"] == "unreadable"


def test_the_end_of_run_table_prints_every_row_with_one_tampered_status(tmp_path):
    results = tmp_path / "results"
    write_status(place(tmp_path, "correctness"), good("correctness"))
    path = tampered(tmp_path, lambda d: d.update(validations="coverage ok"))
    g = gate({"timeline": path})
    write_status(place(tmp_path, "pmu"), Status("pmu", "exp", "skipped", g.reason(), "sim", root_cause=g.root_cause()))
    lines = stage_lines(results, ["exp"], ("correctness", "timeline", "pmu", "report"))
    assert [(line.stage, line.state) for line in lines] == [
        ("correctness", "ok"),
        ("timeline", "unreadable"),
        ("pmu", "skipped"),
        ("report", "not run"),
    ]
    table = format_lines(lines, width=400)
    assert f"{path}: field 'validations' is a string ('coverage ok'), expected a list of validations" in table
    assert f"root cause: timeline unreadable: {path}: field 'validations'" in table
