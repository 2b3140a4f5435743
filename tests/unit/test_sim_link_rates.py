"""The workflow's copy of the simulator's link rates equals the
stand-in's own (the sim imports nothing from the library)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dispatchprof.tools.toolchain import SIM_QUEUE_GBPS, configured_link_peaks, sim_link_peaks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"))
from ascend_deepep._collective import LINK_BYTES_PER_US  # noqa: E402


def test_the_sim_queue_rates_are_the_stand_ins():
    assert SIM_QUEUE_GBPS == {"intra_node": LINK_BYTES_PER_US[True] / 1e3, "inter_node": LINK_BYTES_PER_US[False] / 1e3}


def test_a_sim_ranks_rate_is_the_queue_rate_times_its_destinations_of_the_class():
    peaks = sim_link_peaks(nodes=2, ranks_per_node=8)
    assert peaks["intra_node"]["peak_gbps"] == pytest.approx(2.4 * 7) and peaks["inter_node"][
        "peak_gbps"
    ] == pytest.approx(1.4 * 8)
    assert all(p["kind"] == "simulator" and "not a hardware figure" in p["source"] for p in peaks.values())
    assert sim_link_peaks(nodes=1, ranks_per_node=8)["inter_node"]["peak_gbps"] is None  # one node: no inter-node link


def test_configured_peaks_keep_null_as_not_configured():
    hw = {
        "links": {
            "intra_node": {"peak_gbps": 50.0, "source": "a datasheet"},
            "inter_node": {"peak_gbps": None, "source": None},
        }
    }
    peaks = configured_link_peaks(hw)
    assert peaks["intra_node"] == {"peak_gbps": 50.0, "source": "a datasheet", "kind": "configured"}
    assert peaks["inter_node"]["peak_gbps"] is None
