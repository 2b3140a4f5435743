"""What a job's modules import decides a small job's cost: pandas alone is ~0.4 s of CPU and ~48 MiB per process.
The collective (collect) jobs, the probe's discovery and the DebugClock decision need no pandas; a top-level import
of it would come back silently in every one of them, so a fresh interpreter checks."""

import subprocess
import sys

from conftest import ROOT


def printed_by_fresh_interpreter(code: str) -> list[str]:
    """What ``code`` prints, run by a fresh interpreter with the library on its path: nothing imported before it."""
    prelude = f"import sys; sys.path.insert(0, {str(ROOT / 'workflow' / 'scripts')!r})\n"
    result = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


COLLECT_JOB_MODULES = (
    "dispatchprof.tools.collective",
    "dispatchprof.analysis.correctness",
    "dispatchprof.tools.debugbuild",
    "dispatchprof.formats.simulator",
    "dispatchprof.tools.opprofiler",
    "dispatchprof.tools.profiling",
)


def test_the_collect_jobs_modules_import_no_pandas():
    code = "".join(f"import {module}\n" for module in COLLECT_JOB_MODULES) + "print('pandas' in sys.modules)"
    assert printed_by_fresh_interpreter(code) == ["False"]


def test_the_stored_rank_table_still_gets_pandas_where_it_is_written():
    code = (
        "from dispatchprof.analysis.correctness import rank_frame, rank_table\n"
        "from dispatchprof.tools.launch import CollectiveResult, NodeResult\n"
        "from pathlib import Path\n"
        "run = CollectiveResult([NodeResult(0, Path('node0.log'), exit_code=0, started=1.0)], False, None, [0])\n"
        "frame = rank_frame(rank_table(1, 2, {}, run))\n"
        "print(type(frame).__module__.split('.')[0], len(frame))"
    )
    assert printed_by_fresh_interpreter(code) == ["pandas", "2"]


def test_the_timeline_merge_reads_tables_and_writes_its_trace_without_pandas_or_arrow_compute(tmp_path):
    """The merge job's whole path: its modules, the parse jobs' Parquet read back, the used launches, the grid,
    the waits, the trace text. pandas (~0.3 s) and pyarrow.compute (~50 ms) would come back with one careless call."""
    code = (
        "import numpy as np, pyarrow as pa, pyarrow.parquet as pq\n"
        "from dispatchprof.shell.atomic import pyarrow_without_pandas_probe, write_table_parquet_atomic\n"
        "pyarrow_without_pandas_probe()\n"
        "from dispatchprof.analysis import waits\n"
        "from dispatchprof.analysis.latency import percentile\n"
        "from dispatchprof.analysis.rank_identity import coverage_of\n"
        "from dispatchprof.analysis.timeline import merged_trace, used_launches\n"
        "from dispatchprof.shell.stage import StageRun\n"
        "n = 6\n"
        "table = pa.table({'rank': pa.array([0, 0, 0, 1, 1, 1]), 'launch': "
        "pa.array([0, 1, 2] * 2), 'start_ns': pa.array([10, 20, 30, 11, 21, 31]),\n"
        "    'dur_ns': pa.array([5] * n), 'gap_ns': pa.array([None, 5, "
        "5, None, 5, 5], pa.int64()), 'used': pa.array([True] * n),\n"
        "    'barrier_start_ns': pa.array([None] * n, pa.int64()), "
        "'barrier_dur_ns': pa.array([None] * n, pa.int64())})\n"
        f"path = {str(tmp_path / 'launches.parquet')!r}\n"
        "write_table_parquet_atomic(path, table)\n"
        "used = used_launches([pq.ParquetFile(path).read()])\n"
        "grid = waits.grid(used['rank'], used['launch'], {c: used[c].astype(float) "
        "for c in ('start_ns', 'dur_ns', 'barrier_start_ns', 'barrier_dur_ns')}, 8)\n"
        "merged_trace(used, {}, 0, 0, toolchain='none').json_text()\n"
        "percentile(np.array([1.0, 2.0]), 50)\n"
        "print('pandas' in sys.modules, 'pyarrow.compute' in sys.modules)"
    )
    assert printed_by_fresh_interpreter(code) == ["False", "False"]


def test_the_import_and_placeholder_jobs_modules_import_no_numpy():
    """The analyze-mode import jobs (manifest of the user's tree) and the stage shell every job starts with match
    directory names and write JSON: numpy (~0.1 s) is not theirs to pay for, nor importlib.abc (~10 ms)."""
    modules = (
        "dispatchprof.stages.imports",
        "dispatchprof.shell.stage",
        "dispatchprof.shell.status",
        "dispatchprof.shell.atomic",
        "dispatchprof.shell.config",
        "dispatchprof.stages.absent",
    )
    code = (
        "".join(f"import {module}\n" for module in modules)
        + "print('numpy' in sys.modules, 'importlib.abc' in sys.modules)"
    )
    assert printed_by_fresh_interpreter(code) == ["False", "False"]
