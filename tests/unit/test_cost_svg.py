"""The cost account's charts: bars in proportion to the costs, whiskers at the CIs, the causes' ranks marked."""

import xml.etree.ElementTree as ET

import pytest

from dispatchprof.report.cost_svg import causes_svg, offsets_svg

NS = "{http://www.w3.org/2000/svg}"
CAUSES = [
    {
        "evidence": "late_arrival",
        "rank": 5,
        "node": None,
        "cost_us_per_launch": 20.0,
        "cost_ci_us": [15.0, 25.0],
        "cost_timed_us_per_launch": 0.0,
    },
    {
        "evidence": "own_work",
        "rank": 2,
        "node": None,
        "cost_us_per_launch": 5.0,
        "cost_ci_us": [4.0, 6.0],
        "cost_timed_us_per_launch": 10.0,
    },
]


def test_the_causes_chart_draws_each_scope_in_proportion_with_its_ci():
    root = ET.fromstring(causes_svg(CAUSES))
    bars = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
    widths = [float(r.get("width")) for r in bars]
    assert len(bars) == 4  # two scopes per cause
    assert widths[0] == pytest.approx(4 * widths[2]) and widths[1] == 0 and widths[3] == pytest.approx(2 * widths[2])
    labels = [t.text for t in root.iter(f"{NS}text")]
    assert "rank 5: late arrival" in labels and "rank 2: own work" in labels
    whiskers = [line for line in root.iter(f"{NS}line") if line.get("stroke") == "#24292f"]
    assert len(whiskers) == 2 and float(whiskers[0].get("x2")) - float(whiskers[0].get("x1")) == pytest.approx(
        widths[0] / 2
    )
    assert causes_svg([]) == ""


def test_a_cost_that_is_only_bounded_is_drawn_as_a_dashed_outline_out_to_its_bound():
    bounded = [{**CAUSES[0], "cost_bound_us": [0.0, 60.0]}, CAUSES[1]]
    root = ET.fromstring(causes_svg(bounded))
    dashed = [r for r in root.iter(f"{NS}rect") if r.get("stroke-dasharray")]
    outline = [r for r in dashed if r.find(f"{NS}title") is not None]
    (estimate,) = [
        r
        for r in root.iter(f"{NS}rect")
        if r.find(f"{NS}title") is not None and r.find(f"{NS}title").text == "20.00 us"
    ]
    # the scale now reaches the bound: the outline is three times the estimate's bar, and says both
    assert len(outline) == 1 and float(outline[0].get("width")) == pytest.approx(3 * float(estimate.get("width")))
    assert (
        "at most 60.00 us" in outline[0].find(f"{NS}title").text
        and "estimate 20.00 us" in outline[0].find(f"{NS}title").text
    )
    assert (
        "at most (no pure barrier)" in [t.text for t in root.iter(f"{NS}text")]
        and estimate.get("fill-opacity") == "0.45"
    )
    assert not any(r.get("stroke-dasharray") for r in ET.fromstring(causes_svg(CAUSES)).iter(f"{NS}rect"))


def test_the_offsets_chart_marks_the_causes_ranks_and_keeps_the_latest_at_scale():
    offsets = {"ranks": list(range(100)), "arrival_us_median": [0.0] * 99 + [50.0], "end_us_median": [1.0] * 100}
    root = ET.fromstring(offsets_svg(offsets, marked=[99], max_ranks=10))
    labels = [t.text for t in root.iter(f"{NS}text")]
    assert "rank 99 *" in labels and sum(1 for t in labels if t and t.startswith("rank ")) == 10
    assert any("10 of 100 ranks" in (t or "") for t in labels)
