"""The table of each rule's fingerprint keys (dispatchprof.shell.rule_keys.RULE_KEYS): every entry is a key of
the schema, and a collection rule's row holds no analysis key. That each script reads only its row's keys is
checked on a complete run (tests/workflow/test_phases.py::test_each_script_reads_only_its_rule_keys)."""

from __future__ import annotations

from conftest import ROOT
from dispatchprof.shell.config import load_schema
from dispatchprof.shell.rule_keys import RULE_KEYS, is_collection_rule, phases_under, row_of, row_problems

SCHEMA = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def test_every_row_names_schema_keys_and_no_collection_row_an_analysis_key() -> None:
    assert row_problems(SCHEMA) == []


def test_an_analysis_key_in_a_collection_row_is_named() -> None:
    table = {**RULE_KEYS, "timeline_collect": (*RULE_KEYS["timeline_collect"], "timeline.waits", "stats")}
    assert row_problems(SCHEMA, table) == [
        "RULE_KEYS['timeline_collect']: timeline.waits is an analysis key in a collection rule's row",
        "RULE_KEYS['timeline_collect']: stats is an analysis key in a collection rule's row",
    ]
    # the same keys in an analysis rule's row are what it should fingerprint
    assert row_problems(SCHEMA, {"timeline": ("timeline.waits", "stats")}) == []


def test_a_key_the_schema_does_not_have_is_named() -> None:
    assert row_problems(SCHEMA, {"pmu": ("pmu.metricz",)}) == [
        "RULE_KEYS['pmu']: pmu.metricz: 'metricz' is not a key of the config schema"
    ]


def test_a_section_of_both_phases_is_a_collection_entry() -> None:
    assert phases_under(SCHEMA, "timeline") == {"collection", "analysis"}
    assert phases_under(SCHEMA, "timeline.waits") == {"analysis"}


def test_the_phase_of_a_rule_follows_its_name() -> None:
    assert [r for r in RULE_KEYS if is_collection_rule(r)] == [
        "env_capture_node",
        "build",
        "correctness",
        "baseline_driver",
        "baseline_collect",
        "timeline_collect",
        "pmu_collect",
        "pcsampling_collect",
        "pipe_timeline_collect",
        "debugclock_collect",
        "probe_collect",
        "baseline_import",
        "timeline_import",
        "pmu_import",
        "pcsampling_import",
        "pipe_timeline_import",
        "probe_import",
    ]
    assert row_of("not_provided_3") == "not_provided" and row_of("not_provided") == "not_provided"
