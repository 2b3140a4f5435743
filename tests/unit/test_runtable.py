"""The end-of-run table: one line per experiment and stage, skipped stages by their root cause, fail_on."""

import pytest

from dispatchprof.shell.runtable import failing, format_lines, stage_lines
from dispatchprof.shell.status import Status, write_status


def write(root, stage, state, reason, **kw):
    write_status(root / "exp" / stage / "status.json", Status(stage, "exp", state, reason, "sim", **kw))


def test_each_stage_gets_one_line_and_a_skipped_chain_shows_its_root_cause(tmp_path):
    cause = {"stage": "correctness", "state": "failed", "reason": "rank 5 did not pass the precision check"}
    write(tmp_path, "correctness", "failed", cause["reason"])
    write(
        tmp_path,
        "baseline",
        "skipped",
        "needs correctness (failed: rank 5 did not pass the precision check)",
        root_cause=cause,
    )
    write(
        tmp_path,
        "timeline",
        "skipped",
        "needs baseline (skipped); root cause: correctness failed: rank 5 ...",
        root_cause=cause,
    )
    lines = stage_lines(tmp_path, ["exp"], ("correctness", "baseline", "timeline", "pmu"))
    assert [(line.stage, line.state) for line in lines] == [
        ("correctness", "failed"),
        ("baseline", "skipped"),
        ("timeline", "skipped"),
        ("pmu", "not run"),
    ]
    assert lines[2].reason == "root cause: correctness failed: rank 5 did not pass the precision check"
    assert "--until" in lines[3].reason
    rows = format_lines(lines, width=80).splitlines()
    assert rows[0].split() == ["experiment", "stage", "state", "reason"]
    assert all(len(row) <= 80 for row in rows)


def reasons_of(text: str) -> list[str]:
    """The reasons as a reader puts them back together: a row's words after its state, then its continuation lines."""
    out: list[str] = []
    for row in text.splitlines()[1:]:
        if row.startswith(" "):
            out[-1] = (out[-1] + " " + row.strip()).strip()
        else:
            out.append(" ".join(row.split()[3:]))
    return out


@pytest.mark.parametrize("width", [200, 100, 80, 50, 30])
def test_every_finding_is_whole_at_any_terminal_width(tmp_path, width):
    finding = (
        "late_arrival: the group waits for rank 11 (node 1) in 93% of launches, 48.2 us per launch (95% CI 46.0-50.1), "
        "its host gap is 50 us above its peers'; drill down: snakemake "
        "--cores 2 results/exp/timeline/ranks/rank11/detail.json"
    )
    write(tmp_path, "timeline", "ok", finding)
    write(tmp_path, "pmu", "ok", "short")
    lines = stage_lines(tmp_path, ["exp"], ("timeline", "pmu"))
    text = format_lines(lines, width=width)
    assert reasons_of(text) == [finding, "short"]
    assert "…" not in text
    # a word is never broken (the path stays copyable): a row may overrun the terminal only by holding one word
    # longer than the room left for it
    for row in text.splitlines():
        assert len(row) <= width or len(row.split()) in (1, 4), row


def test_a_broken_status_file_is_a_line_not_a_crash(tmp_path):
    (tmp_path / "exp" / "pmu").mkdir(parents=True)
    (tmp_path / "exp" / "pmu" / "status.json").write_text("{truncated")
    [line] = stage_lines(tmp_path, ["exp"], ("pmu",))
    assert line.state == "unreadable" and "status.json" in line.reason


def test_fail_on_picks_only_the_states_asked_for(tmp_path):
    write(tmp_path, "correctness", "ok", "all passed")
    write(tmp_path, "pmu", "timeout", "replay hung")
    write(tmp_path, "pcsampling", "skipped", "needs pmu (timeout: replay hung)")
    lines = stage_lines(tmp_path, ["exp"], ("correctness", "pmu", "pcsampling"))
    assert [line.stage for line in failing(lines, ["failed", "invalid", "timeout"])] == ["pmu"]
    assert failing(lines, []) == []


def test_the_report_line_says_where_the_report_is_or_why_it_is_not_from_this_run(tmp_path):
    import os

    from dispatchprof.shell.runtable import report_line

    html = tmp_path / "report.html"
    assert report_line(str(html), 100.0).startswith(f"Report: not built in this run ({html} does not exist")
    html.write_text("<html>")
    os.utime(html, (50.0, 50.0))
    assert "is from an earlier run (1970-01-01T" in report_line(str(html), 100.0)
    os.utime(html, (200.0, 200.0))
    assert report_line(str(html), 100.0) == f"Report: {html}"
    html.with_suffix(".md").write_text("#")
    assert report_line(str(html), 100.0) == f"Report: {html} (Markdown: {html.with_suffix('.md')})"
