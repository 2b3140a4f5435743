"""dispatch_latency.csv read in pieces (issue 46): any piece size gives the table, or the refusal, of the file read
whole, and a bad value in any piece is named at its true line."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.formats.latency_csv import LatencyCsvError, parse_latency_csv

WHOLE = 2**30  # one piece: the file read whole
HEADERS = {
    "full": "rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average,measurement,clock_hz",
    "work": (
        "rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average,"
        "processed_bytes,sent_bytes,processed_gbps,sent_gbps,measurement,clock_hz"
    ),
    "legacy": "rank,iteration,elapsed_us,is_warmup,in_average",
}
# (field, bad value, what the refusal says): values pyarrow refuses to type and values it types that a check refuses
BAD = [
    ("rank", "zero", "field 'rank' is 'zero', expected an integer"),
    ("rank", "-1", "field 'rank' is -1, expected a non-negative integer"),
    ("rank", "0x1", "field 'rank' is '0x1', expected an integer"),
    ("iteration", "1.5", "field 'iteration' is '1.5', expected an integer"),
    ("elapsed_us", "nan", "field 'elapsed_us' is nan"),
    ("elapsed_us", "-3", "field 'elapsed_us' is -3"),
    ("elapsed_us", "", "field 'elapsed_us' is '', expected a number"),
    ("is_warmup", "2", "field 'is_warmup' is '2', expected 0 or 1"),
    ("in_average", "00", "field 'in_average' is '00', expected 0 or 1"),
    ("elapsed_us", "1e9", "above stats.max_plausible_us"),
    ("measurement", "event", "field 'measurement' is 'event' but line 2 has 'kernel'"),  # never on the first row
]


def row_fields(form: str, rank: int, iteration: int, us: float, warmup: bool, quoted: bool) -> list[str]:
    ms = us / 1000
    fields = {"rank": str(rank), "iteration": str(iteration), "elapsed_ms": repr(ms), "elapsed_us": repr(us)}
    fields |= {"is_warmup": str(int(warmup)), "in_average": str(int(not warmup))}
    processed, sent = 1000 * (rank + 1), 400 * (iteration + 1)
    fields |= {
        "processed_bytes": str(processed),
        "sent_bytes": str(sent),
        "processed_gbps": repr(processed / (ms * 1e6)),
        "sent_gbps": repr(sent / (ms * 1e6)),
    }
    fields |= {"measurement": '"kernel"' if quoted else "kernel", "clock_hz": "50000000"}
    return [fields[name] for name in HEADERS[form].split(",")]


@st.composite
def latency_files(draw, bad: bool) -> tuple[str, int | None, str | None]:
    """A latency file's text (every rank makes the same calls), with one bad value where ``bad``: the text, the
    bad value's line and what its refusal says."""
    form = draw(st.sampled_from(sorted(HEADERS)))
    ranks, iterations = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    quoted = draw(st.booleans()) and form != "legacy"  # a quoted field: the csv module's records, not lines
    rows = []
    for iteration in range(iterations):
        for rank in range(ranks):
            us = draw(st.sampled_from([0.5, 20.0, 312.25, 99.125]))
            rows.append(row_fields(form, rank, iteration, us, iteration < 1, quoted))
    line, message = None, None
    if bad:
        field, value, message = draw(
            st.sampled_from(
                [b for b in BAD if b[0] in HEADERS[form].split(",") and (b[0] != "measurement" or len(rows) > 1)]
            )
        )
        index = draw(st.integers(int(field == "measurement"), len(rows) - 1))
        rows[index][HEADERS[form].split(",").index(field)] = value
        line = index + 2
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return HEADERS[form] + newline + "".join(",".join(r) + newline for r in rows), line, message


def outcome(path, chunk_bytes: int):
    try:
        return parse_latency_csv(path, max_us=1e6, chunk_bytes=chunk_bytes)
    except LatencyCsvError as exc:
        return str(exc)


def assert_same(chunked, whole) -> None:
    if isinstance(whole, str):
        assert chunked == whole
        return
    assert not isinstance(chunked, str), chunked
    pd.testing.assert_frame_equal(chunked.frame, whole.frame)
    assert (chunked.measurement, chunked.clock_hz) == (whole.measurement, whole.clock_hz)
    if whole.work is None:
        assert chunked.work is None
    else:
        pd.testing.assert_frame_equal(chunked.work, whole.work)


@settings(max_examples=200, deadline=None)
@given(latency_files(bad=False) | latency_files(bad=True), st.data())
def test_any_piece_size_gives_the_table_or_refusal_of_the_whole_file(tmp_path_factory, case, data):
    text, _, _ = case
    path = tmp_path_factory.mktemp("pieces") / "dispatch_latency.csv"
    path.write_bytes(text.encode())
    chunk_bytes = data.draw(st.integers(1, len(text) + 1), label="chunk_bytes")  # boundaries anywhere, a bad line's too
    assert_same(outcome(path, chunk_bytes), outcome(path, WHOLE))


@settings(max_examples=200, deadline=None)
@given(latency_files(bad=True), st.data())
def test_a_bad_value_in_any_piece_is_named_at_its_true_line(tmp_path_factory, case, data):
    text, line, message = case
    path = tmp_path_factory.mktemp("bad") / "dispatch_latency.csv"
    path.write_bytes(text.encode())
    chunk_bytes = data.draw(st.integers(1, len(text) + 1), label="chunk_bytes")
    with pytest.raises(LatencyCsvError) as err:
        parse_latency_csv(path, max_us=1e6, chunk_bytes=chunk_bytes)
    assert f"{path}: line {line}: " in str(err.value) and message in str(err.value)


def test_a_duplicate_before_a_bad_value_in_a_later_piece_is_named_first(tmp_path):
    """The reader names the first thing wrong in file order: a repeated (rank, iteration) on line 3 before a bad value
    on line 5, wherever the pieces end."""
    rows = ["0,0,0.1,100,0,1", "0,0,0.1,100,0,1", "1,0,0.1,100,0,1", "1,1,0.1,-5,0,1"]
    path = tmp_path / "dispatch_latency.csv"
    path.write_text("rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average\n" + "\n".join(rows) + "\n")
    for chunk_bytes in (1, 20, 40, WHOLE):
        with pytest.raises(LatencyCsvError, match="line 3: field 'iteration': rank 0 iteration 0 duplicates line 2"):
            parse_latency_csv(path, chunk_bytes=chunk_bytes)


def test_rank_beyond_int64_is_refused_naming_line_and_field(tmp_path):
    path = tmp_path / "dispatch_latency.csv"
    path.write_text(f"rank,iteration,elapsed_us,is_warmup,in_average\n{2**63},0,1,0,1\n")
    with pytest.raises(
        LatencyCsvError,
        match=r"line 2: field 'rank' is 9223372036854775808, expected an integer of at most 9223372036854775807",
    ):
        parse_latency_csv(path)
