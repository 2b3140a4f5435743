import math

import pandas as pd
import pytest

from dispatchprof.analysis.roles import longest_cores, ordering, per_core, role_statistics

ROLES = [{"name": "Stage", "count": 2}, {"name": "Send", "count": 1}, {"name": "Sum", "count": 1}]


def long_table(rank, times, misses, order=None):
    """Vector cores of one rank: (block, vector k) in a scrambled file order."""
    cores = [(0, 0), (0, 1), (1, 0), (1, 1)]
    rows = []
    for block, k in order or cores:
        i = cores.index((block, k))
        for metric, value in (("aiv_time(us)", times[i]), ("aiv_icache_miss_rate", misses[i]), ("aic_time(us)", math.nan)):
            rows.append(
                {
                    "rank": rank,
                    "node": 0,
                    "device": rank,
                    "block_id": block,
                    "sub_block_id": f"vector{k}",
                    "core_kind": "vector",
                    "core_index": k,
                    "metric": metric,
                    "value": value,
                }
            )
    return pd.DataFrame(rows)


def test_aiv_index_orders_by_block_then_vector_sub_block_whatever_the_file_order():
    frame = long_table(0, [10, 11, 30, 5], [0.01, 0.02, 0.2, 0.03], order=[(1, 1), (0, 1), (1, 0), (0, 0)])
    cores = per_core(frame, ROLES)
    assert cores["aiv_index"].tolist() == [0, 1, 2, 3]
    assert cores["role"].tolist() == ["Stage", "Stage", "Send", "Sum"]
    assert cores["aiv_time_us"].tolist() == [10, 11, 30, 5]


def test_role_statistics_pool_every_rank_and_keep_not_provided_as_none():
    frame = pd.concat([long_table(0, [10, 12, 30, 5], [0.01, 0.03, 0.2, math.nan]), long_table(1, [14, 16, 40, 6], [0.02, 0.04, 0.4, math.nan])])
    cores = per_core(frame, ROLES)
    stats = role_statistics(cores)
    assert stats["Stage"]["cores"] == 4 and stats["Stage"]["aiv_time_us_median"] == 13.0 and stats["Stage"]["aiv_time_us_spread"] == 6.0
    assert stats["Send"]["aiv_icache_miss_rate_max"] == pytest.approx(0.4)
    assert stats["Sum"]["aiv_icache_miss_rate_median"] is None  # NA everywhere: not provided, not 0
    assert stats["Stage"]["aiv_vec_ratio_median"] is None
    assert ordering(stats, "aiv_time_us_median") == ["Send", "Stage", "Sum"]
    assert ordering(stats, "aiv_icache_miss_rate_median") == ["Send", "Stage", "Sum"]
    assert longest_cores(cores, 1)[0] == {"rank": 1, "aiv_index": 2, "role": "Send", "aiv_time_us": 40.0, "aiv_icache_miss_rate": pytest.approx(0.4)}


def test_cores_beyond_the_configured_roles_are_unassigned():
    cores = per_core(long_table(0, [1, 2, 3, 4], [0, 0, 0, 0]), [{"name": "Stage", "count": 3}])
    assert cores["role"].tolist() == ["Stage", "Stage", "Stage", "unassigned"]
