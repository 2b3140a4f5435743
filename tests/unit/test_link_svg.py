"""The links section's pictures: one cell per node pair with its bytes, bars proportional to the times."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from dispatchprof.report.link_svg import PAIR_TIME_MISSING, bound_bars_svg, node_pair_matrix, node_pairs_svg

SVG = "{http://www.w3.org/2000/svg}"


def cells(svg: str) -> dict[tuple[int, int], str]:
    """(source, destination) -> the <title> of each node-pair cell."""
    found = {}
    for rect in ET.fromstring(svg).iter(f"{SVG}rect"):
        if rect.get("class") == "pair":
            title = rect.find(f"{SVG}title").text
            src, dst = title.split(":")[0].replace("node ", "").split(" -> ")
            found[(int(src), int(dst))] = title
    return found


@pytest.mark.parametrize("n", [2, 3])
def test_the_node_pair_matrix_has_one_cell_per_pair_with_its_bytes(n):
    matrix = np.arange(1, n * n + 1, dtype=float).reshape(n, n) * 1000
    svg = node_pairs_svg(matrix, simulated=False)
    found = cells(svg)
    assert set(found) == {(i, j) for i in range(n) for j in range(n)}
    for (i, j), title in found.items():
        assert title == f"node {i} -> node {j}: {int(matrix[i, j]):,} B per launch"
    assert PAIR_TIME_MISSING in svg and "source node" in svg and "destination node" in svg and "simulated" not in svg


def test_the_matrix_sums_the_classes_per_node_pair_and_the_picture_says_simulated():
    by_class = {
        "intra_node": {"per_node_pair": {"0->0": 5, "1->1": 7}},
        "inter_node": {"per_node_pair": {"0->1": 11, "1->0": 13}},
    }
    matrix = node_pair_matrix(by_class)
    assert matrix.tolist() == [[5, 11], [13, 7]]
    assert "(simulated)" in node_pairs_svg(matrix, simulated=True)


def test_the_bars_are_proportional_to_the_times_and_the_binding_class_is_marked():
    bandwidth = {
        "links": {"intra_node": {"bound_us": 100.0}, "inter_node": {"bound_us": 400.0}},
        "sets_bound": "inter_node",
    }
    measured = {"median": 800.0, "median_ci95": [760.0, 850.0]}
    root = ET.fromstring(bound_bars_svg(bandwidth, measured, simulated=True))
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]
    widths = [float(b.get("width")) for b in bars]
    assert [float(b.get("data-us")) for b in bars] == [800.0, 100.0, 400.0]
    assert widths[1] / widths[0] == pytest.approx(100 / 800, rel=1e-3) and widths[2] / widths[0] == pytest.approx(
        400 / 800, rel=1e-3
    )
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "inter-node bound (sets the bound)" in labels and "intra-node bound" in labels
    assert any("(us)" in (t or "") for t in labels) and "(simulated)" in root.find(f"{SVG}title").text
    whisker = next(root.iter(f"{SVG}line"))
    x0 = float(bars[0].get("x"))
    assert (float(whisker.get("x2")) - x0) / widths[0] == pytest.approx(850 / 800, rel=1e-3)


def test_a_class_without_a_peak_is_named_without_a_bar():
    bandwidth = {"links": {"intra_node": {"bound_us": 0.0}, "inter_node": {"bound_us": None}}, "sets_bound": None}
    svg = bound_bars_svg(bandwidth, {"median": 50.0, "median_ci95": [45.0, 55.0]}, simulated=False)
    assert "no bound: peak not configured" in svg and "simulated" not in svg
