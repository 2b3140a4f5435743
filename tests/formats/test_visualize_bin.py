"""visualize_data.bin decoding on hand-built files: block header, padding, CODE path, unknown types, damage."""

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.formats.visualize_bin import VisualizeBinError, decode_pc_sampling, read_blocks


def block(kind, payload, version=0x5A, path=None):
    pad = (-len(payload)) % 4
    content = payload + b"\0" * pad
    head = struct.pack("<QBBBB", len(content), kind, pad, version, 0x5A)
    return head + (path.encode().ljust(4096, b"\0") if path is not None else b"") + content


def js(obj):
    return json.dumps(obj).encode()


LINE = {
    "Line": 12,
    "Stall Sampling(All Samples)": {"Percent": 60.0, "Details": {"Scoreboard_Not_Ready": 0.5, "Active": 0.5}},
    "Stall Sampling(Not Issue)": {"Percent": 30.0, "Details": {"Scoreboard_Not_Ready": 1.0}},
}


def test_blocks_are_read_with_padding_removed_and_unknown_types_skipped(tmp_path):
    path = tmp_path / "visualize_data.bin"
    top = {"top_stall_reason_table": {"IBuf_Empty": 3, "Scoreboard_Not_Ready": 9}}
    path.write_bytes(
        block(0xF, js(top))
        + block(0x9, b'{"x":1}')
        + block(0x1, b"int main(){}", path="/src/k.cpp")
        + block(0x3, js({"Files": [{"File": "k.cpp", "Lines": [LINE]}]}))
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
    path.write_bytes(good + block(0x3, js({"Lines": [LINE]}))[:-5])
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
