"""Bytes per link class from hand-built routings with known counts (2 nodes x 8 ranks, 3 nodes x 4 ranks)."""

from __future__ import annotations

from dispatchprof.analysis.traffic import link_bytes

HIDDEN, ROW = 10, 20  # bf16: 10 x 2 bytes per (token, destination rank) pair


def record(rank: int, topk: list[list[int]], experts_per_rank: int, ranks_per_node: int) -> dict:
    """One rank's routing record as the perf driver writes it (dispatchprof_perf_runtime.record_routing)."""
    dest: dict[str, dict] = {}
    for experts in topk:
        per_rank: dict[int, int] = {}
        for e in experts:
            if e >= 0:
                per_rank[e // experts_per_rank] = per_rank.get(e // experts_per_rank, 0) + 1
        for r, pairs in per_rank.items():
            d = dest.setdefault(
                str(r),
                {
                    "tokens": 0,
                    "pairs": 0,
                    "remote": r != rank,
                    "same_node": r // ranks_per_node == rank // ranks_per_node,
                },
            )
            d["tokens"] += 1
            d["pairs"] += pairs
    return {"global_rank": rank, "available": True, "destinations": dest}


def test_two_nodes_of_eight_count_each_destination_rank_once_per_token():
    # 16 ranks, 2 experts per rank (expert e lives on rank e // 2). Rank 0 sends 3 tokens:
    # token a -> experts 2, 3 (both on rank 1: one pair, intra), 16 (rank 8: inter);
    # token b -> experts 0 (itself: no link), 18, 19 (both on rank 9: one pair, inter);
    # token c -> experts -1 (masked), 4 (rank 2, intra). Rank 9 sends one token to experts 0, 1 (rank 0, inter, once).
    routing = [record(0, [[2, 3, 16], [0, 18, 19], [-1, 4, 4]], 2, 8), record(9, [[0, 1, -1]], 2, 8)]
    routing += [record(r, [], 2, 8) for r in range(16) if r not in (0, 9)]
    out = link_bytes(routing, HIDDEN, "bf16", ranks_per_node=8)
    intra, inter = out["links"]["intra_node"], out["links"]["inter_node"]
    assert intra["bytes_per_launch"] == 2 * ROW  # rank 0 -> 1, rank 0 -> 2
    assert inter["bytes_per_launch"] == 3 * ROW  # rank 0 -> 8, rank 0 -> 9, rank 9 -> 0
    assert intra["bytes_per_launch"] + inter["bytes_per_launch"] == out["cross_rank_token_bytes"] == 5 * ROW
    assert inter["sent_per_rank"] == {"0": 2 * ROW, "9": ROW}
    assert inter["received_per_rank"] == {"8": ROW, "9": ROW, "0": ROW}
    assert inter["per_node_pair"] == {"0->1": 2 * ROW, "1->0": ROW}
    assert intra["per_node_pair"] == {"0->0": 2 * ROW}


def test_three_nodes_of_four_split_by_topology():
    # 12 ranks, 4 experts per rank (rank = e // 4), 4 ranks per node (node = rank // 4). Rank 5 (node 1) sends:
    # token -> experts 20, 21, 22 (all rank 5: itself), token -> 24, 25 (rank 6, intra, once), 0 (rank 0, node 0),
    # token -> 47 (rank 11, node 2), 44 (rank 11 again: once). Rank
    # 11 (node 2) sends one token to rank 8 (intra) and 1 (node 0).
    routing = [record(5, [[20, 21, 22], [24, 25, 0], [47, 44, -1]], 4, 4), record(11, [[32, 4, -1]], 4, 4)]
    routing += [record(r, [], 4, 4) for r in range(12) if r not in (5, 11)]
    out = link_bytes(routing, HIDDEN, "bf16", ranks_per_node=4)
    intra, inter = out["links"]["intra_node"], out["links"]["inter_node"]
    assert intra["bytes_per_launch"] == 2 * ROW  # 5 -> 6, 11 -> 8
    assert inter["bytes_per_launch"] == 3 * ROW  # 5 -> 0, 5 -> 11, 11 -> 1
    assert intra["bytes_per_launch"] + inter["bytes_per_launch"] == out["cross_rank_token_bytes"]
    assert inter["per_node_pair"] == {"1->0": ROW, "1->2": ROW, "2->0": ROW}
    assert inter["received_per_rank"] == {"0": ROW, "11": ROW, "1": ROW}
    assert intra["sent_per_rank"] == {"5": ROW, "11": ROW}


def test_a_missing_rank_leaves_the_link_bytes_not_provided():
    out = link_bytes([{"global_rank": 3, "available": False}], HIDDEN, "bf16", ranks_per_node=4)
    assert out["available"] is False and "3" in out["reason"] and "links" not in out


def test_a_rank_without_a_record_leaves_the_link_bytes_not_provided():
    routing = [record(r, [], 2, 8) for r in range(16) if r != 11]
    out = link_bytes(routing, HIDDEN, "bf16", ranks_per_node=8, world=16)
    assert out["available"] is False and out["reason"] == "routing not recorded for ranks [11]"


def test_a_cluster_that_does_not_match_the_recorded_topology_is_refused():
    routing = [record(r, [[(r + 4) % 16 * 2]], 2, 8) for r in range(16)]  # recorded on 2 nodes of 8
    out = link_bytes(routing, HIDDEN, "bf16", ranks_per_node=4, world=16)  # analysed as 4 nodes of 4
    assert (
        out["available"] is False
        and "rank 0 -> 4: the driver recorded same_node=True" in out["reason"]
        and "ranks_per_node 4" in out["reason"]
    )
