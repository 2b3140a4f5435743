"""Generated torch_npu trees (synthetic, labelled so: profiler_info files and dbs written here after torch_npu's
names, docs/formats.md §1.7) with missing files, duplicate rank ids and bad JSON: the discovery and the rank rule
end in a mapping that agrees with what the files say, or in a stated refusal that names the directories, and they
never write into the tree."""

import hashlib
import json
import sqlite3
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.rank_identity import RankIdentityError, assign_ranks
from dispatchprof.analysis.timeline import coverage_rows, prof_sources
from dispatchprof.stages.timeline_parse import read_node_infos

RANKS_PER_NODE = 4
INFO_KINDS = ("good", "name_only", "missing", "bad_json", "disagrees", "no_rank_json")

directory = st.fixed_dictionaries(
    {
        "rank": st.integers(0, RANKS_PER_NODE - 1),
        "info": st.sampled_from(INFO_KINDS),
        "db": st.sampled_from(("mapped", "unmapped", "absent")),  # RANK_DEVICE_MAP names the rank, -1, or no db
    }
)


def write_db(path: Path, device: int, rank: int) -> None:
    """The two tables discovery reads from a torch_npu db: TASK's device ids and RANK_DEVICE_MAP."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, globalTaskId INTEGER)")
        conn.execute("INSERT INTO TASK VALUES (1, 2, ?, 1)", (device,))
        conn.execute("CREATE TABLE RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER)")
        conn.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?, ?)", (rank, device))
    conn.close()


def write_tree(root: Path, dirs: list[dict]) -> dict[Path, dict]:
    """Each generated directory as torch_npu names it; returns what each was written to say, by path."""
    written = {}
    for i, d in enumerate(dirs):
        path = root / f"worker{i}_{1000 + i}_20250109071747{i:03d}_ascend_pt"
        path.mkdir(parents=True)
        rank = d["rank"]
        info = path / f"profiler_info_{rank}.json"
        if d["info"] == "good":
            info.write_text(json.dumps({"config": {}, "rank_id": rank}))
        elif d["info"] == "name_only":
            info.write_text("{}")
        elif d["info"] == "bad_json":
            info.write_text('{"rank_id": ')
        elif d["info"] == "disagrees":
            info.write_text(json.dumps({"rank_id": rank + 1}))
        elif d["info"] == "no_rank_json":
            (path / "profiler_info.json").write_text(json.dumps({"rank_id": -1}))
        if d["db"] != "absent":
            name = (
                "ascend_pytorch_profiler.db"
                if d["info"] in ("missing", "no_rank_json")
                else f"ascend_pytorch_profiler_{rank}.db"
            )
            write_db(path / "ASCEND_PROFILER_OUTPUT" / name, i, rank if d["db"] == "mapped" else -1)
        written[path] = d
    return written


def recorded(d: dict) -> int | None:
    """The rank the files of a directory say, where they say one without contradiction."""
    if d["info"] in ("good", "name_only") or (d["info"] in ("missing", "no_rank_json") and d["db"] == "mapped"):
        return d["rank"]
    return None


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(directory, min_size=1, max_size=5))
def test_generated_torch_npu_trees_map_what_the_files_say_or_refuse_naming_the_directories(dirs):
    with TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        written = write_tree(root, dirs)
        before = snapshot(root)
        found = read_node_infos(root, range(1), RANKS_PER_NODE)
        per_node, refused, named = found.per_node, found.refused, found.named
        assert found.unreadable == {}  # every entry of a written tree can be read
        refused_text = "; ".join(refused.get(0, []))
        for path, d in written.items():
            if d["info"] in ("bad_json", "disagrees"):
                assert str(path) in refused_text and path not in per_node[0]  # refused, naming the directory's file
            else:
                assert path in per_node[0] and per_node[0][path].rank_id == recorded(d)
        try:
            assignments = assign_ranks(prof_sources(0, per_node[0], named), RANKS_PER_NODE, {})
        except RankIdentityError as exc:
            claimed = [p for p in per_node[0] if str(p) in str(exc)]
            assert len(claimed) == 2 and "claimed twice" in str(exc) and "analyze.rank_map" in str(exc)
        else:
            rows = coverage_rows(range(1), RANKS_PER_NODE, assignments, per_node[0], "device_id", refused)
            for row in rows:
                if row["prof_dir"] is None:
                    assert row["state"] in ("missing", "refused") and row["detail"]
                    continue
                d = written[Path(row["prof_dir"])]
                # a recorded rank is kept; none recorded: local rank = the device id (the directory's index here)
                expected = recorded(d) if recorded(d) is not None else list(written).index(Path(row["prof_dir"]))
                assert row["global_rank"] == expected
                assert row["state"] == ("found" if d["db"] != "absent" else "missing")
        assert snapshot(root) == before
