"""The sides of ``compare`` (shell/compare_config.py): an experiment or a recorded results directory (a path), each
form of an entry, safe output names, and every refusal at config load naming the side; the factors that make two
sides incomparable (analysis/compare.py)."""

import re

from hypothesis import given
from hypothesis import strategies as st

from conftest import write_part_status
from dispatchprof.analysis.compare import refused_factors, unchecked_factors
from dispatchprof.shell.compare_config import (
    comparison_expectations,
    comparison_pairs,
    comparison_problems,
    is_recorded,
    recorded_inputs,
    recorded_sides,
    side_slug,
)

SAFE = re.compile(r"^[A-Za-z0-9_.+-]+$")


def run_dir(root, name="baseline"):
    write_part_status(root / name / "baseline/status.json", "baseline", "ok")
    return root / name


def test_every_form_of_an_entry_gives_its_slugs_and_expectations():
    config = {
        "experiments": {"baseline": {}, "b": {}},
        "compare": [
            ["results/2026-12-01/baseline", "baseline"],
            {"a": "/data/old run/baseline/", "b": "b", "expect": {"latency.kernel.median": "down"}},
            ["baseline", "b"],
        ],
    }
    assert comparison_pairs(config) == [
        ("2026-12-01+baseline", "baseline"),
        ("data+old_run+baseline", "b"),
        ("baseline", "b"),
    ]
    assert comparison_expectations(config) == {("data+old_run+baseline", "b"): {"latency.kernel.median": "down"}}
    assert recorded_sides(config) == {
        "2026-12-01+baseline": "results/2026-12-01/baseline",
        "data+old_run+baseline": "/data/old run/baseline",
    }


PART = st.text(min_size=1, max_size=12).filter(lambda p: "/" not in p)


@given(st.lists(PART, min_size=1, max_size=4), st.booleans())
def test_a_recorded_sides_slug_is_one_safe_name(parts, absolute):
    path = ("/" if absolute else "") + "/".join(parts) + ("/" if len(parts) == 1 else "")
    slug = side_slug(path)
    assert is_recorded(path) and "/" not in slug
    assert slug == "" or SAFE.match(slug), slug
    kept = [p for p in parts if p != "."]
    if kept and kept[0] == "results" and len(kept) > 1:
        kept = kept[1:]
    assert slug.count("+") == max(len(kept) - 1, 0)  # one '+' between parts, none inside one


def test_a_slug_that_is_an_experiments_name_is_refused(tmp_path):
    run_dir(tmp_path / "elsewhere", "b")
    config = {"experiments": {"a": {}, "b": {}}, "compare": [["results/b/", "a"], ["elsewhere/b", "a"]]}
    problems = comparison_problems(config, tmp_path)
    assert any("'results/b/' would be written as 'b', an experiment's name" in p for p in problems), problems


def test_a_directory_that_does_not_exist_is_refused_naming_it(tmp_path):
    config = {"experiments": {"b": {}}, "compare": [["old/nowhere/baseline", "b"]]}
    (problem,) = comparison_problems(config, tmp_path)
    assert "the results directory old/nowhere/baseline does not exist" in problem


def test_a_file_a_directory_of_no_run_and_an_unknown_experiment_are_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty/dir").mkdir(parents=True)
    run_dir(tmp_path / "old")
    config = {
        "experiments": {"b": {}},
        "compare": [["./afile", "b"], ["empty/dir", "b"], ["old/baseline", "nope"], ["old/baseline", "old/baseline/"]],
    }
    problems = comparison_problems(config, tmp_path)
    assert any("./afile is not a directory" in p for p in problems)
    assert any("empty/dir holds no stage status" in p for p in problems)
    assert any("'nope' is not an experiment" in p for p in problems)
    assert any("must name two different sides" in p for p in problems)
    assert len(problems) == 4, problems


def test_this_configs_own_experiment_directory_is_refused_as_a_recorded_side(tmp_path):
    run_dir(tmp_path / "results", "b")
    config = {"experiments": {"a": {}, "b": {}}, "compare": [["results/b", "a"]]}
    problems = comparison_problems(config, tmp_path)
    assert any("is the results directory of this config's experiment 'b'" in p for p in problems), problems


def test_two_paths_with_one_slug_are_refused_and_a_single_experiment_config_may_compare(tmp_path):
    run_dir(tmp_path / "x_y")
    run_dir(tmp_path / "x y")
    config = {"experiment": "baseline", "compare": [["x_y/baseline", "baseline"], ["x y/baseline", "baseline"]]}
    (problem,) = comparison_problems(config, tmp_path)
    assert "would both be written as 'x_y+baseline'" in problem
    assert comparison_problems({"experiment": "baseline", "compare": [["x_y/baseline", "baseline"]]}, tmp_path) == []


def test_recorded_inputs_are_the_files_it_has_and_name_those_it_lacks(tmp_path):
    root = run_dir(tmp_path)
    (root / "config.json").write_text("{}")
    have, lacks = recorded_inputs(root)
    assert set(have) == {"baseline", "config"} and have["config"] == str(root / "config.json")
    assert lacks["latency"] == "baseline/latency.parquet" and lacks["pmu_cores"] == "pmu/cores.parquet"


def cfg(**over):
    base = {
        "toolchain": "sim",
        "shape": {"num_tokens": 256, "hidden": 7168, "seed": 0, "route": "balanced"},
        "cluster": {"nodes": 2, "ranks_per_node": 8, "hosts": ["a", "b"]},
        "kernel": {"name": "elastic_dispatch_kernel", "clock_hz": 1},
        "sim": {"late_rank": None},
    }
    for key, value in over.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) else value
    return base


def test_shape_cluster_size_toolchain_and_kernel_refuse_naming_the_factors():
    assert refused_factors(cfg(), cfg(sim={"late_rank": 3})) == []
    assert refused_factors(cfg(), cfg(shape={"num_tokens": 128})) == ["shape.num_tokens"]
    assert refused_factors(cfg(), cfg(cluster={"nodes": 4}, toolchain="cann", kernel={"name": "k"})) == [
        "cluster.nodes",
        "kernel.name",
        "toolchain",
    ]
    # another machine (hosts), the data's seed and routing, the clock: not refused (warned as inputs or factors)
    other = cfg(cluster={"hosts": ["c", "d"]}, shape={"seed": 1, "route": "random"}, kernel={"clock_hz": 2})
    assert refused_factors(cfg(), other) == []


def test_a_factor_one_side_does_not_record_is_unchecked_not_refused():
    bare = {"toolchain": "sim"}
    assert refused_factors(bare, cfg()) == []
    assert "shape.num_tokens" in unchecked_factors(bare, cfg()) and "cluster.nodes" in unchecked_factors(bare, cfg())
