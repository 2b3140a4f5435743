"""Each rule's config fingerprint, from one table: the config keys its script reads.

A rule's param ``config_fingerprint`` is a hash of its row's values for the job's experiment (fingerprints.smk):
Snakemake reruns the rule when one of them changes. A row names sections (``pmu``) or dotted keys
(``timeline.waits``). A collection rule (collect, driver, import, env capture, build, correctness: what a cluster
allocation costs) hashes only the collection keys of its row (x-phase in the schema), so that an analysis key's
change never re-collects; its job sees only those keys (dispatchprof.shell.config.collection_config).

tests/workflow/test_phases.py checks the table: a script that reads a key outside its rule's row fails it, and so
does an analysis key in a collection rule's row (tests/unit/test_rule_keys.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

_COLLECTIVE = ("mode", "toolchain", "launcher", "cann", "cluster", "deepep", "shape", "sim")
# what the perf driver of every collective run gets in its environment (tools/collective.driver_environment): a change
# of one changes what is measured, so it re-collects
_DRIVER_KEYS = ("baseline.synchronize_start", "baseline.topk_key", "kernel.clock_hz")


def _imported(kind: str) -> tuple[str, ...]:
    return (f"analyze.{kind}", "analyze.checksums", "cluster")


RULE_KEYS: dict[str, tuple[str, ...]] = {
    # collection rules
    "env_capture_node": ("mode", "toolchain", "launcher", "cann", "cluster", "deepep", "kernel", "pmu", "preflight"),
    "build": ("mode", "toolchain", "cann", "deepep"),
    "correctness": _COLLECTIVE,
    "baseline_driver": ("mode", "toolchain", "deepep", "baseline", "cluster"),
    "baseline_collect": (*_COLLECTIVE, "baseline", "kernel.clock_hz"),
    "timeline_collect": (*_COLLECTIVE, "timeline", *_DRIVER_KEYS),
    "pmu_collect": (*_COLLECTIVE, "kernel", "pmu", *_DRIVER_KEYS),
    "pcsampling_collect": (*_COLLECTIVE, "kernel", "pmu", "pcsampling", *_DRIVER_KEYS),
    "pipe_timeline_collect": (*_COLLECTIVE, "kernel", "pmu", "pipe_timeline", *_DRIVER_KEYS),
    "debugclock_collect": (*_COLLECTIVE, "kernel", "debugclock"),
    "probe_collect": ("mode", "toolchain", "cann", "sim", "probe"),
    "baseline_import": _imported("latency_csv"),
    "timeline_import": _imported("timeline_dir"),
    "pmu_import": _imported("pmu_dir"),
    "pcsampling_import": _imported("pcsampling_dir"),
    "pipe_timeline_import": _imported("pipe_timeline_dir"),
    "probe_import": _imported("probe_dir"),
    # analysis rules
    "baseline": (
        "mode",
        "toolchain",
        "cluster",
        "deepep",
        "shape",
        "sim",
        "analyze",
        "baseline",
        "stats",
        "hardware",
        "kernel.clock_hz",
    ),
    "timeline_parse": (
        "mode",
        "cluster",
        "kernel.name",
        "timeline.barrier_kernel",
        "timeline.call_chain_launches",
        "timeline.trace_launches",
        "analyze",
    ),
    "timeline_rank": ("mode", "cluster", "kernel.name", "analyze"),
    "timeline": (
        "mode",
        "cluster",
        "kernel.name",
        "timeline.align_launch",
        "timeline.barrier_kernel",
        "timeline.call_chain_launches",
        "timeline.known_kernels",
        "timeline.trace_launches",
        "timeline.trace_max_mb",
        "timeline.waits",
        "stats.min_rank_coverage",
        "analyze",
    ),
    "pmu": ("mode", "cluster", "kernel", "analyze", "pmu", "stats.min_rank_coverage"),
    "pcsampling": (
        "mode",
        "toolchain",
        "cluster",
        "kernel.name",
        "deepep.repo",
        "deepep.ref",
        "analyze",
        "stats.min_rank_coverage",
    ),
    "pipe_timeline": ("mode", "cluster", "kernel", "analyze", "pipe_timeline", "stats.min_rank_coverage"),
    "debugclock": ("mode", "cluster", "kernel", "analyze", "debugclock"),
    "probe": ("mode", "analyze", "probe"),
    "history": ("mode", "toolchain", "cluster", "shape", "kernel.name", "history"),
    "report": ("mode", "toolchain", "cluster", "shape", "kernel", "deepep", "report", "analyze"),
    "not_provided": ("mode", "analyze", "cluster"),  # also not_provided_2, ... (one rule per group of experiments)
}

# Rules whose script reads the config but that have no fingerprint param, and why (adding one would rerun them
# once on every existing results/ directory; a change of behaviour kept out of the refactoring that made this table).
NO_FINGERPRINT: dict[str, str] = {
    "env_capture": "folds the per-node records of env_capture_node, whose fingerprint covers the keys it reads",
    "timeline_crosscheck": "reads mode and analyze.timeline_dir, the inputs of the timeline it checks",
    "compare": "reads every key of both runs, to list what differs; reruns when their results change",
}

_SIM_ENV = "every stand-in tool gets every sim knob in its environment (tools/toolchain, toolchain sim only)"

# Keys a rule's script reads that its row leaves out: a change of one of them does not rerun the rule. Only the sim
# knobs every stand-in gets in its environment (they change no measurement of the rule's own) and the preflight's
# view of the timeline runs. The driver's keys (synchronize_start, topk_key, clock_hz) were here until they were
# found to change what a collection measures: they are in the rows now (CHANGELOG). The check fails on any read not
# in a row nor here, and on an entry here no longer read.
UNFINGERPRINTED_READS: dict[str, dict[str, str]] = {
    "build": {"sim": _SIM_ENV},
    "baseline_driver": {"sim": _SIM_ENV},
    "env_capture_node": {
        "sim": _SIM_ENV,
        # in its row, a change of the timeline runs would re-capture every node and so re-collect every stage
        "pipe_timeline.runs": "the preflight checks the op profiler's flags of the configured timeline runs",
    },
    "pcsampling": {"sim": _SIM_ENV},
    # in its row, the phase test finds no job planned for a change (the parse parts are planned from the timeline's)
    "timeline_parse": {"stats.max_plausible_us": "launches longer than it are left out of the parsed parts"},
}

COLLECTION_RULES = ("env_capture_node", "env_capture", "build", "correctness")
COLLECTION_SUFFIXES = ("_collect", "_driver", "_import")


def row_of(rule: str) -> str:
    """The table's row name of a rule: not_provided_2 -> not_provided."""
    if rule.startswith("not_provided_") and rule.removeprefix("not_provided_").isdigit():
        return "not_provided"
    return rule


