"""Wait-aware localisation checked against the simulator's ground truth: the stand-in runs under the stand-in msprof
(2 nodes x 4 ranks, synchronize_start as the perf loop sets it), the library parses every PROF_ as the timeline's
parse job does, and analysis.waits must name what sim_truth.json says the group waited for."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from test_artifacts_agree import NODES, run_cluster

from dispatchprof.analysis import waits
from dispatchprof.analysis.timeline import barrier_before, kernel_regex
from dispatchprof.formats.msprof import discover, read_prof_info
from dispatchprof.formats.target_kernels import read_target_kernels
from dispatchprof.report.cause_text import in_words

RPN, ITERATIONS, SKIP = 4, 40, 3
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _defaults import timeline_settings  # noqa: E402

SETTINGS, BOOT = timeline_settings()  # the schema's defaults: what the timeline stage analyses with


def analysed(tmp_path, knobs: dict, synchronize_start: bool = True) -> tuple[dict, dict]:
    extra = {"DISPATCHPROF_SYNCHRONIZE_START": "1" if synchronize_start else "0"}
    out = run_cluster(
        tmp_path, {**knobs, "noise_seed": 3}, profiler="msprof", rpn=RPN, iterations=ITERATIONS, extra_env=extra
    )
    truth = json.loads((out / "latency" / "sim_truth.json").read_text())
    rank, launch, columns = [], [], {k: [] for k in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")}
    target, barrier = kernel_regex("elastic_dispatch_kernel"), kernel_regex("cached_notify_combine")
    for node in range(NODES):
        for prof in discover(tmp_path / "prof" / f"node{node}"):
            info = read_prof_info(prof)
            kernels = read_target_kernels(
                info, lambda n: bool(target.match(n)), 0, is_barrier=lambda n: bool(barrier.match(n))
            )
            bstart, bdur = barrier_before(kernels)
            n = len(kernels.start_ns)
            rank += [info.rank_id] * (n - SKIP)
            launch += list(range(SKIP, n))
            for key, values in (
                ("start_ns", kernels.start_ns),
                ("dur_ns", kernels.dur_ns),
                ("barrier_start_ns", bstart),
                ("barrier_dur_ns", bdur),
            ):
                columns[key] += [float(v) if v != -1 else np.nan for v in values[SKIP:]]
    grid = waits.grid(np.array(rank), np.array(launch), {k: np.array(v) for k, v in columns.items()}, RPN)
    return in_words(waits.analyse(grid, SETTINGS, [], BOOT), SETTINGS), truth  # in words, as the stage writes it


def test_no_knob_names_nobody_and_reports_the_coupling(tmp_path):
    result, _ = analysed(tmp_path, {})
    assert result["coupling"]["state"] == "coupled"
    assert result["straggler"]["evidence"] == "none" and result["straggler"]["rank"] is None


def test_a_late_rank_is_named_through_the_barrier_kernel_never_a_waiting_rank(tmp_path):
    result, truth = analysed(tmp_path, {"late_rank": 5, "late_us": 60})
    assert [c["ranks"] for c in truth["root_causes"]] == [[5]]
    strag = result["straggler"]
    assert strag["evidence"] == "late_arrival" and strag["rank"] == 5 and strag["fraction"] > 0.9
    # its cost: per launch, what the truth's barrier says rank 5's lateness held the group (its arrival minus the
    # next one's, up to the 60 us it was late), averaged over the analysed launches
    held = []
    for launch in truth["launches"][SKIP:]:
        arrivals = sorted(r["arrival_us"] for r in launch["ranks"])
        last = max(launch["ranks"], key=lambda r: r["arrival_us"])
        held.append(min(60.0, arrivals[-1] - arrivals[-2]) if last["rank"] == 5 else 0.0)
    assert strag["cost_us_per_launch"] == pytest.approx(np.mean(held), rel=0.1)
    assert strag["cost_timed_us_per_launch"] == pytest.approx(0.0, abs=0.5)
    assert 5 not in strag["waiting"]["ranks"]
    # the longest barrier waits belong to the ranks that waited for rank 5
    waits_of = {int(r): w["sync_barrier_median"] for r, w in result["entry_wait_us"]["per_rank"].items()}
    assert min(waits_of, key=waits_of.get) == 5


def test_without_synchronize_start_a_late_rank_is_named_through_the_kernels_entry_barrier(tmp_path):
    result, truth = analysed(tmp_path, {"late_rank": 5, "late_us": 60}, synchronize_start=False)
    assert (
        truth["run"]["synchronize_start"] is False
        and truth["launches"][0]["barrier"]["which"] == "elastic_dispatch_kernel entry"
    )
    strag = result["straggler"]
    assert strag["evidence"] == "late_arrival" and strag["rank"] == 5 and "entry barrier" in strag["explanation"]
    waits_of = {int(r): w["kernel_entry_median"] for r, w in result["entry_wait_us"]["per_rank"].items()}
    assert min(waits_of, key=waits_of.get) == 5 and all(
        w is None for w in (x["sync_barrier_median"] for x in result["entry_wait_us"]["per_rank"].values())
    )


def last_arrivals(launch: dict) -> frozenset[int]:
    """The ranks of one launch that arrived after the largest gap between consecutive arrivals (its events)."""
    ranks = sorted(launch["ranks"], key=lambda r: r["arrival_us"])
    gaps = [b["arrival_us"] - a["arrival_us"] for a, b in zip(ranks, ranks[1:])]
    return frozenset(r["rank"] for r in ranks[gaps.index(max(gaps)) + 1 :])


def test_a_late_node_is_named_as_a_node(tmp_path):
    result, truth = analysed(tmp_path, {"late_node": 1, "late_us": 60})
    # the truth, from the events: the ranks that arrived last, apart from the others, in most launches, are every
    # rank of one node and no other; and removing their lateness gives the group time back (the counterfactual)
    launches = truth["launches"][SKIP:]
    late, count = Counter(last_arrivals(launch) for launch in launches).most_common(1)[0]
    node_of = {r["rank"]: r["node"] for r in launches[0]["ranks"]}
    (node,) = {node_of[r] for r in late}
    assert count >= 0.9 * len(launches) and late == {r for r, n in node_of.items() if n == node}, (late, count)
    arrivals = [c for c in truth["root_causes"] if c["evidence"] == "late_arrival"]
    assert [sorted(c["ranks"]) for c in arrivals] == [sorted(late)] and arrivals[0]["cost_us_per_launch"] > 0
    strag = result["straggler"]
    assert strag["evidence"] == "late_arrival" and strag["node"] == node and strag["ranks"] == sorted(late), strag


def test_a_slow_sender_is_never_blamed_on_its_waiting_peers(tmp_path):
    # A slow core slows its WQE building, not the wire (about a third of a send in this shape): x3 makes rank 2's
    # sends the last ones for node 1 despite the position of each destination in its senders' send loops.
    result, truth = analysed(tmp_path, {"slow_role": {"rank": 2, "role": "URMASendToken", "factor": 3.0}})
    strag = result["straggler"]
    # a slow sender in every launch is the typical launch: the timeline names at most a late-ending node (no blame);
    # a rank blamed for its own work or a late arrival must be rank 2 itself, never a receiver waiting for its tokens
    for cause in [strag, *result["straggler"]["causes"]]:
        assert cause["evidence"] in ("none", "late_ending_node", "in_kernel") or cause["rank"] == 2
    # the truth: which ranks waited for rank 2's tokens last; none of them is blamed
    victims = {
        r["rank"]
        for launch in truth["launches"][SKIP:]
        for r in launch["ranks"]
        if r["tokens_awaited_rank"] == 2 and r["rank"] != 2
    }
    blamed = {c["rank"] for c in strag["causes"] if c["evidence"] in ("own_work", "late_arrival")}
    assert victims and not blamed & victims


def test_a_slow_receive_side_is_its_own_work(tmp_path):
    # this small shape copies little per core: x30 makes rank 6's receive side ~15 us longer than its peers'
    result, truth = analysed(tmp_path, {"slow_role": {"rank": 6, "role": "LocalWindowCopy", "factor": 30.0}})
    assert truth["root_causes"][0]["evidence"] == "own_work"
    strag = result["straggler"]
    assert strag["evidence"] == "own_work" and strag["rank"] == 6
    # its cost in the timed scope: rank 6's lead over the next end, per the truth's kernel ends
    leads = []
    for launch in truth["launches"][SKIP:]:
        ends = sorted(r["kernel_end_us"] for r in launch["ranks"])
        last = max(launch["ranks"], key=lambda r: r["kernel_end_us"])
        leads.append(ends[-1] - ends[-2] if last["rank"] == 6 else 0.0)
    assert strag["cost_timed_us_per_launch"] == pytest.approx(np.mean(leads), rel=0.1)
    assert 6 not in strag["waiting"]["ranks"]


def test_a_clock_offset_with_drift_blames_nobody_and_is_estimated_within_20_us(tmp_path):
    result, truth = analysed(tmp_path, {"clock_offset_us": {"1": 7500.0}, "clock_drift_ppm": {"1": 30.0}})
    assert result["straggler"]["evidence"] == "none"
    estimate = result["node_clock"]["1"]["offset_us"]
    true = truth["clocks"]["1"]["offset_us"] - truth["clocks"]["0"]["offset_us"]
    assert estimate == pytest.approx(true, abs=20.0)


def test_a_slow_link_is_not_taken_for_a_clock_offset(tmp_path):
    result, truth = analysed(tmp_path, {"slow_link": {"src_node": 0, "dst_node": 1, "factor": 2.5}})
    true = truth["clocks"]["1"]["offset_us"] - truth["clocks"]["0"]["offset_us"]
    assert result["node_clock"]["1"]["offset_us"] == pytest.approx(true, abs=20.0)


def busy_excess(ranks: list[dict]) -> dict[tuple[int, str], float]:
    """Per (rank, role) of a replayed launch's truth: its cores' median busy time over the same role's median on the
    other ranks, minus 1 (the relative excess of its work)."""
    busy: dict[tuple[int, str], float] = {}
    for rank in ranks:
        for role in {c["role"] for c in rank["cores"]}:
            busy[rank["rank"], role] = float(np.median([c["busy_us"] for c in rank["cores"] if c["role"] == role]))
    out = {}
    for (rank, role), mine in busy.items():
        others = [b for (r, name), b in busy.items() if name == role and r != rank]
        out[rank, role] = mine / float(np.median(others)) - 1.0
    return out


def test_the_pmu_names_the_slow_senders_rank_and_role_by_busy_time(tmp_path):
    import pandas as pd

    from dispatchprof.analysis.roles import busiest, per_core, role_boundaries
    from dispatchprof.formats.msopprof import discover as discover_opprof
    from dispatchprof.formats.msopprof import kernel_runs, metric_files, read_metric_csv

    out = run_cluster(
        tmp_path,
        {"slow_role": {"rank": 5, "role": "URMASendToken", "factor": 1.6}, "noise_seed": 4},
        profiler="msopprof",
        rpn=RPN,
        iterations=4,
    )
    truth = json.loads((out / "latency" / "sim_truth.json").read_text())
    # PMU sees one replayed launch: with this seed no rank has a random spike in it (a spike is a cause of its own)
    assert all(r["work_factor"] == 1.0 for r in truth["replays"][0]["ranks"])
    # the truth, from the replayed launch's events: the (rank, role) whose cores worked longest beyond the same role
    # on the other ranks (median busy time over its cores, against the other ranks' median), and by a clear margin
    excess = busy_excess(truth["replays"][0]["ranks"])
    slowest, runner_up = sorted(excess, key=excess.get, reverse=True)[:2]
    assert excess[slowest] > 0.2 and excess[runner_up] < excess[slowest] / 2, excess
    tiling = truth["run"]["tiling"]
    roles = [{"name": name, "count": tiling.count(name)} for name in dict.fromkeys(tiling)]
    frames = []
    for node in range(NODES):
        for opprof in discover_opprof(tmp_path / "opprof" / f"node{node}"):
            for run in kernel_runs(opprof):
                _, long = read_metric_csv(metric_files(run.directory)["PipeUtilization"])
                frames.append(long.assign(rank=node * RPN + run.device, node=node, device=run.device))
    cores = per_core(pd.concat(frames, ignore_index=True), roles)
    top = busiest(cores, 0.1)
    assert top is not None and (top["rank"], top["role"]) == slowest, (top, excess)
    # a URMA core's time with no pipe active is its polling (for the link, for its peers), as the truth says: some on
    # every core, never more than the truth's polling time (pipe times overlap, so their sum bounds the busy time from
    # above; 1% of aiv_time for the ratios' rounding). With link capacities shared per
    # rank port the link wait is no longer most of a URMA core's time in every shape.
    polling = {(r["rank"], c["block_id"]): c["polling_us"] for r in truth["replays"][0]["ranks"] for c in r["cores"]}
    urma = cores[cores["role"] == "URMASendToken"]
    assert all(
        0 < row.no_pipe_us <= polling[(row.rank, row.aiv_index)] + 0.01 * row.aiv_time_us for row in urma.itertuples()
    )
    assert role_boundaries(cores, roles)["unexpected"] == []
