"""msopprof OPPROF_ parsing: the three layouts, the 950 (33/34 columns, old order) and A2/A3 header sets read by
name, NA kept as missing, columns not provided against the writer the columns fit, and malformed input."""

import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from dispatchprof.formats.msopprof import (
    OTHER_950,
    PMU_METRIC_CSVS,
    OpprofFormatError,
    judge_columns,
    kernel_runs,
    metric_files,
    missing_columns,
    read_metric_csv,
    read_op_basic_info,
    requested_metric_csvs,
)

F = FIXTURES / "msopprof"
OPPROF = "OPPROF_20250317011811_DNMFKOVQMZFKYLUP"


def values(frame, metric):
    return frame[frame["metric"] == metric].sort_values(["block_id", "core_index"])["value"].tolist()


def writer_names(metric, header, family=None):
    return [w.name for w in judge_columns({metric: header}, family).writers]


@pytest.mark.parametrize(
    "name,writers",
    [
        ("PipeUtilization_950_34col.csv", ["msopprof *ForA5_ 44ba9d9..d6c29df", "msopprof *ForA5_ bac21ac"]),
        ("PipeUtilization_950_33col.csv", ["msopprof *ForA5_ 79ae61a..e581c4a"]),
        # The doc figure's order holds the 79ae61a set in another order: it still fits that writer, as a set.
        ("PipeUtilization_950_old_order.csv", ["msopprof *ForA5_ 79ae61a..e581c4a"]),
    ],
)
def test_the_950_variants_give_the_same_values_by_header_name(name, writers):
    header, frame = read_metric_csv(F / name)
    assert writer_names("PipeUtilization", header) == writers
    assert values(frame, "aiv_time(us)") == [85.998, 86.998, 95.998, 96.998]
    assert values(frame, "aiv_icache_miss_rate") == [0.033, 0.033, 0.034, 0.034]
    assert frame[frame["metric"] == "aic_time(us)"]["value"].isna().all()  # NA stays missing, never 0
    assert set(frame["core_kind"]) == {"vector"} and sorted(frame["core_index"].unique()) == [0, 1]


def test_a_column_of_the_writers_set_left_na_is_not_provided_and_one_it_never_writes_is_not():
    header, frame = read_metric_csv(F / "PipeUtilization_950_34col.csv")
    expected = judge_columns({"PipeUtilization": header}, "Ascend 950").expected["PipeUtilization"]
    assert missing_columns(header, frame, "vector", expected) == [
        "aiv_mte3_active_bw(GB/s)"
    ]  # present but NA in every row
    header, frame = read_metric_csv(F / "PipeUtilization_950_33col.csv")
    expected = judge_columns({"PipeUtilization": header}, "Ascend 950").expected["PipeUtilization"]
    assert missing_columns(header, frame, "vector", expected) == []  # the 79ae61a writer has no aiv_mte3_active_bw


def test_a2_a3_file_with_cube_and_vector_rows_and_dynamic_columns():
    header, frame = read_metric_csv(F / "PipeUtilization_A2.csv")
    verdict = judge_columns({"PipeUtilization": header}, None)
    assert [w.name for w in verdict.writers] == ["msopprof *For910B_ e581c4a..d6c29df"]
    assert verdict.new == {"PipeUtilization": []}  # the scalar wait_id columns are the writer's, appended when non-zero
    cube = frame[(frame["sub_block_id"] == "cube0") & (frame["metric"] == "aic_total_cycles")]["value"].tolist()
    vec = frame[(frame["sub_block_id"] == "vector0") & (frame["metric"] == "aiv_total_cycles")]["value"].tolist()
    assert cube == [27033.0] and vec == [27032.0]
    assert "aic_scalar_wait_id15_time(us)" in set(frame["metric"])
    assert "aiv_scalar_single_time(us)" in missing_columns(header, frame, "mix", verdict.expected["PipeUtilization"])


def test_op_basic_info_reads_the_documented_row():
    info = read_op_basic_info(F / "OpBasicInfo.csv")
    assert (
        info["Op Name"] == "matmul_leakyrelu_custom_0_mix_aic"
        and info["Device Id"] == "0"
        and info["Pid"] == "521012"
        and info["Rated Freq"] == "1650"
    )


