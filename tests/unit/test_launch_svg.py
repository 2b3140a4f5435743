"""The picture of the launch (report/launch_svg.py): a row per rank and launch, bars placed in the order of the times,
the cause's ranks highlighted, the ranks that matter kept in a big world, and durations only said when the clocks are
not established. Structure, not a snapshot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from dispatchprof.report.launch_svg import LEFT, launch_svg, nice_step

NS = "{http://www.w3.org/2000/svg}"


def rank_row(rank: int, node: int, arrival: float, end: float, release: float = 62.0) -> dict:
    return {
        "rank": rank,
        "node": node,
        "arrival_us": arrival,
        "barrier_release_us": release,
        "kernel_start_us": release + 2.0,
        "end_us": end,
        "barrier_wait_us": release - arrival,
        "kernel_us": end - release - 2.0,
    }


def launch(number: int, arrivals: list[float], ends: list[float], per_node: int = 2) -> dict:
    release = max(arrivals) + 3.0
    rows = [rank_row(r, r // per_node, a, e, release) for r, (a, e) in enumerate(zip(arrivals, ends))]
    last_arrival = max(range(len(rows)), key=lambda r: arrivals[r])
    last_end = max(range(len(rows)), key=lambda r: ends[r])
    return {
        "launch": number,
        "group_us": max(ends),
        "cost_us": max(arrivals),
        "last_arrival_rank": last_arrival,
        "last_end_rank": last_end,
        "ranks": rows,
    }


CAUSE = {"evidence": "late_arrival", "rank": 3, "node": None, "ranks": [3], "cost_us_per_launch": 40.0}
PICTURE = {
    "clocks": "corrected",
    "why": "node clocks corrected by the barrier kernel's ends",
    "cause": CAUSE,
    "time_in_kernel": "time in the kernel is not split",
    "typical": launch(7, [0.0, 1.0, 2.0, 40.0], [300.0, 301.0, 302.0, 303.0]),
    "costliest": launch(9, [0.0, 2.0, 1.0, 70.0], [330.0, 345.0, 332.0, 333.0]),
}


def panels(svg: str) -> list[list[ET.Element]]:
    """The rank rows of each launch, in order (a rank's row appears once per panel)."""
    rows = [g for g in ET.fromstring(svg).iter(f"{NS}g") if g.get("class") == "rank"]
    first = rows[0].get("data-rank")
    starts = [i for i, g in enumerate(rows) if g.get("data-rank") == first]
    return [rows[a:b] for a, b in zip(starts, starts[1:] + [len(rows)])]


def part(row: ET.Element, kind: str) -> ET.Element:
    (found,) = [e for e in row if e.get("class") == kind]
    return found


def right(rect: ET.Element) -> float:
    return float(rect.get("x")) + float(rect.get("width"))


def test_each_launch_has_a_row_per_rank_with_its_barrier_wait_and_kernel_bar():
    drawn = panels(launch_svg(PICTURE))
    assert len(drawn) == 2
    for rows in drawn:
        assert [int(g.get("data-rank")) for g in rows] == [0, 1, 2, 3]
        for g in rows:
            assert part(g, "barrier").tag == f"{NS}rect" and part(g, "kernel").tag == f"{NS}rect"


def test_the_highlighted_ranks_are_the_cause_s_ranks():
    for rows in panels(launch_svg(PICTURE)):
        assert [int(g.get("data-rank")) for g in rows if g.get("data-cause") == "true"] == [3]
        colours = {part(g, "kernel").get("fill") for g in rows if g.get("data-cause") == "true"}
        others = {part(g, "kernel").get("fill") for g in rows if g.get("data-cause") == "false"}
        assert colours.isdisjoint(others)


@pytest.mark.parametrize("which", [0, 1])
def test_positions_are_ordered_as_the_times(which):
    key = ("typical", "costliest")[which]
    rows = panels(launch_svg(PICTURE))[which]
    times = PICTURE[key]["ranks"]
    arrivals = [float(part(g, "arrival").get("x1")) for g in rows]
    ends = [right(part(g, "kernel")) for g in rows]
    assert sorted(range(4), key=lambda r: arrivals[r]) == sorted(range(4), key=lambda r: times[r]["arrival_us"])
    assert sorted(range(4), key=lambda r: ends[r]) == sorted(range(4), key=lambda r: times[r]["end_us"])
    for g in rows:  # each rank: arrival, then the barrier's release, then the kernel
        assert float(part(g, "arrival").get("x1")) == pytest.approx(float(part(g, "barrier").get("x")))
        assert right(part(g, "barrier")) <= float(part(g, "kernel").get("x"))
    # the same scale for both launches: a time is at the same x in either
    assert float(part(rows[0], "arrival").get("x1")) == pytest.approx(LEFT)


def test_who_arrives_and_ends_last_is_written_beside_their_bars():
    svg = launch_svg(PICTURE)
    rows = panels(svg)[1]
    notes = {
        int(g.get("data-rank")): "".join(t.text or "" for t in g.iter(f"{NS}text") if "last" in (t.text or ""))
        for g in rows
    }
    assert notes[3] == "arrives last" and notes[1] == "ends last" and notes[0] == ""


def test_a_big_world_shows_the_ranks_that_matter_and_says_how_many_are_left_out():
    world = 200
    arrivals = [float(r % 7) for r in range(world)]
    arrivals[150] = 90.0
    ends = [300.0 + (r % 5) for r in range(world)]
    ends[17] = 360.0
    big = {
        **PICTURE,
        "cause": {**CAUSE, "rank": 150, "ranks": [150]},
        "typical": launch(1, arrivals, ends, 8),
        "costliest": launch(2, arrivals, ends, 8),
    }
    svg = launch_svg(big, max_ranks=32)
    rows = panels(svg)[0]
    shown = [int(g.get("data-rank")) for g in rows]
    assert len(shown) <= 32 and shown == sorted(shown)
    assert {150, 17} <= set(shown)  # the cause, the last to arrive and the last to end
    notes = " ".join(t.text or "" for t in ET.fromstring(svg).iter(f"{NS}text") if t.get("class") == "note")
    assert f"{len(shown)} of {world} ranks shown" in notes and f"{world - len(shown)} left out" in notes


def test_without_clocks_durations_start_together_and_the_picture_says_why():
    def durations(lch: dict) -> dict:
        rows = [
            {**r, "arrival_us": None, "barrier_release_us": None, "kernel_start_us": None, "end_us": None}
            for r in lch["ranks"]
        ]
        return {**lch, "ranks": rows, "last_end_rank": None}

    picture = {
        **PICTURE,
        "clocks": "durations only",
        "why": "no barrier kernel",
        "typical": durations(PICTURE["typical"]),
    }
    picture["costliest"] = durations(PICTURE["costliest"])
    svg = launch_svg(picture)
    texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{NS}text") if t.get("class") == "durations-only"]
    assert texts and "no barrier kernel" in " ".join(texts)
    for rows, key in zip(panels(svg), ("typical", "costliest")):
        for g in rows:
            assert not [e for e in g if e.get("class") == "arrival"]  # no place on a clock
            assert float(part(g, "barrier").get("x")) == pytest.approx(LEFT)
        kernels = [float(part(g, "kernel").get("width")) for g in rows]
        truth = [r["kernel_us"] for r in picture[key]["ranks"]]
        assert [k / kernels[0] for k in kernels] == pytest.approx([t / truth[0] for t in truth], rel=1e-3)


def test_one_panel_when_the_typical_launch_is_the_costliest_and_nothing_without_a_launch():
    same = {**PICTURE, "costliest": PICTURE["typical"]}
    assert len(panels(launch_svg(same))) == 1
    assert launch_svg(None) == "" and launch_svg({**PICTURE, "typical": None}) == ""


def test_ticks_step_by_one_two_or_five():
    assert [nice_step(v) for v in (9.0, 330.0, 1200.0)] == [2.0, 100.0, 500.0]


def test_a_long_kernel_body_is_cut_out_of_the_axis_and_the_cut_says_how_long():
    long = {**PICTURE, "typical": launch(7, [0.0, 1.0, 2.0, 40.0], [1300.0, 1301.0, 1302.0, 1303.0])}
    long["costliest"] = launch(9, [0.0, 2.0, 1.0, 70.0], [1330.0, 1345.0, 1332.0, 1333.0])
    svg = launch_svg(long)
    root = ET.fromstring(svg)
    (cut,) = {t.text for t in root.iter(f"{NS}text") if t.get("class") == "cut"}
    assert cut.startswith("// ") and 1100 < float(cut.split()[1]) < 1300
    rows = panels(svg)[1]
    # the arrivals get the width: rank 3's 70 us lateness spans more than a fifth of the 710 px of the plot
    arrivals = [float(part(g, "arrival").get("x1")) for g in rows]
    assert arrivals[3] - arrivals[0] > 710 / 5
    ends = [right(part(g, "kernel")) for g in rows]
    assert sorted(range(4), key=lambda r: ends[r]) == sorted(
        range(4), key=lambda r: long["costliest"]["ranks"][r]["end_us"]
    )
    assert len([p for p in root.iter(f"{NS}polygon") if p.get("class") == "break"]) == 2  # one per launch


def test_a_short_kernel_body_keeps_one_unbroken_axis():
    short = {**PICTURE, "typical": launch(7, [0.0, 1.0, 2.0, 40.0], [60.0, 61.0, 62.0, 63.0])}
    short["costliest"] = launch(9, [0.0, 2.0, 1.0, 70.0], [90.0, 95.0, 92.0, 93.0])
    root = ET.fromstring(launch_svg(short))
    assert not [t for t in root.iter(f"{NS}text") if t.get("class") == "cut"]
    assert not [p for p in root.iter(f"{NS}polygon") if p.get("class") == "break"]
