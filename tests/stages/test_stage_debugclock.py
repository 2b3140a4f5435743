"""The debugclock stage as a library function, without Snakemake (the whole DAG: tests/workflow/test_debugclock.py)."""

import json

from conftest import FIXTURES, stage_run
from dispatchprof.stages.debugclock import debugclock, debugclock_validations

OUTPUTS = {"segments": "segments.parquet", "per_rank": "per_rank.parquet", "stats": "debugclock.json"}
ANALYZE = {"mode": "analyze", "cluster": {"nodes": 2, "ranks_per_node": 1}}


def test_imported_legacy_csvs_are_summarised(tmp_path):
    run = stage_run(
        tmp_path,
        "debugclock",
        outputs=OUTPUTS,
        overlay={**ANALYZE, "analyze": {"debugclock_dir": str(FIXTURES / "deepep" / "debugclock" / "legacy")}},
    )
    status = debugclock(run, {})
    assert status.state == "ok", status.reason
    assert status.reason.startswith("legacy_csv: 2 ranks")
    stats = json.loads(run.outputs["stats"].read_text())
    assert stats["overhead"] is None and stats["data_source"] == "import"


def test_no_directory_given_is_skipped_and_an_empty_one_is_invalid(tmp_path):
    run = stage_run(tmp_path, "debugclock", outputs=OUTPUTS, overlay=ANALYZE)
    assert debugclock(run, {}).state == "skipped"
    run = stage_run(
        tmp_path, "debugclock", outputs=OUTPUTS, overlay={**ANALYZE, "analyze": {"debugclock_dir": str(tmp_path)}}
    )
    status = debugclock(run, {})
    assert status.state == "invalid" and status.reason.startswith("no DebugClock file under")


def test_clipping_and_dropped_markers_are_warnings():
    checks = debugclock_validations({"role_mismatches": [], "clipped": {"missing": 1}, "dropped_markers": 3})
    assert [(v.check, v.severity) for v in checks] == [
        ("legacy analyzer clipping", "warning"),
        ("AKL recorder capacity", "warning"),
    ]


def test_imported_akl_traces_of_a_slow_link_name_the_sending_node_in_the_status_and_the_stats(tmp_path):
    """Analyze mode on AKL traces the stand-in's DEBUG build writes for a link twice as slow out of node 0 (the event
    model, 2 nodes x 8 ranks, laid out node<k>/ as analyze.debugclock_dir is read): the stage names node 0's sends."""
    import sys

    sys.path.insert(0, str(FIXTURES.parents[1] / "benchmarks"))
    import debugclock_gate as bench
    from ascend_deepep._collective import Knobs

    traces = tmp_path / "traces"
    bench.write_traces(bench.SHAPES["2x8"], Knobs(seed=1, slow_link=(0, 1, 2.0)), traces)
    overlay = {**ANALYZE, "cluster": {"nodes": 2, "ranks_per_node": 8}, "analyze": {"debugclock_dir": str(traces)}}
    run = stage_run(tmp_path / "run", "debugclock", outputs=OUTPUTS, overlay=overlay)
    status = debugclock(run, {})
    assert status.state == "ok", status.reason
    assert "every rank of node 0: URMASendToken send_complete +" in status.reason
    node = json.loads(run.outputs["stats"].read_text())["summary"]["busiest_node"]
    assert (node["node"], node["role"], node["phase"], node["ranks"]) == (
        0,
        "URMASendToken",
        "send_complete",
        list(range(8)),
    )
    assert node["excess_us"] > 10 * node["peers_spread_us"]
    # both reports' DebugClock sections render it (one model, rendered as HTML and as Markdown)
    from types import SimpleNamespace

    from dispatchprof.report.debugclock import section
    from dispatchprof.report.html import html_section
    from dispatchprof.report.markdown import markdown_section
    from dispatchprof.report.tool_sections import debugclock_sections

    stats = json.loads(run.outputs["stats"].read_text())
    context = SimpleNamespace(debugclock=section(stats), toolchain="sim", figures={}, stages={})
    [head, *_rest] = debugclock_sections(context)
    for text in (str(html_section(head)), markdown_section(head)):
        assert "Slower on every rank of a node: node 0, URMASendToken, slot 4 (send_complete)" in text, text[:200]


def test_an_imported_tree_with_a_file_link_loop_is_invalid_naming_the_link(tmp_path):
    """The stage reads analyze.debugclock_dir itself (no import rule): a loop there is its refusal, not a traceback."""
    import shutil

    tree = tmp_path / "imported"
    shutil.copytree(FIXTURES / "deepep" / "debugclock" / "legacy", tree)
    (tree / "dispatch_clock_loop.csv").symlink_to(tree / "other.csv")
    (tree / "other.csv").symlink_to(tree / "dispatch_clock_loop.csv")
    run = stage_run(
        tmp_path, "debugclock", outputs=OUTPUTS, overlay={**ANALYZE, "analyze": {"debugclock_dir": str(tree)}}
    )
    status = debugclock(run, {})
    assert status.state == "invalid" and status.source == "import", status.reason
    assert f"{tree / 'dispatch_clock_loop.csv'}: a symbolic link loop" in status.reason


def test_one_rank_with_a_garbled_clock_csv_is_left_out_named_and_the_other_is_summarised(tmp_path):
    import shutil

    tree = tmp_path / "imported"
    shutil.copytree(FIXTURES / "deepep" / "debugclock" / "legacy", tree)
    bad = tree / "node1" / "dispatch_clock" / "dispatch_clock_rank_1.csv"
    bad.write_bytes(b"\x00\x01garbage")
    run = stage_run(
        tmp_path, "debugclock", outputs=OUTPUTS, overlay={**ANALYZE, "analyze": {"debugclock_dir": str(tree)}}
    )
    status = run.finish(debugclock(run, {}))
    assert status.state == "ok", status.reason
    assert (
        status.reason.startswith("legacy_csv: 1 ranks")
        and f"Left out, their files refused: rank 1 (node1) ({bad}: " in status.reason
    ), status.reason
    assert any(not v.passed and str(bad) in v.detail for v in status.validations)
    stats = json.loads(run.outputs["stats"].read_text())
    assert list(stats["refused"]) == ["1 (node1)"] and str(bad) in stats["refused"]["1 (node1)"]
