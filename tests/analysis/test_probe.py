"""The probe's analysis on the §6 fixtures: CACHEMISS totals, per core and top PCs, pipe busy as interval unions,
hot instructions; the summary.json keys."""

import pandas as pd
import pytest

from conftest import FIXTURES
from dispatchprof.analysis.probe import LABEL, probe_result, summary_section, union_us
from dispatchprof.formats.simulator import simulator_runs

S = FIXTURES / "msopprof" / "simulator"


def test_cachemiss_counts_per_core_and_top_pcs_match_the_fixture_events():
    result = probe_result(simulator_runs(S / "single"), top=2)
    assert result["cachemiss"] == {
        "total": 4,
        "per_core": {"core0.veccore0": 3, "core0.veccore1": 1},
        "top_pcs": [{"pc": "0x10f86a00", "count": 2}, {"pc": "0x10f86a80", "count": 1}],  # ties broken by PC
    }
    assert result["cachemiss_agreement"] == {"per_core_traces": 4, "summary_trace": 4}
    assert result["events_from"] == ["per-core trace.json"]


def test_pipe_busy_is_the_union_of_intervals_and_marks_are_not_pipes():
    busy = probe_result(simulator_runs(S / "single"), top=5)["pipe_busy_us"]
    assert busy["core0.veccore0"]["MTE2"] == pytest.approx(1.48)  # [0.02, 1.02) and [0.5, 1.5) overlap
    assert busy["core0.veccore0"]["VECTOR"] == pytest.approx(0.25)
    assert "CACHEMISS" not in busy["core0.veccore0"]
    assert busy["core0.veccore1"] == {"MTE3": pytest.approx(2.0)}


def test_union_of_disjoint_nested_and_touching_intervals():
    frame = pd.DataFrame({"ts_us": [0.0, 1.0, 5.0, 5.5, 7.0], "dur_us": [1.0, 1.0, 2.0, 0.5, 1.0]})
    assert union_us(frame) == pytest.approx(2.0 + 2.0 + 1.0)
    assert union_us(frame.iloc[:0]) == 0


def test_instr_top_ranks_by_cycles_over_cores_with_decimal_addr():
    result = probe_result(simulator_runs(S / "single"), top=3)
    section = summary_section(result)
    assert section["label"] == LABEL == "simulator, single card, local probe"
    assert section["instr_top"] == [
        {"core": "core0.veccore1", "instr": "MOV_UB_TO_OUT_ALIGN", "addr": 284715744, "cycles": 4000},
        {"core": "core0.veccore0", "instr": "MOV_SRC_TO_DST_ALIGN", "addr": 284715584, "cycles": 2560},
        {"core": "core0.veccore0", "instr": "VADD", "addr": 284715648, "cycles": 768},
    ]
    assert result["code_top"][0] == {
        "code": "csrc/kernels/elastic_dispatch/descriptor.h:49",
        "cycles": 4000,
        "call_count": 32,
        "cores": 1,
    }


def test_a_tree_without_traces_has_no_cachemiss_evidence_not_zero():
    result = probe_result(simulator_runs(S / "multi"), top=5)
    assert result["cachemiss"] is None and result["pipe_busy_us"] == {}
    assert result["instr_top"][0]["core"] == "build_descriptors/1/core0.cubecore0"


def edited_copy(tmp_path, edit):
    """The single-kernel fixture copied, each trace.json's events passed through ``edit(core, events)``."""
    import json
    import shutil

    root = tmp_path / "sim"
    shutil.copytree(S / "single", root)
    for trace in root.glob("OPPROF_*/simulator/**/trace.json"):
        data = json.loads(trace.read_text())
        data["traceEvents"] = edit(trace.parent.name, data["traceEvents"])
        trace.write_text(json.dumps(data))
    return root


def is_cachemiss(e):
    return e.get("tid") == "CACHEMISS" or e.get("pid") == 110 or (e.get("args") or {}).get("name") == "CACHEMISS"


def test_no_cachemiss_lane_anywhere_is_not_provided_not_zero(tmp_path):
    root = edited_copy(tmp_path, lambda core, events: [e for e in events if not is_cachemiss(e)])
    result = probe_result(simulator_runs(root), top=3)
    assert result["cachemiss"] is None and summary_section(result)["cachemiss"] is None
    assert result["pipe_busy_us"]["core0.veccore0"]["MTE2"] == pytest.approx(1.48)  # the rest is still read


def test_a_declared_but_empty_cachemiss_lane_is_zero_for_that_core(tmp_path):
    # core0.veccore1 keeps its CACHEMISS process_name (pid 110) but loses its one miss event
    def edit(core, events):
        return [e for e in events if not (core == "core0.veccore1" and e.get("ph") == "X" and e.get("pid") == 110)]

    result = probe_result(simulator_runs(edited_copy(tmp_path, edit)), top=3)
    assert (
        result["cachemiss"]["per_core"] == {"core0.veccore0": 3, "core0.veccore1": 0}
        and result["cachemiss"]["total"] == 3
    )


def test_the_core_count_covers_the_instruction_csvs_and_quoted_details_are_unquoted(tmp_path):
    root = edited_copy(tmp_path, lambda core, events: events)
    sim = next(root.glob("OPPROF_*/simulator"))
    (sim / "core0.veccore1" / "trace.json").unlink()
    csv = sim / "core0.veccore0" / "core0.veccore0_instr_exe.csv"
    lines = csv.read_text().splitlines()
    head, _, detail = lines[1].partition(",dst:")
    csv.write_text(
        "\n".join([lines[0], f'{head},"dst:{detail}"', *lines[2:]]) + "\n"
    )  # as sim_pc_to_code.cpp quotes it
    result = probe_result(simulator_runs(root), top=5)
    assert result["cores"] == ["core0.veccore0", "core0.veccore1"]  # veccore1 has no trace, its instruction CSVs count
    first = next(r for r in result["instr_top"] if r["instr"] == "MOV_SRC_TO_DST_ALIGN")
    assert first["detail"] == "dst:UB[0x200], src:GM[0x10f80000], len:0x80"
