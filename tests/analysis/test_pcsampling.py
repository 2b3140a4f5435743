import pytest

from dispatchprof.analysis.pcsampling import function_at, hot_lines, stall_tables
from dispatchprof.formats.visualize_bin import PcSampling


def rec(line, percent, details, file="k.cpp"):
    return {"File": file, "Line": line, "Stall Sampling(All Samples)": {"Percent": percent, "Details": details}}


def test_the_two_denominators_are_kept_apart():
    lines = [rec(10, 75.0, {"Active": 0.6, "Scoreboard_Not_Ready": 0.4}), rec(20, 25.0, {"Active": 0.2, "IBuf_Empty": 0.8})]
    pc = PcSampling({"Scoreboard_Not_Ready": 30.0, "IBuf_Empty": 20.0}, lines, [], [])
    tables = stall_tables(pc)
    assert tables["all_samples"]["Active"] == pytest.approx(0.75 * 0.6 + 0.25 * 0.2)
    assert tables["all_samples"]["Scoreboard_Not_Ready"] == pytest.approx(0.3)
    assert "Active" not in tables["not_issue"]
    assert tables["not_issue"]["Scoreboard_Not_Ready"] == pytest.approx(0.6) and tables["not_issue"]["IBuf_Empty"] == pytest.approx(0.4)


def test_hot_lines_are_mapped_to_the_enclosing_simt_function(tmp_path):
    (tmp_path / "k.cpp").write_text("// header\n__simt_vf__ void buildRemoteWqeDesc(GM_ADDR a)\n{\n    x();\n}\nvoid other(int a)\n{\n    y();\n}\n")
    pc = PcSampling({}, [rec(4, 10.0, {"Active": 0.1, "Resource_conflict": 0.9}), rec(8, 50.0, {"Active": 1.0})], [], [])
    rows = hot_lines(pc, tmp_path)
    assert [(r["line"], r["function"]) for r in rows] == [(8, None), (4, "buildRemoteWqeDesc")]
    assert rows[1]["top_stall"] == "Resource_conflict"
    assert function_at(tmp_path / "missing.cpp", 3) is None


def test_ranks_are_averaged_and_a_hot_line_counts_the_ranks_that_saw_it():
    from dispatchprof.analysis.pcsampling import aggregate

    a = PcSampling(
        {"Scoreboard_Not_Ready": 30.0, "IBuf_Empty": 10.0},
        [rec(10, 60.0, {"Active": 0.5, "Scoreboard_Not_Ready": 0.5}), rec(20, 40.0, {"IBuf_Empty": 1.0})],
        [],
        [],
    )
    b = PcSampling({"Scoreboard_Not_Ready": 10.0, "IBuf_Empty": 30.0}, [rec(10, 20.0, {"Scoreboard_Not_Ready": 1.0})], [], [])
    silent = PcSampling(None, [], [], [])
    merged = aggregate([(0, a), (1, b), (2, silent)], repo=None)
    assert merged["stalls"]["not_issue"]["Scoreboard_Not_Ready"] == pytest.approx((0.75 + 0.25) / 2)  # rank 2 has no samples: left out
    assert merged["per_rank"]["2"]["samples"] is False and merged["per_rank"]["2"]["not_issue"] is None
    line10 = next(e for e in merged["hot_lines"] if e["line"] == 10)
    assert line10["ranks"] == 2 and line10["percent_of_samples"] == pytest.approx((60.0 + 20.0) / 3)  # mean over the 3 ranks
    assert merged["lines_seen"] == 3 and [e["line"] for e in merged["hot_lines"]] == [10, 20]


def test_stall_mixtures_per_function_are_weighted_by_line_share_and_grouped_by_role():
    from dispatchprof.analysis.pcsampling import function_stalls, role_stalls

    lines = [
        {"function": "buildRemoteWqeDesc", "percent_of_samples": 30.0, "stalls": {"Scoreboard_Not_Ready": 0.6, "IBuf_Empty": 0.2}},
        {"function": "buildRemoteWqeDesc", "percent_of_samples": 10.0, "stalls": {"IBuf_Empty": 0.8}},
        {"function": "simt_prepare_mapping", "percent_of_samples": 20.0, "stalls": {"Warp_Level_Sync": 0.5}},
        {"function": None, "percent_of_samples": 50.0, "stalls": {"Nop_Cycles": 1.0}},
    ]
    per_function = function_stalls(lines)
    wqe = per_function["buildRemoteWqeDesc"]
    assert wqe["share_of_samples"] == 40.0 and wqe["stalls"] == pytest.approx({"Scoreboard_Not_Ready": 18 / 32, "IBuf_Empty": 14 / 32})
    roles = role_stalls(per_function)
    assert set(roles) == {"URMASendToken", "SelfCopyToken"}  # TokenCopyToBuffer and CalCumSum run no SIMT code
    assert roles["SelfCopyToken"] == {"functions": ["simt_prepare_mapping"], "stalls": {"Warp_Level_Sync": 1.0}}
    assert roles["URMASendToken"]["stalls"]["Warp_Level_Sync"] == pytest.approx(20 / 60)
