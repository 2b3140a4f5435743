"""benchmarks/second_model.py, the second collective model: it shares nothing with workflow/sim or the analysis, what it
writes is read by the project's own msprof readers (db, op_summary CSV and JSON alike), and its counterfactual truth
is right where it can be worked out by hand."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import second_model as model  # noqa: E402
import second_model_score as score  # noqa: E402

from dispatchprof.formats.msprof import discover, read_prof_info  # noqa: E402
from dispatchprof.formats.msprof_tables import read_db, read_msprof_json, read_op_summary  # noqa: E402
from dispatchprof.formats.names import PROF_RE  # noqa: E402

SMALL = model.Shape(2, 4)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    return found | {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }


def test_the_generator_imports_only_the_standard_library_and_numpy():
    found = imported_modules(BENCH / "second_model.py")
    assert found - {"numpy"} <= set(sys.stdlib_module_names), found
    assert (
        "sys.path" not in (BENCH / "second_model.py").read_text()
    )  # no path added to reach workflow/sim or the library
    assert not {"dispatchprof", "ascend_deepep", "localisation", "_account", "_collective"} & found


def test_the_scorer_uses_localisation_settings():
    import localisation

    assert score.SETTINGS == localisation.SETTINGS and score.BOOT == localisation.BOOT and score.TIE == localisation.TIE


def test_the_benchmarks_analyse_with_the_schemas_defaults():
    """timeline.waits and stats.bootstrap as a run that sets neither gets them: the defaults, read here from the
    schema's text (its 2000 resamples, not fewer)."""
    import localisation

    schema = yaml.safe_load((BENCH.parent / "workflow" / "schemas" / "config.schema.yaml").read_text())

    def defaults(section: str, key: str) -> dict:
        entries = schema["properties"][section]["properties"][key]["properties"]
        return {name: entry["default"] for name, entry in entries.items()}

    assert localisation.SETTINGS == defaults("timeline", "waits")
    assert localisation.BOOT == defaults("stats", "bootstrap")


LATE = model.Case("late", (model.Fault("late", "host", (1,), extra=50.0, prob=0.9),))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("second_model")
    found = model.generate(root, SMALL, LATE, seed=3, launches=40)
    return root, found


def test_every_rank_is_a_plain_msprof_prof_directory(tree):
    root, _ = tree
    for node in range(SMALL.nodes):
        profs = discover(root / f"node{node}")
        assert len(profs) == SMALL.ranks_per_node and all(PROF_RE.match(p.name) for p in profs)
        infos = [read_prof_info(p) for p in profs]
        assert sorted(d for i in infos for d in i.devices) == list(range(SMALL.ranks_per_node))
        assert all(
            i.rank_id is None and i.db is not None and i.text_dir is not None and not i.error_lines for i in infos
        )
        assert {i.hostname for i in infos} == {f"node{node}"}


def test_db_op_summary_and_json_hold_the_same_kernels(tree):
    root, _ = tree
    prof = discover(root / "node1")[2]
    info = read_prof_info(prof)
    db = read_db(info.db)
    csv = read_op_summary(sorted(info.text_dir.glob("op_summary_*.csv")), info.pid)
    trace = read_msprof_json(next(info.text_dir.glob("msprof_*.json")))
    assert len(db) == 3 * 40
    for other in (csv, trace):
        for column in ("name", "start_ns", "dur_ns", "device", "task_id"):
            assert other[column].tolist() == db[column].tolist(), column
    assert db["name"].tolist()[:3] == [model.LAYOUT, model.BARRIER, model.TARGET]


def test_the_timeline_reads_every_rank_and_launch_with_its_barrier(tree):
    root, _ = tree
    grid, missing = score.read_tree(root, SMALL)
    assert missing == [] and grid.ranks.tolist() == list(range(SMALL.world))
    events = model.simulate(SMALL, model.draw(SMALL, 40, 3, list(LATE.faults)), list(LATE.faults))
    # what msprof shows is the model's kernels: durations to the ns (node 2's drift is not in this 2-node shape)
    assert np.abs(grid.duration - (events.end - events.start)).max() < 0.002
    assert np.abs(grid.barrier_wait - (events.barrier_end - events.barrier_start)).max() < 0.002


def test_node_clocks_read_the_offset_and_node_2_drifts():
    shape = model.Shape(3, 2)
    draws = model.draw(shape, 200, seed=1, faults=[])
    events = model.simulate(shape, draws, [])
    read = {node: model.clock_ns(shape, node, events.barrier_end[:, node * 2]) for node in range(3)}
    # the same release seen from each node, up to the release skew (0.5 us): node k reads 1.7 ms x k ahead
    assert np.all(np.abs((read[1] - read[0]) / 1000 - 1700.0) < 0.5)
    lead = (read[2] - read[0]) / 1000 - 3400.0
    elapsed = events.barrier_end[-1, 0] - events.barrier_end[0, 0]
    assert lead[-1] - lead[0] == pytest.approx(15e-6 * elapsed, abs=1.0)


