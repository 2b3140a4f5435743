"""The report's section builders: one pattern for every stage
(stats file, status -> what is rendered, what is summarised)."""

import inspect
import json
import typing

from dispatchprof.shell.status import Status
from dispatchprof.stages import report as report_stage
from dispatchprof.stages.report import SECTIONS, Section, debugclock_section, evidence_section, pipe_timeline_section
from dispatchprof.stages.report_inputs import StageFiles

FILES = StageFiles()  # reads a file the first time a builder asks for it


def status(state):
    return Status(stage="pmu", experiment="baseline", state=state, reason="a test's stage", toolchain="sim")


def stats_file(tmp_path, data, name="stats.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def link(path):
    return f"link:{path}"


def test_an_ok_stage_is_shown_linked_and_summarised(tmp_path):
    path = stats_file(tmp_path, {"summary": {"busiest": None}, "roles": {}})
    section = evidence_section(FILES, path, status("ok"), link)
    assert section.context["link"] == f"link:{path}" and section.summary == {"busiest": None}


def test_a_placeholder_or_a_stage_not_ok_has_no_section(tmp_path):
    placeholder = stats_file(tmp_path, {"placeholder": True, "summary": {}})
    real = stats_file(tmp_path, {"summary": {}}, "real.json")
    assert evidence_section(FILES, placeholder, status("ok"), link) is None
    assert evidence_section(FILES, real, status("invalid"), link) is None
    assert debugclock_section(FILES, real, status("skipped"), link) is None


def test_the_pipe_timeline_is_shown_whatever_its_state_with_its_trace_links(tmp_path):
    runs = {
        "PipeTimeline": {"state": "ok", "traces": ["results/x/trace.json", "/abs/trace.json"]},
        "InstrTimeline": {"state": "failed"},
    }
    path = stats_file(tmp_path, {"runs": runs, "summary": {"roles_from": "PipeTimeline"}})
    section = pipe_timeline_section(FILES, path, status("failed"), link)
    assert section.summary == {"roles_from": "PipeTimeline"}
    assert section.context["runs"]["PipeTimeline"]["trace_links"] == ["link:results/x/trace.json", "/abs/trace.json"]
    assert section.context["runs"]["InstrTimeline"]["trace_links"] == []


def test_every_section_builder_takes_the_same_arguments(tmp_path):
    # report() calls every builder of the registry the same way: build(the files read, its stats file, its status, link)
    assert set(SECTIONS) == {"pmu", "pcsampling", "probe", "debugclock", "pipe_timeline"}
    assert {key for key, _ in SECTIONS.values()} == {f"{stage}_stats" for stage in SECTIONS}
    entry = typing.get_args(typing.get_type_hints(report_stage)["SECTIONS"])[1]  # (its stats input, its builder)
    arguments, returns = typing.get_args(typing.get_args(entry)[1])  # the builders' declared Callable
    placeholder = stats_file(tmp_path, {"placeholder": True, "summary": {}})
    real = stats_file(tmp_path, {"summary": {}, "runs": {}}, "real.json")
    for stage, (_, build) in SECTIONS.items():
        hints = typing.get_type_hints(build)
        parameters = list(inspect.signature(build).parameters.values())
        assert [hints[p.name] for p in parameters] == arguments and hints["return"] == returns, stage
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        assert all(p.kind in positional and p.default is p.empty for p in parameters), stage
        # called as report() calls it: a stage that produced nothing has no section, whatever its state
        for state in ("ok", "failed", "skipped"):
            assert build(FILES, placeholder, status(state), link) is None, (stage, state)
        assert isinstance(build(FILES, real, status("failed"), link), Section | None), stage
