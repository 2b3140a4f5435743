from pathlib import Path

import pytest

from dispatchprof.analysis.pcsampling import coverage, function_at, hot_lines, stall_tables
from dispatchprof.formats.visualize_bin import PcSampling, decode_pc_sampling

FIXTURE = Path(__file__).parents[1] / "fixtures/msopprof/pcsampling/visualize_data.bin"


def rec(line, share, mix, file="k.cpp"):
    """A line as the parser yields it: share of all samples and the state mix of its own samples, both fractions."""
    return {"File": file, "Line": line, "share": share, "mix": mix, "not_issue_share": 0.0, "not_issue_mix": {}}


def test_the_two_denominators_are_kept_apart():
    lines = [
        rec(10, 0.75, {"Active": 0.6, "Scoreboard_Not_Ready": 0.4}),
        rec(20, 0.25, {"Active": 0.2, "IBuf_Empty": 0.8}),
    ]
    pc = PcSampling({"Scoreboard_Not_Ready": 30.0, "IBuf_Empty": 20.0}, lines, [], [])
    tables = stall_tables(pc)
    assert tables["all_samples"]["Active"] == pytest.approx(0.75 * 0.6 + 0.25 * 0.2)
    assert tables["all_samples"]["Scoreboard_Not_Ready"] == pytest.approx(0.3)
    assert "Active" not in tables["not_issue"]
    assert tables["not_issue"]["Scoreboard_Not_Ready"] == pytest.approx(0.6) and tables["not_issue"][
        "IBuf_Empty"
    ] == pytest.approx(0.4)


def test_hot_lines_are_mapped_to_the_enclosing_simt_function(tmp_path):
    (tmp_path / "k.cpp").write_text(
        "// header\n__simt_vf__ void buildRemoteWqeDesc(GM_ADDR a)\n{\n    x();\n}\nvoid other(int a)\n{\n    y();\n}\n"
    )
    pc = PcSampling(
        {}, [rec(4, 0.10, {"Active": 0.1, "Resource_conflict": 0.9}), rec(8, 0.50, {"Active": 1.0})], [], []
    )
    rows = hot_lines(pc, tmp_path)
    assert [(r["line"], r["function"]) for r in rows] == [(8, None), (4, "buildRemoteWqeDesc")]
    assert rows[1]["top_stall"] == "Resource_conflict"
    assert function_at(tmp_path / "missing.cpp", 3) is None


def test_ranks_are_averaged_over_the_ranks_with_samples_and_a_hot_line_counts_the_ranks_that_saw_it():
    from dispatchprof.analysis.pcsampling import aggregate

    a = PcSampling(
        {"Scoreboard_Not_Ready": 30.0, "IBuf_Empty": 10.0},
        [rec(10, 0.60, {"Active": 0.5, "Scoreboard_Not_Ready": 0.5}), rec(20, 0.40, {"IBuf_Empty": 1.0})],
        [],
        [],
    )
    b = PcSampling(
        {"Scoreboard_Not_Ready": 10.0, "IBuf_Empty": 30.0}, [rec(10, 0.20, {"Scoreboard_Not_Ready": 1.0})], [], []
    )
    silent = PcSampling(None, [], [], [])
    merged = aggregate([(0, a), (1, b), (2, silent)], repo=None)
    assert merged["stalls"]["not_issue"]["Scoreboard_Not_Ready"] == pytest.approx(
        (0.75 + 0.25) / 2
    )  # rank 2 has no samples: left out
    assert merged["per_rank"]["2"]["samples"] is False and merged["per_rank"]["2"]["not_issue"] is None
    line10 = next(e for e in merged["hot_lines"] if e["line"] == 10)
    # rank 2 has no samples, hence no denominator: the mean is over ranks 0 and 1, not diluted by the silent rank
    assert line10["ranks"] == 2 and line10["share_of_samples"] == pytest.approx((0.60 + 0.20) / 2)
    line20 = next(e for e in merged["hot_lines"] if e["line"] == 20)
    assert line20["ranks"] == 1 and line20["share_of_samples"] == pytest.approx(
        0.40 / 2
    )  # rank 1 sampled, never saw it
    assert merged["lines_seen"] == 3 and [e["line"] for e in merged["hot_lines"]] == [10, 20]


