"""What a job's modules import decides a small job's cost: pandas alone is ~0.4 s of CPU and ~48 MiB per process.
The collective (collect) jobs, the probe's discovery and the DebugClock decision need no pandas; a top-level import
of it would come back silently in every one of them, so a fresh interpreter checks."""

import subprocess
import sys

from conftest import ROOT

COLLECT_JOB_MODULES = (
    "dispatchprof.collective",
    "dispatchprof.analysis.correctness",
    "dispatchprof.debugbuild",
    "dispatchprof.formats.simulator",
    "dispatchprof.opprofiler",
    "dispatchprof.profiling",
)


def test_the_collect_jobs_modules_import_no_pandas():
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'workflow' / 'scripts')!r})\n"
        + "".join(f"import {module}\n" for module in COLLECT_JOB_MODULES)
        + "print('pandas' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_stored_rank_table_still_gets_pandas_where_it_is_written():
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'workflow' / 'scripts')!r})\n"
        "from dispatchprof.analysis.correctness import rank_frame, rank_table\n"
        "from dispatchprof.launch import CollectiveResult, NodeResult\n"
        "from pathlib import Path\n"
        "run = CollectiveResult([NodeResult(0, Path('node0.log'), exit_code=0, started=1.0)], False, None, [0])\n"
        "frame = rank_frame(rank_table(1, 2, {}, run))\n"
        "print(type(frame).__module__.split('.')[0], len(frame))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["pandas", "2"]
