"""Which build each side of a comparison ran: deepep.ref, its resolved sha and the built libraries' sha256 (from each
run's build.json), and the diff stat between the two sides' commits, computed by the comparison job (never the
build). comparison.json holds it as ``sides: {a: {...}, b: {...}, diff_stat}``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from dispatchprof.shell.gitref import diff_stat


def read_record(path: Path | str | None) -> dict[str, Any] | None:
    try:
        return json.loads(Path(path).read_text()) if path else None
    except (OSError, ValueError):
        return None


def side(experiment: str, config: Mapping[str, Any], records: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """One side: its experiment, deepep.ref, the sha its build resolved and the libraries' sha256 (of the first
    run; ``runs_agree`` says whether every repeat built the same sha and libraries)."""
    deepep = config.get("deepep", {})
    first = next((r for r in records if r), None) or {}
    libs = {lib["path"]: lib["sha256"] for lib in first.get("libraries", [])}
    seen = {
        (r.get("sha"), tuple(sorted((x["path"], x["sha256"]) for x in r.get("libraries", [])))) for r in records if r
    }
    return {
        "experiment": experiment,
        "repo": first.get("source_repo") or deepep.get("repo"),
        "ref": deepep.get("ref"),
        "sha": first.get("sha"),
        "library_sha256": libs,
        "runs_agree": len(seen) <= 1,
        "build_records": sum(1 for r in records if r),
    }


def sides(
    names: Mapping[str, str],
    configs: Mapping[str, Mapping[str, Any]],
    runs: Mapping[str, Sequence[str]],
    inputs: Mapping[str, Any],
) -> tuple[dict[str, Any], list[str]]:
    """``sides`` of comparison.json and the notes it adds (a side without a ref, both sides on one commit, repeats
    that built different commits). ``inputs``: the compare job's, whose ``<side>_build_<run>`` are build.json."""
    records = {s: [read_record(inputs.get(f"{s}_build_{run}")) for run in runs[s]] for s in ("a", "b")}
    out: dict[str, Any] = {s: side(names[s], configs[s], records[s]) for s in ("a", "b")}
    notes = [
        f"{out[s]['experiment']}: its repeats built different commits or libraries (build.json differs)"
        for s in ("a", "b")
        if not out[s]["runs_agree"]
    ]
    a, b = out["a"], out["b"]
    if a["sha"] and b["sha"]:
        if a["sha"] == b["sha"]:
            notes.append(f"both sides built the same commit {a['sha'][:12]}: not a commit A/B")
        repo = a["repo"] or b["repo"]
        out["diff_stat"] = (
            diff_stat(Path(repo), a["sha"], b["sha"]) if repo else {"error": "no repository recorded by the builds"}
        )
    else:
        without = [out[s]["experiment"] for s in ("a", "b") if not out[s]["sha"]]
        out["diff_stat"] = {"error": f"no diff stat: {', '.join(without)} built the working tree (no deepep.ref)"}
    if a["library_sha256"] and a["library_sha256"] == b["library_sha256"] and a["sha"] != b["sha"]:
        notes.append("the two sides' libraries have the same sha256: the commits differ, the builds do not")
    return out, notes