def make_run(directory, stamp=None):
    directory.mkdir(parents=True)
    suffix = f"_{stamp}" if stamp else ""
    shutil.copy(F / "PipeUtilization_950_34col.csv", directory / f"PipeUtilization{suffix}.csv")
    shutil.copy(F / "OpBasicInfo.csv", directory / f"OpBasicInfo{suffix}.csv")
    (directory / "visualize_data.bin").write_bytes(b"")
    (directory / "dump").mkdir()


def test_the_three_layouts_are_found(tmp_path):
    root = tmp_path / "a" / OPPROF
    make_run(root)
    [run] = kernel_runs(root)
    assert (
        run.layout == "root"
        and run.kernel is None
        and set(metric_files(run.directory)) == {"PipeUtilization", "OpBasicInfo"}
    )

    one_device = tmp_path / "b" / OPPROF
    for n in (0, 1):
        make_run(one_device / "elastic_dispatch_kernel" / str(n), stamp="20240603022812284")
    runs = kernel_runs(one_device)
    assert [(r.layout, r.kernel, r.n, r.device) for r in runs] == [
        ("kernel", "elastic_dispatch_kernel", 0, None),
        ("kernel", "elastic_dispatch_kernel", 1, None),
    ]
    assert "PipeUtilization" in metric_files(runs[0].directory)

    several = tmp_path / "c" / OPPROF
    for device in (0, 3):
        make_run(several / f"device{device}" / "elastic_dispatch_kernel_mix_aiv" / "0", stamp="20240603022812284")
    assert [(r.layout, r.device, r.kernel) for r in kernel_runs(several)] == [
        ("device", 0, "elastic_dispatch_kernel_mix_aiv"),
        ("device", 3, "elastic_dispatch_kernel_mix_aiv"),
    ]


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda t: t.replace("block_id,", "blk,", 1), "header lacks block_id"),
        (lambda t: t.replace(",vector1,", ",vec1,", 1), "field 'sub_block_id' is 'vec1'"),
        (lambda t: t.replace("85.998000", "fast", 1), "line 2: field 'aiv_time(us)' is 'fast'"),
        (lambda t: t.replace("85.998000", "inf", 1), "expected a finite number"),
        (lambda t: t.rsplit("\n", 2)[0][:-20] + "\n", "fields, expected 34"),
        (lambda t: t.replace("0,vector0", "x,vector0", 1), "field 'block_id' is 'x'"),
    ],
)
def test_malformed_metric_csv_names_file_line_and_field(tmp_path, edit, message):
    path = tmp_path / "PipeUtilization.csv"
    path.write_text(edit((F / "PipeUtilization_950_34col.csv").read_text()))
    with pytest.raises(OpprofFormatError) as err:
        read_metric_csv(path)
    assert str(path) in str(err.value) and message in str(err.value)


def clear_error_or_table(path):
    """A metric CSV either reads into the long table or fails with
    the format error naming the file; (header, frame) or None."""
    try:
        header, frame = read_metric_csv(path)
    except OpprofFormatError as exc:
        assert str(path) in str(exc)
        return None
    assert set(frame.columns) == {"block_id", "sub_block_id", "core_kind", "core_index", "metric", "value"}
    return header, frame


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=600),
        st.integers(min_value=0, max_value=len((F / "PipeUtilization_950_34col.csv").read_bytes())),
    )
)
def test_garbage_or_truncated_metric_csv_ends_in_a_clear_error_or_a_table(tmp_path_factory, blob_or_cut):
    path = tmp_path_factory.mktemp("m") / "PipeUtilization.csv"
    data = (
        blob_or_cut
        if isinstance(blob_or_cut, bytes)
        else (F / "PipeUtilization_950_34col.csv").read_bytes()[:blob_or_cut]
    )
    path.write_bytes(data)
    clear_error_or_table(path)


OTHER_SETS = [m for m in PMU_METRIC_CSVS if m != "PipeUtilization"]


@pytest.mark.parametrize("metric", OTHER_SETS)
def test_the_other_950_metric_csvs_are_read_by_header_name_with_their_documented_columns(metric):
    header, frame = read_metric_csv(F / f"{metric}_950.csv")
    assert header[2:] == OTHER_950[metric]  # the fixture is the doc's header, verbatim
    assert frame[frame["metric"].str.startswith("aic_")]["value"].isna().all() == (
        metric != "L2Cache"
    )  # L2Cache has the doc's cube row
    assert missing_columns(header, frame, "vector", judge_columns({metric: header}, "Ascend 950").expected[metric]) == [
        c for c in OTHER_950[metric] if c.startswith("aiv_") and frame[frame["metric"] == c]["value"].isna().all()
    ]