def is_collection_rule(rule: str) -> bool:
    """Whether a rule belongs to the collection phase: its fingerprint and its job see collection keys only."""
    return rule in COLLECTION_RULES or rule.endswith(COLLECTION_SUFFIXES)


def fingerprint_phase(rule: str) -> str | None:
    return "collection" if is_collection_rule(rule) else None


def config_hash(view: Mapping[str, Any], repeat: Any) -> str:
    """A short hash of a phase_view of a run's config and the run's repeat index."""
    picked = {**view, "_repeat": repeat}
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:16]


def phases_under(schema: Mapping[str, Any], key: str) -> set[str]:
    """The phases (x-phase) of the keys a row entry covers: one for a key, the phases inside a section.
    A name the schema does not have raises KeyError naming it."""
    node: Mapping[str, Any] = schema
    inherited: str | None = None
    for part in key.split("."):
        inherited = node.get("x-phase", inherited)
        properties = node.get("properties", {})
        if part not in properties:
            raise KeyError(f"{key}: {part!r} is not a key of the config schema")
        node = properties[part]

    def walk(child: Mapping[str, Any], phase: str | None) -> set[str]:
        own = child.get("x-phase", phase)
        if own is not None or "properties" not in child:
            return {own or "none"}
        return set().union(*(walk(c, own) for c in child["properties"].values()))

    return walk(node, inherited)


def row_problems(schema: Mapping[str, Any], table: Mapping[str, tuple[str, ...]] = RULE_KEYS) -> list[str]:
    """Entries of the table the schema does not have, and analysis keys in a collection rule's row (its
    fingerprint drops them: listed there, they say the collection depends on them, and it must not)."""
    problems = []
    for rule, keys in table.items():
        for key in keys:
            try:
                phases = phases_under(schema, key)
            except KeyError as exc:
                problems.append(f"RULE_KEYS[{rule!r}]: {exc.args[0]}")
                continue
            if is_collection_rule(rule) and "collection" not in phases:
                problems.append(f"RULE_KEYS[{rule!r}]: {key} is an analysis key in a collection rule's row")
    return problems
