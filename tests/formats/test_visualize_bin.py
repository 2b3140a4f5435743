"""visualize_data.bin decoding on hand-built files: block header, padding, CODE path, unknown types, damage."""

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.formats.visualize_bin import STATES, VisualizeBinError, decode_pc_sampling, read_blocks


def block(kind, payload, version=0x5A, path=None):
    pad = (-len(payload)) % 4
    content = payload + b"\0" * pad
    head = struct.pack("<QBBBB", len(content), kind, pad, version, 0x5A)
    return head + (path.encode().ljust(4096, b"\0") if path is not None else b"") + content


def js(obj):
    return json.dumps(obj).encode()


FIXTURE = Path(__file__).parents[1] / "fixtures/msopprof/pcsampling/visualize_data.bin"
LINE = {
    "Line": 12,
    "Stall Sampling(All Samples)": {"Percent": 0.6, "Details": {"Scoreboard_Not_Ready": 30, "Active": 30}},
    "Stall Sampling(Not Issue)": {"Percent": 0.5, "Details": {"Scoreboard_Not_Ready": 30}},
}
STALL_DTYPES = {"Lines": {"Stall Sampling(All Samples)": 100, "Stall Sampling(Not Issue)": 100}}


def file_api(lines, dtype=STALL_DTYPES):
    return js({"Cores": ["ALL"], "Files Dtype": dtype, "Files": [{"Source": "k.cpp", "Lines": lines}]})


def test_blocks_are_read_with_padding_removed_and_unknown_types_skipped(tmp_path):
    path = tmp_path / "visualize_data.bin"
    top = {"top_stall_reason_table": {"IBuf_Empty": 3, "Scoreboard_Not_Ready": 9}}
    path.write_bytes(
        block(0xF, js(top))
        + block(0x9, b'{"x":1}')
        + block(0x1, b"int main(){}", path="/src/k.cpp")
        + block(0x3, file_api([LINE]))
    )
    blocks = read_blocks(path)
    assert [b.kind for b in blocks] == [0xF, 0x9, 0x1, 0x3]
    assert blocks[2].path == "/src/k.cpp" and blocks[2].content == b"int main(){}"
    pc = decode_pc_sampling(path)
    assert pc.top_stall == {"IBuf_Empty": 3.0, "Scoreboard_Not_Ready": 9.0}
    assert pc.lines[0]["Line"] == 12 and pc.lines[0]["File"] == "k.cpp"
    assert pc.skipped_types == [0x9, 0x1]


def test_no_top_stall_block_means_no_samples(tmp_path):
    path = tmp_path / "visualize_data.bin"
    path.write_bytes(block(0x5, js({"Op Name": "k"})))
    assert decode_pc_sampling(path).top_stall is None


def test_a_truncated_block_is_an_error_naming_the_offset(tmp_path):
    path = tmp_path / "visualize_data.bin"
    good = block(0xF, js({"top_stall_reason_table": {}}))
    path.write_bytes(good + block(0x3, file_api([LINE]))[:-5])
    with pytest.raises(VisualizeBinError, match=rf"byte {len(good)}: block of type 0x3 declares"):
        read_blocks(path)
    path.write_bytes(good[:7])
    with pytest.raises(VisualizeBinError, match="truncated block header"):
        read_blocks(path)


