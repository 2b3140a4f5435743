"""The simulator's links against the analysis's link bound (issue 47, item 6).

- Bytes per link class: the analysis's count from the perf driver's routing records equals the byte matrix the stand-in
  built from the same routing (its own rule, ``elastic.destinations``), split by topology.
- The bound is a real bound of the simulated kernel: over seeds, shapes, routes, capacities and a slow link, no launch's
  timed kernel scope (max over ranks of kernel-mode latency) is below the bound the analysis computes from the bytes and
  the simulator's capacities (sim.link_gbps), so the efficiency is at most 1.
- The efficiency is the event model's: bound / the median per-launch max the model gives, the bound checked against the
  busiest port computed here from the byte matrix; a slow link (x2 from node 0 to node 1) lowers it to at most 0.65 of
  the plain run's, on the same draws.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
from analysis.test_link_bytes import record as routing_record  # one rank's record as the perf driver writes it
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.linkbound import link_bound
from dispatchprof.analysis.traffic import link_bytes
from dispatchprof.tools.toolchain import sim_link_peaks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"))
from ascend_deepep._collective import DEFAULT_LINK_GBPS, Cluster, CollectiveModel, Knobs  # noqa: E402
from ascend_deepep.elastic import destinations, make_inputs  # noqa: E402

HIDDEN, DTYPE, DTYPE_BYTES = 7168, "bf16", 2


def stand_in_run(nodes: int, rpn: int, route: str, seed: int, tokens: int, topk: int, experts_per_rank: int):
    """The stand-in's byte matrix (sends[src][dst], as
    ElasticBuffer.dispatch builds it) and the perf driver's records."""
    world = nodes * rpn
    experts = experts_per_rank * world
    inputs = {r: make_inputs(seed, r, tokens, topk, experts, world, route) for r in range(world)}
    row = HIDDEN * DTYPE_BYTES
    sends = [
        [len(tok) * row for _, tok in sorted(destinations(inputs[r].topk_idx, experts_per_rank, world).items())]
        for r in range(world)
    ]
    records = [routing_record(r, inputs[r].topk_idx, experts_per_rank, rpn) for r in range(world)]
    return sends, records


