"""The column catalogue of msopprof's writers: the exports' headers match their writer verbatim, the chip is never
named from columns, and any header (shuffled, short of columns, with new ones) ends in writers that fit it or in
"columns of no known writer", with its new columns listed."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from dispatchprof.formats.msopprof import UNKNOWN_CHIP, columns_chip, judge_columns, metric_files, read_metric_csv
from dispatchprof.formats.msopprof_writers import BLOCK_COLUMNS, WRITERS, describe, fit
from dispatchprof.formats.npu_smi import npu_smi_names

CANN = FIXTURES / "msopprof" / "cann_910b2"
BY_NAME = {w.name: w for w in WRITERS}


def headers_of(export):
    files = metric_files(next((CANN / export).glob("OPPROF_*")))
    return {metric: read_metric_csv(path)[0] for metric, path in files.items() if metric != "OpBasicInfo"}


@pytest.mark.parametrize("export", ["cann852_1block", "cann852_2blocks", "cann83rc2_vector"])
def test_each_export_holds_its_cann_writers_columns_verbatim_and_in_order(export):
    writer = BY_NAME["CANN 8.5.2 msprof op" if export.startswith("cann852") else "CANN 8.3.RC2 msprof op"]
    for metric, header in headers_of(export).items():
        assert tuple(header[2:]) == writer.files[metric], metric


def test_the_cann_8_pipe_and_conflict_sets_are_what_no_open_source_header_version_writes():
    pipe, conflict = (
        BY_NAME["CANN 8.5.2 msprof op"].files["PipeUtilization"],
        BY_NAME["CANN 8.5.2 msprof op"].files["ResourceConflictRatio"],
    )
    # The open-source A2 header before e581c4a, then the DBI columns
    # it appends; and aiv_mte1_wait_ratio, which no version has.
    assert pipe == BY_NAME["msopprof *For910B_ bac21ac..79ae61a"].files["PipeUtilization"] + (
        "aic_mte1_active_bw(GB/s)",
        "aic_mte2_active_bw(GB/s)",
    )
    assert "aiv_mte1_wait_ratio" in conflict and all(
        "aiv_mte1_wait_ratio" not in w.files["ResourceConflictRatio"] for w in WRITERS if w.name.startswith("msopprof")
    )
    # The 950's header of the same version holds the same PipeUtilization set, the DBI columns inline: columns alone
    # cannot tell the chips apart, hence no chip name from them.
    assert set(pipe) == set(BY_NAME["msopprof *ForA5_ bac21ac"].files["PipeUtilization"])


def test_a_cann_export_without_a_chip_gives_chip_unknown_with_its_writers():
    chip = columns_chip(judge_columns(headers_of("cann852_2blocks"), None))
    assert chip.name == UNKNOWN_CHIP and chip.family is None
    assert chip.source == "columns of the CANN 8.5.2 msprof op / CANN 8.3.RC2 msprof op writers (seen on Ascend910B2)"


def test_a_header_of_no_writer_is_said_so():
    verdict = judge_columns(
        {"PipeUtilization": ["block_id", "sub_block_id", "aiv_time(us)", "aiv_brand_new(us)"]}, None
    )
    assert verdict.writers == () and columns_chip(verdict).source == "columns of no known writer"
    assert verdict.new == {"PipeUtilization": ["aiv_brand_new(us)"]}
    assert verdict.expected["PipeUtilization"] == [
        "aiv_time(us)",
        "aiv_brand_new(us)",
    ]  # the file's own header: nothing judged absent


METRICS = sorted({m for w in WRITERS for m in w.files})


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_shuffled_short_or_extended_header_ends_in_fitting_writers_or_no_known_writer(data):
    writer = data.draw(st.sampled_from(WRITERS))
    metric = data.draw(st.sampled_from(sorted(writer.files)))
    columns = list(writer.files[metric])
    dropped = set(data.draw(st.lists(st.sampled_from(columns), max_size=3, unique=True)))
    extra = data.draw(st.lists(st.from_regex(r"aiv_new_[a-z]{1,8}_ratio", fullmatch=True), max_size=3, unique=True))
    body = [c for c in columns if c not in dropped] + extra
    if data.draw(st.booleans()):
        body = data.draw(st.permutations(body))
    header = list(BLOCK_COLUMNS) + body
    verdict = judge_columns({"PipeUtilization": header} if metric == "PipeUtilization" else {metric: header}, None)
    chip = columns_chip(verdict)
    assert chip.name == UNKNOWN_CHIP and chip.family is None  # never a chip from columns
    assert set(verdict.new[metric]) >= set(extra)  # what no writer writes is listed, never dropped
    assert (
        set(verdict.expected[metric]) <= set(body) or verdict.expected[metric] == body
    )  # judged against a fitting writer or itself
    if metric == "PipeUtilization" and verdict.writers:
        assert chip.source == describe(verdict.writers) and all(
            fit(w, metric, header) is not None for w in verdict.writers
        )
        if not dropped and not extra:
            assert writer in verdict.writers or any(fit(w, metric, header).in_order for w in verdict.writers)
    elif metric == "PipeUtilization":
        assert chip.source == "columns of no known writer" and all(fit(w, metric, header) is None for w in WRITERS)


def test_npu_smi_info_names_its_chips_and_not_its_process_rows():
    table = (
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n"
        "| 4     910B2               | OK            | 92.8        39                0    / 0             |\n"
        "| 0                         | 0000:01:00.0  | 0           0    / 0          3405 / 65536         |\n"
        "| 5     910B2               | OK            | 92.0        36                0    / 0             |\n"
        "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |\n"
        "| 4       0                 | 12345         | python3                  | 100                     |\n"
    )
    assert npu_smi_names(table) == ["910B2"]
    assert npu_smi_names("Chip Name                      : 910B2\n") == ["910B2"]
    assert npu_smi_names("npu-smi: command not found\n") == []
