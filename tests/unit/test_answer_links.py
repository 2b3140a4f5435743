"""The answer's line on the links' limit (report.summary.bandwidth_line), from hand-built summary sections."""

from __future__ import annotations

import shlex

from dispatchprof.report.steps import Run, collect_command
from dispatchprof.report.summary import bandwidth_line, evidence_parts, evidence_sentences
from dispatchprof.shell.status import Status

PER_ITER = {"median": 2000.0, "median_ci95": [1900.0, 2100.0], "p95": 2200.0, "n": 50}


def section(efficiency=0.5, far=True, kind="configured", warning=None, command="snakemake ..."):
    link = {
        "bytes_per_launch": 8_000_000,
        "peak_gbps": 1.0,
        "peak_kind": kind,
        "bound_us": 1000.0,
        "achieved_gbps": 0.5,
        "efficiency": None,
    }
    bw = {
        "links": {"inter_node": link, "intra_node": {**link, "bound_us": 600.0}},
        "bound_us": 1000.0,
        "efficiency": efficiency,
        "efficiency_ci95": [0.48, 0.53],
        "sets_bound": "inter_node",
        "busiest": {"where": "rank 3 sends", "bytes": 1_000_000, "bound_us": 1000.0},
        "far": far,
        "warning": warning,
        "tell_apart_command": command,
    }
    return {
        "baseline": {
            "per_iteration_max_us": PER_ITER,
            "slowest_named": {"rank": None, "why": "-"},
            "slowest_rank": None,
            "bandwidth": bw,
        }
    }


def test_the_line_gives_the_time_the_bound_and_the_share():
    line = bandwidth_line(section(far=False))
    assert line.startswith(
        "Dispatch takes 2000 us (median per-iteration max); its links allow 1000 us (inter-node "
        "bytes at the configured peak, 1.0 GB/s per rank; busiest: rank 3 sends): 50% of the bound"
    )
    assert "50% of the bound (95% CI 48.0-53.0%" in line and "not a link counter" in line
    assert "slow link" not in line
    assert "the simulator's capacity" in bandwidth_line(section(far=False, kind="simulator"))


def test_far_from_the_bound_with_nobody_standing_out_names_the_step_that_tells_link_from_senders():
    line = bandwidth_line(section())
    assert "a slow link or slow senders on every rank would look like this" in line and line.endswith(
        ": snakemake ...."
    )
    named = section()
    named["baseline"]["slowest_named"] = {"rank": 4}
    assert "slow senders" not in bandwidth_line(named)
    node = {**section(), "timeline": {"straggler": {"evidence": "late_ending_node", "node": 1}}}
    assert "slow senders" not in bandwidth_line(node)


def test_an_efficiency_above_one_carries_its_warning():
    line = bandwidth_line(
        section(
            efficiency=1.4, far=False, warning="efficiency 1.40 > 1: the peak ... is wrong; the value is not clamped"
        )
    )
    assert "140% of the bound" in line and "Efficiency 1.40 > 1" in line


def test_no_bound_says_why_and_no_bytes_say_nothing():
    data = section()
    data["baseline"]["bandwidth"] = {
        "efficiency": None,
        "reason": "peak not configured for inter_node (hardware.links.inter_node.peak_gbps)",
    }
    assert bandwidth_line(data) == (
        "Dispatch takes 2000 us (median per-iteration max); how long its links allow is not established: "
        "peak not configured for inter_node (hardware.links.inter_node.peak_gbps)."
    )
    assert bandwidth_line({"baseline": {"per_iteration_max_us": PER_ITER, "bandwidth": None}}) is None


def test_the_line_is_its_own_item_after_the_latency():
    states = {
        s: Status(s, "e", "ok", "r", "sim")
        for s in ("env_capture", "build", "correctness", "baseline", "timeline", "pmu", "pcsampling")
    }
    parts = evidence_parts(evidence_sentences(states, "sim", 16, section()))
    topics = [p["topic"] for p in parts]
    assert topics.index("links") == topics.index("latency") + 1


def test_the_debugclock_command_forces_its_collection_with_the_runs_own_config_words():
    plain = shlex.split(collect_command("debugclock", Run("base")))
    assert plain == [
        "snakemake",
        "--cores",
        "2",
        "results/base/debugclock/status.json",
        "--forcerun",
        "debugclock_collect",
        "--config",
        "debugclock={when: always}",
    ]
    words = shlex.split(collect_command("debugclock", Run("base", ("--config", "experiment=base"))))
    assert words.count("--config") == 1 and words[-1] == "debugclock={when: always}" and "experiment=base" in words


def test_the_links_table_names_a_simulator_peak_a_simulator_capacity_and_a_configured_one_configured():
    from dispatchprof.report.stage_sections import link_rows

    def link(kind: str) -> dict:
        return {
            "bytes_per_launch": 1000,
            "peak_gbps": 11.2,
            "peak_kind": kind,
            "busiest": None,
            "bound_us": 1.0,
            "achieved_gbps": 5.0,
            "efficiency": 0.5,
        }

    rows = link_rows({"links": {"inter_node": link("simulator"), "intra_node": link("configured")}})
    peaks = {row[0][0]: row[2][0] for row in rows}
    assert peaks == {"inter_node": "11.2 GB/s (simulator capacity)", "intra_node": "11.2 GB/s (configured)"}
