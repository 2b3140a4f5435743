"""The report's heat maps without matplotlib: one PNG pixel per cell coloured by its value, labels and role bands as
escaped SVG text, a size that does not grow by an element per cell, and no matplotlib import for them."""

import base64
import math
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dispatchprof
from dispatchprof.report.heatmap_svg import NO_VALUE_GREY, NO_VALUE_NOTE, VIRIDIS_ANCHORS, heatmap_svg

SVG = "{http://www.w3.org/2000/svg}"
FIRST, LAST = tuple(VIRIDIS_ANCHORS[0].astype(int)), tuple(VIRIDIS_ANCHORS[-1].astype(int))


def decode_png(data: bytes) -> np.ndarray:
    """The pixels of an 8-bit RGB, non-interlaced PNG whose rows all use filter 0 (what the heat map writes): chunks
    parsed and their CRCs checked, IDAT inflated, the filter byte of each row stripped."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour_type, interlace) == (8, 2, 0)
    scanlines = np.frombuffer(zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT")), np.uint8)
    scanlines = scanlines.reshape(height, 1 + 3 * width)
    assert (scanlines[:, 0] == 0).all()
    return scanlines[:, 1:].reshape(height, width, 3)


def parsed(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def cell_pixels(svg: str) -> np.ndarray:
    """The heat map's cells: the one image drawn pixelated (the colour bar's strip is smooth)."""
    (cells,) = [i for i in parsed(svg).iter(f"{SVG}image") if "pixelated" in i.get("style", "")]
    assert cells.get("preserveAspectRatio") == "none"
    prefix = "data:image/png;base64,"
    assert cells.get("href").startswith(prefix)
    return decode_png(base64.b64decode(cells.get("href")[len(prefix) :]))


def texts(svg: str) -> list[str]:
    return [t.text for t in parsed(svg).iter(f"{SVG}text")]


def grid(values, rows=None, columns=None, **extra) -> dict:
    rows = rows if rows is not None else [str(r) for r in range(len(values))]
    columns = columns if columns is not None else [str(c) for c in range(len(values[0]) if values else 0)]
    return {"rows": rows, "columns": columns, "values": values, "aggregation": "none", **extra}


def on_the_colour_map(share: float) -> tuple[int, ...]:
    """The expected colour, by its own definition: each channel interpolated between 17 evenly spaced anchors."""
    return tuple(
        round(float(np.interp(share, np.linspace(0, 1, len(VIRIDIS_ANCHORS)), VIRIDIS_ANCHORS[:, c]))) for c in range(3)
    )


def test_each_cell_is_one_pixel_coloured_by_its_value_min_first_anchor_max_last_nan_grey():
    values = [[0.0, 8.0, 16.0], [None, 3.3, float("nan")]]
    pixels = cell_pixels(heatmap_svg(grid(values), "t", "launch"))
    assert pixels.shape == (2, 3, 3)
    assert tuple(pixels[0, 0]) == FIRST and tuple(pixels[0, 2]) == LAST
    assert tuple(pixels[0, 1]) == tuple(VIRIDIS_ANCHORS[8].astype(int))  # 8 of 0..16: exactly the middle anchor
    assert tuple(pixels[1, 0]) == NO_VALUE_GREY and tuple(pixels[1, 2]) == NO_VALUE_GREY
    assert np.abs(pixels[1, 1].astype(int) - on_the_colour_map(3.3 / 16)).max() <= 1  # between anchors 3 and 4


def test_labels_title_and_role_bands_are_present_and_escaped():
    bands = [{"role": "<x&y>", "first": 0, "last": 1}, {"role": "Send", "first": 2, "last": 3}]
    values = [[1.0, 2.0, 3.0, 4.0], [5.0, None, 7.0, 8.0]]
    svg = heatmap_svg(
        grid(values, rows=["0-3", "4-7"], aggregation="max over bins", unit="us"),
        "Busy <time> & more",
        "AIV index",
        bands,
    )
    shown = texts(svg)
    assert "<x&y>" in shown and "Send" in shown and "&lt;x&amp;y&gt;" in svg and "<x&y>" not in svg
    assert "Busy <time> & more" in shown and parsed(svg).find(f"{SVG}title").text == "Busy <time> & more"
    assert {"0-3", "4-7", "0", "3", "AIV index", "rank (binned: max)", "us", NO_VALUE_NOTE} <= set(shown)
    assert "1" in shown and "8" in shown  # the colour bar runs from the finite min to max
    # A white line after the first band only: the last band ends with the plot.
    assert len([line for line in parsed(svg).iter(f"{SVG}line") if line.get("stroke") == "white"]) == 1


def test_an_unbinned_grid_says_rank_without_binned_and_a_full_grid_has_no_grey_note():
    shown = texts(heatmap_svg(grid([[1.0, 2.0]]), "t", "launch"))
    assert "rank" in shown and "rank (binned: max)" not in shown and NO_VALUE_NOTE not in shown


def test_a_grid_without_a_finite_value_renders_all_grey_without_a_scale():
    svg = heatmap_svg(
        grid([[None, None], [None, float("nan")]]), "nothing", "launch", [{"role": "A", "first": 0, "last": 1}]
    )
    assert (cell_pixels(svg).reshape(-1, 3) == NO_VALUE_GREY).all()
    assert NO_VALUE_NOTE in texts(svg) and "A" in texts(svg)


def test_a_one_cell_grid_renders_in_the_first_colour_with_its_value_on_the_bar():
    svg = heatmap_svg(grid([[5.0]]), "one", "launch")
    assert cell_pixels(svg).tolist() == [[list(FIRST)]]  # min == max: the low end, as matplotlib's Normalize gives
    assert "5" in texts(svg)


def test_a_grid_without_cells_says_so_instead_of_an_image():
    svg = heatmap_svg({"rows": [], "columns": [], "values": []}, "empty", "launch")
    assert list(parsed(svg).iter(f"{SVG}image")) == [] and any("no cells" in t for t in texts(svg))


def test_2048_ranks_by_100_bins_thin_the_labels_and_add_no_element_per_cell():
    rng = np.random.default_rng(7)
    values = rng.lognormal(3, 1, size=(2048, 100)).round(3)
    values[rng.random(values.shape) < 0.05] = np.nan
    listed = [[None if math.isnan(v) else v for v in row] for row in values.tolist()]
    bands = [{"role": f"role{k}", "first": 25 * k, "last": 25 * k + 24} for k in range(4)]
    svg = heatmap_svg(grid(listed), "big", "AIV index", bands)
    assert cell_pixels(svg).shape == (2048, 100, 3)
    root = parsed(svg)
    assert sum(1 for _ in root.iter()) < 120  # labels (32 rows, 25 columns), bands and the bar: never one per cell
    row_labels = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end" and not t.get("transform")]
    column_labels = [
        t.text for t in root.iter(f"{SVG}text") if "rotate" in t.get("transform", "") and t.get("text-anchor") == "end"
    ]
    assert row_labels == [str(r) for r in range(0, 2048, 64)] and column_labels == [str(c) for c in range(0, 100, 4)]
    # Everything but the cells' pixels is a few kB; the pixels cost at most their base64 (4 bytes per 3).
    assert len(svg) <= 4 * (2048 * 101 * 3) // 3 + 20_000
    cells_uri = next(i for i in root.iter(f"{SVG}image") if "pixelated" in i.get("style", "")).get("href")
    assert len(svg) - len(cells_uri) < 20_000


CELL = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e6, max_value=1e6),
    st.sampled_from([0.0, -0.0, 1e308, -1e308]),
)
LABEL = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)  # XML 1.0 has no control characters


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12), st.integers(0, 12), st.data())
def test_any_grid_gives_well_formed_svg_and_a_png_of_its_shape(n_rows, n_columns, data):
    values = [[data.draw(CELL) for _ in range(n_columns)] for _ in range(n_rows)]
    rows = data.draw(st.lists(LABEL, min_size=n_rows, max_size=n_rows))
    columns = data.draw(st.lists(LABEL, min_size=n_columns, max_size=n_columns))
    bands = data.draw(
        st.lists(
            st.fixed_dictionaries({"role": LABEL, "first": st.integers(-3, 15), "last": st.integers(-3, 15)}),
            max_size=3,
        )
    )
    svg = heatmap_svg(
        grid(values, rows, columns, aggregation=data.draw(st.sampled_from(["none", "max"]))),
        data.draw(LABEL),
        data.draw(LABEL),
        bands,
    )
    parsed(svg)
    if not n_rows * n_columns:
        return
    pixels = cell_pixels(svg)
    assert pixels.shape == (n_rows, n_columns, 3)
    finite = np.array([[v is not None and math.isfinite(v) for v in row] for row in values])
    grey = (pixels == NO_VALUE_GREY).all(axis=2)
    assert (grey == ~finite).all()  # grey marks exactly the cells without a finite value
    if finite.any():
        numbers = np.array([[v if f else np.nan for v, f in zip(row, frow)] for row, frow in zip(values, finite)])
        low, high = np.nanmin(numbers), np.nanmax(numbers)
        assert tuple(pixels[np.unravel_index(np.nanargmin(numbers), numbers.shape)]) == FIRST
        if high > low:
            assert tuple(pixels[np.unravel_index(np.nanargmax(numbers), numbers.shape)]) == LAST


def test_the_report_figures_without_pc_sampling_import_no_matplotlib(tmp_path):
    scripts = Path(dispatchprof.__file__).resolve().parents[1]
    program = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(scripts)!r})
from dispatchprof.report.figures import render_figures
heat = {{"rows": ["0", "1"], "columns": ["0", "1", "2"], "values": [[1.0, None, 3.0], [4.0, 5.0, 6.0]], "aggregation": "none"}}
timeline = {{"stats": {{"entry_wait_heatmap": {{**heat, "what": "barrier kernel duration", "unit": "us"}}}}}}
pmu = {{"heatmaps": {{"busy_us": heat, "no_pipe_us": heat, "role_bands": [{{"role": "A", "first": 0, "last": 2}}]}}}}
render_figures(timeline, pmu, None, Path({str(tmp_path / "figures")!r}))
assert all(v.startswith("<svg") for v in (timeline["entry_wait_svg"], pmu["busy_svg"], pmu["no_pipe_svg"]))
print("matplotlib" in sys.modules)
pcsampling = {{"per_role": {{"A": {{"stalls": {{"wait": 0.75, "fetch": 0.25}}}}}}}}
render_figures(None, None, pcsampling, Path({str(tmp_path / "figures")!r}))
print("matplotlib" in sys.modules, pcsampling["per_role_img"][:26], sorted(p.name for p in Path({str(tmp_path / "figures")!r}).iterdir()))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    # The heat maps alone leave matplotlib unimported; the stall-reason bars (PC sampling) still use it.
    # The stall-reason chart is an SVG file beside report.md, embedded in report.html as a data: URI.
    assert result.stdout.split("\n")[:2] == [
        "False",
        "True data:image/svg+xml;base64, ['pcsampling_stalls_per_role.svg']",
    ]


def test_control_characters_in_labels_are_dropped_so_the_svg_stays_xml():
    grid = {"rows": ["rank\x01 0"], "columns": ["l\x1f0"], "values": [[1.0]], "aggregation": "none"}
    svg = heatmap_svg(grid, "title\x07", "x\x00label")
    root = ET.fromstring(svg)  # XML 1.0 refuses these characters: parsing is the check
    assert "rank 0" in svg and "l0" in svg and "xlabel" in svg and root.tag.endswith("svg")