def by_class(sends: list[list[int]], rpn: int) -> dict[str, dict[str, dict[str, int]]]:
    """The stand-in's bytes per class, per sending and per receiving rank (a rank's own tokens need no link)."""
    out = {c: {"sent": {}, "received": {}} for c in ("intra_node", "inter_node")}
    for src, row in enumerate(sends):
        for dst, nbytes in enumerate(row):
            if src == dst or not nbytes:
                continue
            cls = out["intra_node" if src // rpn == dst // rpn else "inter_node"]
            cls["sent"][str(src)] = cls["sent"].get(str(src), 0) + nbytes
            cls["received"][str(dst)] = cls["received"].get(str(dst), 0) + nbytes
    return out


def busiest_port_us(sends: list[list[int]], rpn: int, gbps: dict[str, float]) -> float:
    """The longest any rank's send or receive port of a class needs for its bytes at the simulator's capacity."""
    classes = by_class(sends, rpn)
    return max(
        (max([0, *v["sent"].values(), *v["received"].values()]) / (gbps[c] * 1e3) for c, v in classes.items()),
        default=0.0,
    )


def timed_per_launch(
    nodes: int, rpn: int, num_aiv: int, knobs: Knobs, sends: list[list[int]], launches: int, sync: bool = True
) -> list[float]:
    cluster = Cluster(world=nodes * rpn, ranks_per_node=rpn, num_aiv=num_aiv, num_experts=nodes * rpn)
    model = CollectiveModel(cluster, knobs)
    return [max(r.kernel_mode_us for r in model.launch(call, sends, sync).ranks) for call in range(launches)]


def measured(timed: list[float]) -> dict:
    median = statistics.median(timed)
    return {"median": median, "median_ci95": [min(timed), max(timed)]}


@pytest.mark.parametrize("nodes,rpn", [(2, 8), (3, 4)])
@pytest.mark.parametrize("route", ["balanced", "skewed", "random"])
def test_bytes_per_class_are_the_bytes_the_stand_in_sent(nodes, rpn, route):
    sends, records = stand_in_run(nodes, rpn, route, seed=3, tokens=64, topk=6, experts_per_rank=24)
    out = link_bytes(records, HIDDEN, DTYPE, ranks_per_node=rpn)
    truth = by_class(sends, rpn)
    for c, v in truth.items():
        assert (
            out["links"][c]["sent_per_rank"] == v["sent"] and out["links"][c]["received_per_rank"] == v["received"]
        ), c
        assert out["links"][c]["bytes_per_launch"] == sum(v["sent"].values())
    cross = sum(nbytes for src, row in enumerate(sends) for dst, nbytes in enumerate(row) if src != dst)
    assert (
        out["links"]["intra_node"]["bytes_per_launch"] + out["links"]["inter_node"]["bytes_per_launch"]
        == cross
        == out["cross_rank_token_bytes"]
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from([(1, 4), (2, 2), (2, 4), (2, 8), (3, 3), (3, 4), (4, 2)]),
    route=st.sampled_from(["balanced", "skewed", "random"]),
    seed=st.integers(0, 10_000),
    tokens=st.integers(1, 96),
    topk=st.integers(1, 6),
    num_aiv=st.sampled_from([6, 12, 24, 56]),
    intra=st.floats(0.5, 60.0),
    inter=st.floats(0.5, 60.0),
    slow=st.none() | st.floats(1.0, 4.0),
    sync=st.booleans(),
)
def test_no_simulated_launch_beats_the_bound_of_its_bytes_at_the_simulator_capacity(
    shape, route, seed, tokens, topk, num_aiv, intra, inter, slow, sync
):
    nodes, rpn = shape
    sends, records = stand_in_run(nodes, rpn, route, seed, tokens, topk, experts_per_rank=6)
    gbps = {"intra_node": intra, "inter_node": inter}
    knobs = Knobs(seed=seed, link_gbps=gbps, slow_link=(0, nodes - 1, slow) if slow else None)
    timed = timed_per_launch(nodes, rpn, num_aiv, knobs, sends, launches=3, sync=sync)
    section = link_bound(
        link_bytes(records, HIDDEN, DTYPE, ranks_per_node=rpn), sim_link_peaks({"link_gbps": gbps}), measured(timed)
    )
    assert section["bound_us"] == pytest.approx(busiest_port_us(sends, rpn, gbps), rel=1e-12)
    assert all(t >= section["bound_us"] for t in timed), (timed, section["bound_us"])
    if section["efficiency"] is not None:
        assert 0 < section["efficiency"] <= 1 and "warning" not in section


def test_the_demo_efficiency_is_the_event_models_and_a_slow_link_lowers_it_to_at_most_065_of_it():
    # the demo's shape (config/config.yaml): 2 x 8, 256 tokens, top-6 of 384 experts, balanced, 56 AIV cores
    sends, records = stand_in_run(2, 8, "balanced", seed=0, tokens=256, topk=6, experts_per_rank=24)
    peaks = sim_link_peaks({"link_gbps": dict(DEFAULT_LINK_GBPS)})
    bytes_ = link_bytes(records, HIDDEN, DTYPE, ranks_per_node=8)
    effs = {}
    for name, knobs in (("plain", Knobs(seed=7)), ("slow_link", Knobs(seed=7, slow_link=(0, 1, 2.0)))):
        timed = timed_per_launch(2, 8, 56, knobs, sends, launches=24)[4:]  # the first calls are cold
        section = link_bound(bytes_, peaks, measured(timed))
        assert section["sets_bound"] == "inter_node"
        assert section["efficiency"] == pytest.approx(
            busiest_port_us(sends, 8, dict(DEFAULT_LINK_GBPS)) / statistics.median(timed), rel=1e-12
        )
        effs[name] = section["efficiency"]
    assert 0 < effs["plain"] <= 1
    assert effs["slow_link"] <= 0.65 * effs["plain"], effs