def test_non_json_content_is_an_error(tmp_path):
    path = tmp_path / "visualize_data.bin"
    path.write_bytes(block(0xF, b"\xff\xfe not json"))
    with pytest.raises(VisualizeBinError, match="TopStallReason block is not JSON"):
        decode_pc_sampling(path)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_end_in_a_clear_error_or_a_decoding(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("v") / "visualize_data.bin"
    path.write_bytes(blob)
    try:
        decode_pc_sampling(path)
    except VisualizeBinError as exc:
        assert str(path) in str(exc)


def test_the_format_doc_fixture_yields_shares_as_fractions_of_all_samples():
    pc = decode_pc_sampling(FIXTURE)
    assert [r["Line"] for r in pc.lines] == [12, 20, 31]
    assert pc.lines[0]["File"] == "/home/user/deepep/kernels/elastic_dispatch.cpp"  # the writer names it "Source"
    # CUSTOM_PERCENTAGE: Percent is already the ratio line samples / all samples (70 of 200), not 0..100
    assert [r["share"] for r in pc.lines] == pytest.approx([0.35, 0.305, 0.175])
    assert sum(r["share"] for r in pc.lines) == pytest.approx(166 / 200)  # 34 samples map to no line
    assert [r["not_issue_share"] for r in pc.lines] == pytest.approx([50 / 150, 41 / 150, 30 / 150])
    # Details are counts per state; the mix is each record's own samples
    counts = {"IBuf_Empty": 10, "Scoreboard_Not_Ready": 40, "Active": 20}
    assert pc.lines[0]["mix"] == pytest.approx({s: counts.get(s, 0) / 70 for s in STATES})
    assert "Active" not in pc.lines[0]["not_issue_mix"] and pc.lines[0]["not_issue_mix"][
        "Scoreboard_Not_Ready"
    ] == pytest.approx(40 / 50)
    assert [r["Address"] for r in pc.instructions] == ["0x10f86a00", "0x10f86a40"]
    assert pc.instructions[1]["share"] == pytest.approx(0.305)
    assert sum(pc.top_stall.values()) == 150


@pytest.mark.parametrize(("dtype", "percent"), [(100, 0.35), (4, 35.0)])
def test_a_percentage_dtype_is_read_on_its_own_scale_and_never_scaled_twice(tmp_path, dtype, percent):
    path = tmp_path / "visualize_data.bin"
    line = {"Line": 3, "Stall Sampling(All Samples)": {"Percent": percent, "Details": {"Active": 7}}}
    path.write_bytes(block(0x3, file_api([line], {"Lines": {"Stall Sampling(All Samples)": dtype}})))
    assert decode_pc_sampling(path).lines[0]["share"] == pytest.approx(0.35)


@pytest.mark.parametrize(
    ("dtype", "line", "message"),
    [
        ({}, LINE, r"'Files Dtype'\['Stall Sampling\(All Samples\)'\] is None, expected 100 \(CUSTOM_PERCENTAGE"),
        ({"Lines": {"Stall Sampling(All Samples)": 2, "Stall Sampling(Not Issue)": 100}}, LINE, r"is 2, expected 100"),
        (
            STALL_DTYPES,
            {**LINE, "Stall Sampling(All Samples)": {"Percent": 35.0, "Details": {}}},
            r"Percent is 35.0, expected a number in \[0, 1\]",
        ),
        (STALL_DTYPES, {**LINE, "Stall Sampling(All Samples)": {"Percent": "x", "Details": {}}}, r"Percent is 'x'"),
        (
            STALL_DTYPES,
            {**LINE, "Stall Sampling(All Samples)": {"Percent": 0.1, "Details": {"Active": -1}}},
            r"Details .* non-negative sample counts",
        ),
        (
            STALL_DTYPES,
            {**LINE, "Stall Sampling(Not Issue)": [1, 2]},
            r"'Stall Sampling\(Not Issue\)' is list, expected an object",
        ),
    ],
)
def test_stall_columns_without_a_known_unit_or_with_bad_numbers_are_errors_naming_the_field(
    tmp_path, dtype, line, message
):
    path = tmp_path / "visualize_data.bin"
    path.write_bytes(block(0x3, file_api([line], dtype)))
    with pytest.raises(VisualizeBinError, match=message) as caught:
        decode_pc_sampling(path)
    assert str(path) in str(caught.value) and "FileApi block" in str(caught.value)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 300) | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["Percent", "Details", "Active", "Line", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["Stall Sampling(All Samples)", "Stall Sampling(Not Issue)", "Line", "File"]),
        JSON_VALUES,
        max_size=4,
    ),
    st.one_of(JSON_VALUES, st.just(STALL_DTYPES)),
)
def test_arbitrary_stall_records_end_in_a_clear_error_or_fractions(tmp_path_factory, record, dtype):
    path = tmp_path_factory.mktemp("v") / "visualize_data.bin"
    path.write_bytes(block(0x3, js({"Files Dtype": dtype, "Files": [{"Source": "k.cpp", "Lines": [record]}]})))
    try:
        pc = decode_pc_sampling(path)
    except VisualizeBinError as exc:
        assert str(path) in str(exc)
        return
    for r in pc.lines:
        assert 0.0 <= r["share"] <= 1.0 and 0.0 <= r["not_issue_share"] <= 1.0
        assert all(0.0 <= v <= 1.0 for v in (*r["mix"].values(), *r["not_issue_mix"].values()))
