"""Sweeps in the config (issue 61 item 1): a grid or rows expanded into experiment runs with stable names, refused
points named with their reason at plan time while the others run, repeats interleaved in a seeded random order."""

from __future__ import annotations

import copy

import pytest
import yaml

from conftest import ROOT
from dispatchprof.shell.config import (
    experiment_problems,
    experiment_runs,
    fill_defaults,
    load_schema,
    run_config,
    schema_problems,
    sweep_notes,
)
from dispatchprof.shell.sweep import key_part, point_label, points_of, value_part

SCHEMA = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
ROLES_48 = [
    {"name": "TokenCopyToBuffer", "count": 14},
    {"name": "URMASendToken", "count": 14},
    {"name": "SelfCopyToken", "count": 4},
    {"name": "CalCumSum", "count": 16},
]


def config_with(**top) -> dict:
    config = copy.deepcopy(DEFAULT)
    config.update(copy.deepcopy(top))
    assert schema_problems(config, SCHEMA) == []
    fill_defaults(config, SCHEMA)
    return config


def test_a_grid_is_the_product_of_its_axes_last_axis_fastest():
    spec = {"axes": {"shape.num_tokens": [128, 256], "sim.role_speedup.URMASendToken": [0.8, 1.2]}}
    assert points_of("g", spec) == [
        {"shape.num_tokens": 128, "sim.role_speedup.URMASendToken": 0.8},
        {"shape.num_tokens": 128, "sim.role_speedup.URMASendToken": 1.2},
        {"shape.num_tokens": 256, "sim.role_speedup.URMASendToken": 0.8},
        {"shape.num_tokens": 256, "sim.role_speedup.URMASendToken": 1.2},
    ]


def test_points_are_experiments_named_by_sweep_and_number_with_only_their_leaf_set():
    config = config_with(sweep={"send": {"axes": {"sim.role_speedup.URMASendToken": [1.2, 0.8, 1.0]}}})
    runs = experiment_runs(config)
    assert sorted(runs) == ["sweep_send_1", "sweep_send_2", "sweep_send_3"]  # no default `baseline` run beside them
    assert runs["sweep_send_2"]["sim"]["role_speedup"] == {"URMASendToken": 0.8}
    assert runs["sweep_send_2"]["_experiment"] == "sweep_send_2" and runs["sweep_send_2"]["_sweep"] == "send"
    assert runs["sweep_send_2"]["shape"] == config["shape"]  # nothing else moved
    assert experiment_problems(config, SCHEMA) == []
    assert run_config(config, "sweep_send_3")["sim"]["role_speedup"] == {"URMASendToken": 1.0}


def test_rows_set_several_keys_together_and_experiments_run_beside_a_sweep():
    rows = [{"shape.num_aiv": 48, "kernel.roles": ROLES_48}, {"shape.num_aiv": 56}]
    config = config_with(sweep={"aiv": {"rows": rows}}, experiments={"a": {}, "b": {"shape": {"num_tokens": 128}}})
    runs = experiment_runs(config)
    assert list(runs) == ["a", "b", "sweep_aiv_1", "sweep_aiv_2"]
    assert runs["sweep_aiv_1"]["shape"]["num_aiv"] == 48 and runs["sweep_aiv_1"]["kernel"]["roles"] == ROLES_48
    assert experiment_problems(config, SCHEMA) == []


def test_labels_map_dotted_keys_to_safe_path_parts():
    assert key_part("sim.role_speedup.URMASendToken") == "sim__role_speedup__URMASendToken"
    assert value_part(0.8) == "0.8" and value_part(True) == "true" and value_part("a/b c") == "a%2Fb%20c"
    assert point_label({"sim.role_speedup.URMASendToken": 0.8, "shape.route": "random"}) == (
        "sim__role_speedup__URMASendToken~0.8/shape__route~random"
    )


def test_impossible_points_are_refused_with_their_reason_and_the_rest_run():
    rows = [
        {"shape.num_experts": 100},  # not divisible by 16 ranks
        {"shape.num_aiv": 48},  # roles still sum to 56
        {"cluster.nodes": 1},  # cannot vary per experiment
        {"shape.num_tokens": 128},
    ]
    config = config_with(sweep={"mixed": {"rows": rows}})
    assert experiment_problems(config, SCHEMA) == []
    assert list(experiment_runs(config)) == ["sweep_mixed_4"]  # names keep their numbers
    notes = sweep_notes(config)
    assert any("point 1" in n and "sweep_mixed_1" in n and "not divisible by the 16 ranks" in n for n in notes)
    assert any("point 2" in n and "kernel.roles sum to (56)" in n and "rows:" in n for n in notes)
    assert any("point 3" in n and "cluster.nodes cannot vary per experiment" in n for n in notes)
    assert notes[-1] == "sweep mixed: the other 1 of 4 points run"


def test_a_sweep_with_no_point_left_refuses_the_configuration():
    config = config_with(sweep={"nodes": {"axes": {"cluster.nodes": [1, 4]}}})
    found = experiment_problems(config, SCHEMA)
    assert len(found) == 1 and found[0].startswith("sweep.nodes: no point is left to run")
    assert "cluster.nodes cannot vary per experiment" in found[0]


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"axes": {"a.b": [1]}, "rows": [{"a.b": 1}]}, "is valid under each of"),
        ({"axes": {"shape..x": [1]}}, "does not match"),
        ({"axes": {"shape.num_tokens": []}}, "should be non-empty"),
        ({"rows": [{"shape.num_tokens": 1}], "stages": ["timeline"]}, "does not contain"),
    ],
)
def test_the_schema_refuses_malformed_sweeps(spec, message):
    config = copy.deepcopy(DEFAULT)
    config["sweep"] = {"s": spec}
    found = schema_problems(config, SCHEMA)
    assert found and any(message in p for p in found), found


def test_an_unknown_key_is_refused_by_the_schema_naming_the_point():
    config = config_with(sweep={"typo": {"axes": {"shape.num_tokenz": [1]}}})
    found = experiment_problems(config, SCHEMA)
    assert any("sweep_typo_1" in p and "num_tokenz" in p for p in found), found


def test_repeats_interleave_points_in_a_seeded_random_order_the_same_in_every_process():
    spec = {"axes": {"shape.num_tokens": [32, 64, 128, 256]}, "repeats": 3, "seed": 7}
    runs = list(experiment_runs(config_with(sweep={"t": spec})))
    assert len(runs) == 12
    rounds = [runs[i : i + 4] for i in range(0, 12, 4)]
    for k, round_ in enumerate(rounds, 1):  # every round runs every point once
        assert sorted(round_) == [f"sweep_t_{n}_r{k}" for n in range(1, 5)]
    assert runs == list(experiment_runs(config_with(sweep={"t": spec})))  # deterministic
    orders = [[r.split("_r")[0] for r in round_] for round_ in rounds]
    assert len({tuple(o) for o in orders}) > 1  # not the same order every round
    other = list(experiment_runs(config_with(sweep={"t": {**spec, "seed": 8}})))
    assert other != runs


def test_a_sweep_may_not_share_names_with_experiments():
    config = config_with(sweep={"s": {"rows": [{"shape.num_tokens": 128}]}}, experiments={"sweep_s_1": {}})
    assert any("would share its name" in p for p in experiment_problems(config, SCHEMA))
