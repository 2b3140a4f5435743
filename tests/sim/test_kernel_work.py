"""What a commit can change under the simulator: kernels/elastic_dispatch.cpp's WORK_<role> constants, which the
stand-in's build writes into the kernel library and the simulated roles read from the library (not from a knob).
The truth is the events: the cores' own work per role."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"))

from ascend_deepep._collective import Cluster, CollectiveModel, Knobs, library_work  # noqa: E402

STAND_IN = Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"
CLUSTER = Cluster(world=4, ranks_per_node=2, num_aiv=56, num_experts=32)
SENDS = [[96 * 7168 * 2] * 4 for _ in range(4)]


def built(tmp_path: Path, factor: str | None) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(STAND_IN, repo, ignore=shutil.ignore_patterns("build", "__pycache__"))
    source = repo / "kernels" / "elastic_dispatch.cpp"
    if factor is not None:
        text = source.read_text()
        assert "constexpr float WORK_URMASendToken = 1.0f;" in text
        source.write_text(text.replace("WORK_URMASendToken = 1.0f", f"WORK_URMASendToken = {factor}f"))
    subprocess.run(["bash", "scripts/build.sh"], cwd=repo, check=True, capture_output=True)
    return repo / "build" / "libascend_deepep_kernels.so"


def test_the_build_writes_the_constant_into_the_library_and_the_stand_in_reads_it(tmp_path):
    assert library_work(built(tmp_path / "a", None)) == {"URMASendToken": 1.0}
    assert library_work(built(tmp_path / "b", "0.7")) == {"URMASendToken": 0.7}
    assert library_work(tmp_path / "none.so") == {}  # no library: the model as it is


def busy(work):
    model = CollectiveModel(CLUSTER, Knobs(seed=3), work=work)
    launches = [model.launch(call, SENDS, True) for call in range(4)]
    per_role = {}
    for launch in launches:
        for rank in launch.ranks:
            for core in rank.cores:
                per_role.setdefault(core.role, []).append(core.busy_us())
    return {role: sum(v) / len(v) for role, v in per_role.items()}


def test_less_urma_work_in_the_library_means_less_busy_time_on_the_urma_cores_only():
    base, less = busy({}), busy({"URMASendToken": 0.7})
    assert less["URMASendToken"] < 0.8 * base["URMASendToken"]
    for role in ("TokenCopyToBuffer", "CalCumSum"):
        assert abs(less[role] - base[role]) < 0.02 * base[role]