def test_the_l2cache_doc_figure_rows_keep_counts_and_percent():
    _, frame = read_metric_csv(F / "L2Cache_950.csv")
    vec = frame[frame["sub_block_id"] == "vector1"].set_index("metric")["value"]
    assert (
        vec["aiv_read_close_hit"] == 10290
        and vec["aiv_read_hit_rate(%)"] == pytest.approx(99.97086)
        and vec["aiv_write_hit_rate(%)"] == pytest.approx(61.56788)
    )


def test_a_column_absent_from_an_older_memory_csv_is_not_provided(tmp_path):
    lines = [line.rstrip(",").split(",") for line in (F / "Memory_950.csv").read_text().splitlines()]
    drop = lines[0].index("aiv_gm_to_ub_bw(GB/s)")
    older = tmp_path / "Memory.csv"
    older.write_text("".join(",".join(c for i, c in enumerate(line) if i != drop) + ",\n" for line in lines))
    header, frame = read_metric_csv(older)
    verdict = judge_columns({"Memory": header}, "Ascend 950")
    assert (
        verdict.expected["Memory"] == OTHER_950["Memory"]
    )  # no writer fits: the 950's newest header set is the measure
    assert missing_columns(header, frame, "vector", verdict.expected["Memory"]) == ["aiv_gm_to_ub_bw(GB/s)"]


@pytest.mark.parametrize(
    "metrics,expected",
    [
        (["PipeUtilization"], ["PipeUtilization"]),
        (
            ["memory", "PipeUtilization", "L2Cache"],
            ["PipeUtilization", "L2Cache", "Memory"],
        ),  # case-insensitive, as the tool
        (["Default"], list(PMU_METRIC_CSVS)),
        (["PipeTimeline"], []),
    ],
)
def test_the_metric_csvs_an_aic_metrics_list_asks_for(metrics, expected):
    assert requested_metric_csvs(metrics) == expected


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(OTHER_SETS), st.data())
def test_garbage_or_truncated_other_metric_csv_ends_in_a_clear_error_or_a_table(tmp_path_factory, metric, data):
    original = (F / f"{metric}_950.csv").read_bytes()
    cut = data.draw(st.integers(min_value=0, max_value=len(original)))
    noise = data.draw(st.binary(max_size=40))
    at = data.draw(st.integers(min_value=0, max_value=cut))
    blob = original[:cut][:at] + noise + original[:cut][at:]
    path = tmp_path_factory.mktemp("m") / f"{metric}.csv"
    path.write_bytes(blob)
    read = clear_error_or_table(path)
    if read is not None:
        header, frame = read
        assert set(frame["metric"]) <= set(header) - {"block_id", "sub_block_id"}


def test_the_soc_name_gives_the_chip_family_and_unknown_names_none():
    from dispatchprof.formats.msopprof import soc_family

    assert [
        soc_family(s)
        for s in ("910B2", "Ascend910B2", "Ascend910B4-1", "Ascend910_9392", "Ascend950PR_9599", "Ascend310P3", "")
    ] == [
        "A2/A3",
        "A2/A3",
        "A2/A3",
        "A2/A3",
        "Ascend 950",
        None,
        None,
    ]


def test_the_chip_is_read_from_dump_op_basic_info_of_the_launch_or_the_root(tmp_path):
    from dispatchprof.formats.msopprof import run_chip

    launch = tmp_path / "OPPROF_x" / "k" / "0"
    launch.mkdir(parents=True)
    assert run_chip(launch, tmp_path / "OPPROF_x") is None
    (tmp_path / "OPPROF_x" / "dump").mkdir()
    (tmp_path / "OPPROF_x" / "dump" / "op_basic_info.txt").write_bytes(
        b"\xef\xbb\xbfOp Name=k\nRun Soc Version=Ascend910B2\n"
    )
    chip = run_chip(launch, tmp_path / "OPPROF_x")
    assert (chip.name, chip.family) == ("Ascend910B2", "A2/A3")