def test_stall_mixtures_per_function_are_weighted_by_line_share_and_grouped_by_role():
    from dispatchprof.analysis.pcsampling import function_stalls, role_stalls

    lines = [
        {
            "function": "buildRemoteWqeDesc",
            "share_of_samples": 0.30,
            "stalls": {"Scoreboard_Not_Ready": 0.6, "IBuf_Empty": 0.2},
        },
        {"function": "buildRemoteWqeDesc", "share_of_samples": 0.10, "stalls": {"IBuf_Empty": 0.8}},
        {"function": "simt_prepare_mapping", "share_of_samples": 0.20, "stalls": {"Warp_Level_Sync": 0.5}},
        {"function": None, "share_of_samples": 0.50, "stalls": {"Nop_Cycles": 1.0}},
    ]
    per_function = function_stalls(lines)
    wqe = per_function["buildRemoteWqeDesc"]
    assert wqe["share_of_samples"] == pytest.approx(0.40) and wqe["stalls"] == pytest.approx(
        {"Scoreboard_Not_Ready": 18 / 32, "IBuf_Empty": 14 / 32}
    )
    roles = role_stalls(per_function)
    assert set(roles) == {"URMASendToken", "SelfCopyToken"}  # TokenCopyToBuffer and CalCumSum run no SIMT code
    assert roles["SelfCopyToken"] == {"functions": ["simt_prepare_mapping"], "stalls": {"Warp_Level_Sync": 1.0}}
    assert roles["URMASendToken"]["stalls"]["Warp_Level_Sync"] == pytest.approx(20 / 60)


def test_hot_lines_of_the_format_fixture_are_fractions_of_all_samples_that_need_not_sum_to_one():
    rows = hot_lines(decode_pc_sampling(FIXTURE), repo=None)
    assert [(r["line"], r["share_of_samples"]) for r in rows] == [
        (12, pytest.approx(0.35)),
        (20, pytest.approx(0.305)),
        (31, pytest.approx(0.175)),
    ]
    assert sum(r["share_of_samples"] for r in rows) == pytest.approx(0.83)  # 34 of 200 samples map to no source line
    assert rows[0]["top_stall"] == "Scoreboard_Not_Ready" and rows[0]["active_fraction"] == pytest.approx(20 / 70)


def silent_or_sampled(ranks_with_samples, ranks_with_output, world=16):
    return {str(r): {"samples": r in ranks_with_samples} for r in range(world) if r in ranks_with_output}


def test_coverage_names_the_missing_ranks_and_the_ones_without_output():
    cov = coverage(16, silent_or_sampled(ranks_with_samples={0}, ranks_with_output={0, 1, 2}), 0.5)
    assert (cov["expected"], cov["found"], cov["state"]) == (16, 1, "most_missing")
    assert cov["missing"] == list(range(1, 16)) and cov["without_output"] == list(range(3, 16))
    assert cov["text"].startswith("samples on 1 of 16 ranks; missing ranks 1, 2, 3")


@pytest.mark.parametrize(
    ("sampled", "state"),
    [(set(range(16)), "full"), (set(range(8)), "partial"), (set(range(7)), "most_missing"), (set(), "none")],
)
def test_coverage_is_partial_down_to_the_minimum_fraction_and_most_missing_below(sampled, state):
    cov = coverage(16, silent_or_sampled(sampled, set(range(16))), 0.5)
    assert cov["state"] == state and cov["found"] == len(sampled) and cov["missing"] == sorted(set(range(16)) - sampled)
