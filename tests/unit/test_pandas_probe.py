"""Jobs without pandas tell pyarrow so (atomic.pyarrow_without_pandas_probe); what they write stays the same, and
pandas still works in them when a text export needs it."""

import json
import subprocess
import sys

from conftest import FIXTURES, ROOT

FIVE = FIXTURES / "msprof-real" / "custom_kernel_5_launches" / "mindstudio_profiler_output"

# Writes a Parquet file from numpy and lists, then reads the real op_summary sample (pandas, imported after the
# probe) into a launch table and a second Parquet file; prints what it saw.
JOB = """
import json, sys
sys.path.insert(0, {scripts!r})
from pathlib import Path
from dispatchprof.shell.atomic import {probe}write_arrow_parquet_atomic
{call}
import numpy as np
out = Path({out!r})
write_arrow_parquet_atomic(out / "arrays.parquet", {{"x": np.arange(3), "gap": [1, None, 3], "s": ["a", None, "c"]}}, {{"k": "v"}})
pandas_after_write = "pandas" in sys.modules
from dispatchprof.analysis.timeline import kernel_regex, launch_columns
from dispatchprof.formats.msprof import op_summary_files
from dispatchprof.formats.msprof_tables import read_op_summary, target_kernels_of
regex = kernel_regex("matmul_kernel")
kernels = target_kernels_of(read_op_summary(op_summary_files(Path({five!r}))), lambda n: bool(regex.match(n)), 2, None)
columns = launch_columns(kernels, 0)
write_arrow_parquet_atomic(out / "launches.parquet", columns)
import pandas as pd
print(json.dumps({{"pandas_after_write": pandas_after_write, "columns": {{k: v.tolist() for k, v in columns.items()}},
                   "frames": [pd.read_parquet(out / n).to_json() for n in ("arrays.parquet", "launches.parquet")]}}))
"""


def run_job(tmp_path, with_probe: bool) -> dict:
    out = tmp_path / ("probe" if with_probe else "plain")
    out.mkdir()
    code = JOB.format(
        scripts=str(ROOT / "workflow" / "scripts"),
        probe="pyarrow_without_pandas_probe, " if with_probe else "",
        call="pyarrow_without_pandas_probe()" if with_probe else "",
        out=str(out),
        five=str(FIVE),
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    result["bytes"] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    return result


def test_the_probe_spares_the_pandas_import_and_changes_nothing_written(tmp_path):
    plain, probed = run_job(tmp_path, False), run_job(tmp_path, True)
    assert plain["pandas_after_write"] is True  # what the probe is for: pyarrow imported pandas to build an array
    assert probed["pandas_after_write"] is False
    assert probed["columns"] == plain["columns"] and len(plain["columns"]["launch"]) == 5
    assert probed["frames"] == plain["frames"]
    assert probed["bytes"] == plain["bytes"]  # the Parquet files, byte for byte


def test_parquet_outputs_encode_only_strings_as_dictionaries_and_read_back_the_same(tmp_path):
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    from dispatchprof.shell.atomic import write_arrow_parquet_atomic, write_parquet_atomic

    columns = {
        "start_ns": np.arange(1000, dtype=np.int64) * 7919,
        "role": ["URMASendToken", "CalCumSum"] * 500,
        "used": [True, False] * 500,
    }
    write_arrow_parquet_atomic(tmp_path / "a.parquet", columns, {"dispatchprof.toolchain": "sim"})
    write_parquet_atomic(tmp_path / "b.parquet", pd.DataFrame(columns))
    for name in ("a.parquet", "b.parquet"):
        meta = pq.ParquetFile(tmp_path / name).metadata.row_group(0)
        encodings = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
        assert any("DICTIONARY" in e for e in encodings["role"]), encodings
        assert not any("DICTIONARY" in e for e in encodings["start_ns"]), (
            encodings
        )  # measured numbers: no dictionary pass
        back = pd.read_parquet(tmp_path / name)
        assert back["start_ns"].tolist() == columns["start_ns"].tolist() and back["role"].tolist() == columns["role"]
    assert pq.read_schema(tmp_path / "a.parquet").metadata[b"dispatchprof.toolchain"] == b"sim"
