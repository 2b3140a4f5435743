"""The debugclock collect part as a library function, without Snakemake: its gate and decision (the runs themselves:
tests/workflow/test_debugclock.py)."""

from conftest import stage_run, write_part_status
from dispatchprof.stages.debugclock_collect import debugclock_collect, debugclock_wrap

OUTPUTS = {"raw": "raw", "run": "run"}


def test_a_needed_input_not_ok_skips_the_part(tmp_path):
    build = write_part_status(tmp_path / "build" / "status.json", "build", "failed", "the build failed")
    pmu = write_part_status(tmp_path / "pmu" / "status.json", "pmu", "ok")
    run = stage_run(
        tmp_path,
        "debugclock",
        inputs={"build": build, "pmu": pmu},
        outputs=OUTPUTS,
        params={"needed": ["build"]},
        part="collect",
    )
    status = debugclock_collect(run, tmp_path)
    assert status.state == "skipped" and status.upstream["build"] == "failed"


def test_the_fallback_is_not_needed_when_pmu_is_ok(tmp_path):
    build = write_part_status(tmp_path / "build" / "status.json", "build", "ok")
    pmu = write_part_status(tmp_path / "pmu" / "status.json", "pmu", "ok")
    run = stage_run(
        tmp_path,
        "debugclock",
        inputs={"build": build, "pmu": pmu},
        outputs=OUTPUTS,
        params={"needed": ["build"]},
        part="collect",
    )
    status = debugclock_collect(run, tmp_path)
    assert status.state == "disabled" and status.details == {"pmu": "ok"}
    assert not (tmp_path / "out" / "raw").exists()  # nothing built, nothing run


def test_the_on_run_writes_its_clocks_per_run_and_node(tmp_path):
    wrap = debugclock_wrap(tmp_path, 1, {"akl_keep_last": 4, "format": "akl"}, "sim")
    argv = wrap(3, ["python3", "driver.py"])
    where = tmp_path / "run1" / "node3"
    assert argv == [
        "env",
        f"DISPATCH_CLOCK_DIR={where}",
        f"AKL_TRACE_DIR={where}",
        "AKL_TRACE_KEEP_LAST=4",
        "DEEPEP_SIM_DEBUGCLOCK_FORMAT=akl",
        "python3",
        "driver.py",
    ]
    assert where.is_dir()
