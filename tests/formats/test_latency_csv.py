"""dispatch_latency.csv: the real forms from docs/formats.md §3, every refusal, and garbage."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from dispatchprof.formats.latency_csv import LatencyCsvError, parse_latency_csv

LEGACY = FIXTURES / "deepep" / "dispatch_latency_legacy.csv"
FULL = FIXTURES / "deepep" / "dispatch_latency_full.csv"


def write(tmp_path, text, name="dispatch_latency.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_legacy_five_column_form_is_accepted_with_unspecified_boundary():
    table = parse_latency_csv(LEGACY)
    assert table.measurement is None and table.clock_hz is None
    assert table.frame[["rank", "iteration", "us"]].values.tolist() == [
        [0, 0, 1000.0],
        [1, 0, 20.0],
        [0, 1, 10.0],
        [1, 1, 40.0],
    ]


def test_full_form_with_metadata_columns_is_accepted():
    table = parse_latency_csv(FULL)
    assert table.measurement == "kernel" and table.clock_hz == "50000000"
    assert table.frame["us"].tolist() == [500.0, 20.0]
    assert table.frame["warmup"].tolist() == [True, False]


def test_columns_are_found_by_name_not_position(tmp_path):
    text = "in_average,elapsed_us,is_warmup,iteration,rank\n0,1000,1,0,0\n1,20,0,0,1\n1,10,0,1,0\n1,40,0,1,1\n"
    table = parse_latency_csv(write(tmp_path, text))
    assert sorted(table.frame[["rank", "iteration", "us"]].values.tolist()) == [
        [0, 0, 1000.0],
        [0, 1, 10.0],
        [1, 0, 20.0],
        [1, 1, 40.0],
    ]


def test_elapsed_ms_alone_is_converted_to_microseconds(tmp_path):
    table = parse_latency_csv(write(tmp_path, "rank,iteration,elapsed_ms,is_warmup,in_average\n0,0,0.5,0,1\n"))
    assert table.frame["us"].tolist() == [500.0]


HEADER = "rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average,measurement,clock_hz\n"


@pytest.mark.parametrize(
    "body,message",
    [
        (
            "0,0,0.1,100,0,1,kernel,50000000\n1,0,0.1,100,0,1,event,50000000\n",
            "line 3: field 'measurement' is 'event' but line 2 has 'kernel'",
        ),
        ("0,0,0.1,100,0,1,kernel,50000000\n1,0,0.1,100,0,1,kernel,1000000000\n", "line 3: field 'clock_hz'"),
        (
            "0,0,0.1,100,0,1,kernel,1\n0,0,0.1,100,0,1,kernel,1\n",
            "line 3: field 'iteration': rank 0 iteration 0 duplicates line 2",
        ),
        (
            "0,0,0.1,100,0,1,kernel,1\n0,1,0.1,100,0,1,kernel,1\n1,0,0.1,100,0,1,kernel,1\n",
            "field 'rank': unequal call counts across ranks (rank 0: 2, rank 1: 1)",
        ),
        ("0,0,-0.1,-100,0,1,kernel,1\n", "line 2: field 'elapsed_us' is -100"),
        ("0,0,nan,nan,0,1,kernel,1\n", "line 2: field 'elapsed_us' is nan"),
        ("0,0,inf,inf,0,1,kernel,1\n", "line 2: field 'elapsed_us' is inf"),
        ("0,0,0.1,100,1,1,kernel,1\n", "line 2: field 'in_average' is 1 on a warm-up row"),
        ("zero,0,0.1,100,0,1,kernel,1\n", "line 2: field 'rank' is 'zero', expected an integer"),
        ("0,0,0.1,100,yes,1,kernel,1\n", "line 2: field 'is_warmup' is 'yes', expected 0 or 1"),
        ("0,0,0.1,100,0\n", "line 2: 5 fields, expected 8"),
        ("", "no data rows"),
    ],
)
def test_each_refusal_names_file_line_and_field(tmp_path, body, message):
    path = write(tmp_path, HEADER + body)
    with pytest.raises(LatencyCsvError) as err:
        parse_latency_csv(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_missing_header_column_is_named(tmp_path):
    with pytest.raises(LatencyCsvError, match=r"line 1: header lacks in_average"):
        parse_latency_csv(write(tmp_path, "rank,iteration,elapsed_us,is_warmup\n0,0,1,0\n"))


def test_binary_and_empty_files_are_refused_clearly(tmp_path):
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"rank,iteration\n\x00\x01\x02")
    with pytest.raises(LatencyCsvError, match="line 2: binary data"):
        parse_latency_csv(binary)
    with pytest.raises(LatencyCsvError, match="empty file"):
        parse_latency_csv(write(tmp_path, ""))
    latin = tmp_path / "l.csv"
    latin.write_bytes(b"rank,iteration\n\xff\xfe")
    with pytest.raises(LatencyCsvError, match="not UTF-8"):
        parse_latency_csv(latin)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_end_in_a_clear_error_or_a_valid_table(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("fuzz") / "dispatch_latency.csv"
    path.write_bytes(blob)
    try:
        table = parse_latency_csv(path)
    except LatencyCsvError as exc:
        assert str(path) in str(exc)
    else:
        assert table.frame["us"].map(math.isfinite).all() and (table.frame["us"] >= 0).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(FULL.read_bytes()) - 1))
def test_truncated_files_never_crash_or_invent_rows(tmp_path_factory, cut):
    path = tmp_path_factory.mktemp("cut") / "dispatch_latency.csv"
    path.write_bytes(FULL.read_bytes()[:cut])
    try:
        table = parse_latency_csv(path)
    except LatencyCsvError:
        return
    assert len(table.frame) <= 2


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["0", "1", "-3", "x", "", "1e3", "nan", "2.5"]),
            st.sampled_from(["0", "1", "2", "a"]),
            st.sampled_from(["1.5", "-1", "inf", "abc", ""]),
            st.sampled_from(["0", "1", "2"]),
            st.sampled_from(["0", "1"]),
        ),
        max_size=8,
    )
)
def test_wrong_types_in_any_field_end_in_a_clear_error_or_a_valid_table(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("types") / "dispatch_latency.csv"
    path.write_text("rank,iteration,elapsed_us,is_warmup,in_average\n" + "".join(",".join(r) + "\n" for r in rows))
    try:
        table = parse_latency_csv(path)
    except LatencyCsvError as exc:
        assert "line" in str(exc) or "no data rows" in str(exc) or "unequal call counts" in str(exc)
    else:
        assert (table.frame["rank"] >= 0).all()


WORK_HEADER = (
    "rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average,processed_bytes,"
    "sent_bytes,processed_gbps,sent_gbps,measurement,clock_hz\n"
)


def test_work_byte_columns_are_read_by_header_name(tmp_path):
    # docs/formats.md §3: work=callback adds processed_bytes,sent_bytes
    # (uint64) and *_gbps = bytes/(ms*1e6), empty if ms = 0
    text = WORK_HEADER + "0,0,0.5,500,1,0,1000,400,0.002,0.0008,kernel,1\n1,0,0,0,1,0,2000,800,,,kernel,1\n"
    table = parse_latency_csv(write(tmp_path, text))
    assert table.work is not None
    assert table.work[["rank", "iteration", "processed_bytes", "sent_bytes"]].values.tolist() == [
        [0, 0, 1000, 400],
        [1, 0, 2000, 800],
    ]
    shuffled = "sent_bytes,rank,processed_bytes,iteration,elapsed_us,is_warmup,in_average\n400,0,1000,0,500,0,1\n"
    assert parse_latency_csv(write(tmp_path, shuffled, "s.csv")).work[
        ["processed_bytes", "sent_bytes"]
    ].values.tolist() == [[1000, 400]]
    assert parse_latency_csv(LEGACY).work is None


@pytest.mark.parametrize(
    "header,body,message",
    [
        (
            "rank,iteration,elapsed_us,is_warmup,in_average,processed_bytes\n",
            "0,0,1,0,1,5\n",
            "line 1: field 'sent_bytes' missing but 'processed_bytes' present",
        ),
        (
            "rank,iteration,elapsed_us,is_warmup,in_average,sent_bytes,processed_bytes\n",
            "0,0,1,0,1,-1,5\n",
            "line 2: field 'sent_bytes' is -1",
        ),
        (
            "rank,iteration,elapsed_us,is_warmup,in_average,sent_bytes,processed_bytes\n",
            "0,0,1,0,1,1.5,5\n",
            "line 2: field 'sent_bytes' is '1.5', expected an integer",
        ),
        (
            "rank,iteration,elapsed_us,is_warmup,in_average,sent_bytes,processed_bytes\n",
            f"0,0,1,0,1,{2**64},5\n",
            "expected a uint64",
        ),
        (
            "rank,iteration,elapsed_us,is_warmup,in_average,sent_bytes,processed_bytes\n",
            "0,0,1,0,1,,5\n",
            "line 2: field 'sent_bytes' is '', expected an integer",
        ),
        (WORK_HEADER, "0,0,0.5,500,0,1,1000,400,0.002,9,kernel,1\n", "line 2: field 'sent_gbps' is 9"),
        (WORK_HEADER, "0,0,0.5,500,0,1,1000,400,,0.0008,kernel,1\n", "line 2: field 'processed_gbps' is empty"),
        (
            WORK_HEADER,
            "0,0,0.5,500,0,1,1000,400,x,0.0008,kernel,1\n",
            "line 2: field 'processed_gbps' is 'x', expected a number",
        ),
        (
            WORK_HEADER,
            "0,0,0,0,0,1,1000,400,0.002,,kernel,1\n",
            "line 2: field 'processed_gbps' is 0.002 but elapsed_ms is 0",
        ),
    ],
)
def test_each_work_column_refusal_names_file_line_and_field(tmp_path, header, body, message):
    path = write(tmp_path, header + body)
    with pytest.raises(LatencyCsvError) as err:
        parse_latency_csv(path)
    assert str(path) in str(err.value) and message in str(err.value)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["0.5", "0", "1e-3", "-1", "x"]),
            st.sampled_from(["0", "1000", "-5", "1.5", "", str(2**64 - 1), str(2**64), "abc"]),
            st.sampled_from(["0", "400", "-1", "", "9" * 30]),
            st.sampled_from(["", "0.002", "0", "nan", "inf", "x", "0.0008"]),
            st.sampled_from(["", "0.0008", "0", "-0.1", "y"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_wrong_values_in_the_work_columns_end_in_a_clear_error_or_consistent_bytes(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("work") / "dispatch_latency.csv"
    lines = [f"0,{i},{ms},0,1,{pb},{sb},{pg},{sg}" for i, (ms, pb, sb, pg, sg) in enumerate(rows)]
    path.write_text(
        "rank,iteration,elapsed_ms,is_warmup,in_average,processed_bytes,sent_bytes,processed_gbps,sent_gbps\n"
        + "\n".join(lines)
        + "\n"
    )
    try:
        table = parse_latency_csv(path)
    except LatencyCsvError as exc:
        assert str(path) in str(exc) and "line" in str(exc) and "field" in str(exc)
    else:
        work = table.work.merge(table.frame, on=["rank", "iteration"])
        assert (work["processed_bytes"] >= 0).all() and (work["sent_bytes"] >= 0).all()
        assert len(work) == len(rows)