def test_without_a_fault_the_truth_costs_nothing():
    draws = model.draw(SMALL, 100, seed=5, faults=[])
    found = model.truth(SMALL, draws, [])
    assert found["total"] == {"period": 0.0, "timed": 0.0}
    # a fault that never strikes is no cause either: its removal gives nothing back
    never = [
        model.Fault("never", "host", (2,), extra=50.0, prob=0.0),
        model.Fault("zero", "work", (3,), extra=0.0, tied=True),
    ]
    found = model.truth(SMALL, model.draw(SMALL, 100, seed=5, faults=never), never)
    assert found["total"]["period"] == 0.0 and all(
        c["period"] == 0.0 for c in found["causes"] if c["fault"] != "os_hiccups"
    )


def test_a_rank_40_us_slower_in_every_launch_with_tied_peers_costs_40_us_a_launch():
    """Its peers wait for its data and end with it: every rank's next launch starts 40 us later, so the group loses
    the 40 us in every launch (up to the noise it replaces as the last)."""
    shape = model.Shape(2, 8)
    slow = [model.Fault("slow", "work", (5,), extra=40.0, tied=True)]
    found = model.truth(shape, model.draw(shape, 300, seed=2, faults=slow), slow)
    assert 38.5 <= found["total"]["period"] <= 40.5, found["total"]
    assert found["causes"][0]["period"] == pytest.approx(found["total"]["period"])


def test_untied_its_lateness_carries_into_the_next_barrier_where_the_others_host_jitter_absorbs_some():
    """Untied, it ends late alone; its next host gap starts late, so it arrives late at the next barrier and the
    group waits there. The others' host jitter and hiccups (up to 6 us, 10-60 us) would have made someone late
    anyway: less than the 40 us, more than nothing, and less than tied."""
    shape = model.Shape(2, 8)
    costs = {}
    for tied in (True, False):
        slow = [model.Fault("slow", "work", (5,), extra=40.0, tied=tied)]
        costs[tied] = model.truth(shape, model.draw(shape, 300, seed=2, faults=slow), slow)["total"]["period"]
    assert 30.0 <= costs[False] < costs[True], costs


def test_two_slow_ranks_cost_alone_what_the_other_does_not_cover():
    shape = model.Shape(2, 8)
    faults = [
        model.Fault("a", "work", (5,), extra=40.0, tied=True),
        model.Fault("b", "work", (13,), extra=15.0, tied=True),
    ]
    found = model.truth(shape, model.draw(shape, 300, seed=2, faults=faults), faults)
    alone = {c["fault"]: c["period"] for c in found["causes"]}
    assert 38.5 <= found["total"]["period"] <= 40.5
    assert alone["a"] == pytest.approx(25.0, abs=1.0) and alone["b"] == pytest.approx(0.0, abs=0.5)


def test_the_scorer_names_a_late_rank_at_its_cost(tmp_path):
    """The whole path on a fault the analysis is known to handle: generated, read, analysed, scored."""
    case = next(c for c in model.cases(SMALL) if c.name == "late_rank_50_90pct")
    row = score.score_case(SMALL, case, seed=1, launches=120, work=tmp_path)
    assert row["error"] is None, row
    assert row["top_right"] and row["cost_error"] < 0.1 and not row["false_alarms"], row
    assert not (tmp_path / f"{SMALL.label}-{case.name}-1").exists()  # each tree is removed once scored


def cause(evidence: str, rank: int | None, cost: float, **extra) -> dict:
    return {
        "evidence": evidence,
        "rank": rank,
        "node": None,
        "ranks": [rank] if rank is not None else [],
        "cost_us_per_launch": cost,
        **extra,
    }


def truth_row(knob: str, evidence: str, rank: int, period: float) -> dict:
    return {
        "knob": knob,
        "evidence": evidence,
        "ranks": [rank],
        "rank": rank,
        "node": None,
        "period": period,
        "timed": period,
    }


def test_nothing_named_where_nothing_costs_is_right():
    scored = score.score([], [truth_row("spikes", "late_arrival", 1, 0.3)], SMALL)
    assert scored["top_right"] and scored["top_right_exact"] and not scored["fault_run"] and not scored["false_alarms"]


def test_a_victim_named_is_a_false_alarm_and_a_victim_and_a_lenient_match_is_not_exact():
    truths = [truth_row("slow", "own_work", 5, 20.0), truth_row("spikes", "late_arrival", 2, 0.2)]
    scored = score.score([cause("own_work", 3, 4.0)], truths, SMALL)
    assert (
        not scored["top_right"]
        and scored["false_alarms"] == ["own_work rank 3"]
        and scored["victims_blamed"] == ["own_work rank 3"]
    )
    lenient = cause("in_kernel", None, 21.0, late_ending_ranks=[1, 3, 5, 6])
    scored = score.score([lenient], truths, SMALL)
    assert scored["top_right"] and not scored["top_right_exact"] and scored["cost_error"] == pytest.approx(0.05)
