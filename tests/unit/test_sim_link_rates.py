"""The simulator's link capacities: the workflow's defaults (config schema) are the stand-in's own (the sim imports
nothing from the library), the workflow passes them to the stand-in, and under toolchain
sim they are the bound's peaks, said to be the simulator's capacity, never hardware."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from dispatchprof.tools.toolchain import SIM_ENV, _sim_value, configured_link_peaks, sim_link_peaks

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workflow" / "sim" / "ascend_deepep"))
from ascend_deepep._collective import DEFAULT_LINK_GBPS, Knobs  # noqa: E402


def test_the_schema_and_config_defaults_are_the_stand_ins():
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    link = schema["properties"]["sim"]["properties"]["link_gbps"]
    assert link["default"] == dict(DEFAULT_LINK_GBPS)
    assert {c: v["default"] for c, v in link["properties"].items()} == dict(DEFAULT_LINK_GBPS)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert config["sim"]["link_gbps"] == dict(DEFAULT_LINK_GBPS)


def test_the_stand_in_reads_the_capacities_the_workflow_passes():
    env = {SIM_ENV["link_gbps"]: _sim_value({"intra_node": 20.0, "inter_node": 5.5})}
    assert dict(Knobs.from_env(env).link_gbps) == {"intra_node": 20.0, "inter_node": 5.5}
    assert dict(Knobs.from_env({SIM_ENV["link_gbps"]: "inter_node=3"}).link_gbps) == {
        **DEFAULT_LINK_GBPS,
        "inter_node": 3.0,
    }
    assert dict(Knobs.from_env({}).link_gbps) == dict(DEFAULT_LINK_GBPS)
    with pytest.raises(ValueError, match="DEEPEP_SIM_LINK_GBPS"):
        Knobs.from_env({SIM_ENV["link_gbps"]: "nvlink=3"})


def test_under_sim_the_peaks_are_the_simulator_capacity_and_say_so():
    peaks = sim_link_peaks({"link_gbps": {"intra_node": 16.8, "inter_node": 11.2}})
    assert peaks["intra_node"]["peak_gbps"] == pytest.approx(16.8) and peaks["inter_node"][
        "peak_gbps"
    ] == pytest.approx(11.2)
    assert all(
        p["kind"] == "simulator"
        and p["source"].startswith("simulator capacity")
        and "not a hardware figure" in p["source"]
        for p in peaks.values()
    )


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
