"""Stage pcsampling: decode visualize_data.bin of every rank; stall tables, hot lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dispatchprof.analysis.opprof_runs import (
    PerRank,
    rank_runs,
    read_each_rank,
    refused_details,
    refused_validations,
    why_no_run_has,
)
from dispatchprof.analysis.rank_identity import RankIdentityError, load_identities, refused_sentence
from dispatchprof.shell.config import world_ranks
from dispatchprof.analysis.pcsampling import HOT_LINE_SHARE, SIMT_FUNCTIONS, aggregate, coverage
from dispatchprof.shell.atomic import write_json_atomic
from dispatchprof.formats.msopprof import OpprofFormatError
from dispatchprof.formats.visualize_bin import STATES, VisualizeBinError, decode_pc_sampling
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation
from dispatchprof.tools.toolchain import resolve

NO_SAMPLES_WHY = (
    "no SIMT samples: visualize_data.bin has no TopStallReason block. msopprof switches PC sampling off silently "
    "when the kernel has no SIMT code (Has Simt=0 in dump/op_basic_info.txt) or when dump/pcSampling.bin* is missing"
)


def decode_ranks(run: StageRun) -> PerRank[Any]:
    """Every rank's decoded visualize_data.bin (one a rank). A rank whose file cannot be read or decoded is left out,
    with why (PerRank.refused), and the others go on. Raises RankIdentityError."""
    cfg = run.config
    unplaced: list[str] = []
    runs = rank_runs(
        run.raw_dir("pcsampling_dir"),
        cfg["cluster"]["nodes"],
        cfg["cluster"]["ranks_per_node"],
        cfg["kernel"]["name"],
        load_identities(run.params["identity"]),
        cfg["cluster"]["infer_rank"],
        unplaced,
    )
    with_file = [r for r in runs if (r.run.directory / "visualize_data.bin").is_file()]
    return read_each_rank(
        with_file,
        lambda r: decode_pc_sampling(r.run.directory / "visualize_data.bin"),
        (OpprofFormatError, VisualizeBinError),
        unplaced,
    )


def pcsampling_record(run: StageRun, merged: Mapping[str, Any], cov: Mapping[str, Any], source_mapped: bool) -> dict:
    """The stats file's record of samples that cover enough ranks (its summary is added by the caller)."""
    stalls, top_lines = merged["stalls"], merged["hot_lines"]
    candidates = {f: [f"{e['file']}:{e['line']}" for e in top_lines if e.get("function") == f] for f in SIMT_FUNCTIONS}
    return {
        "toolchain": run.toolchain,
        "source": run.source,
        "denominators": {
            "all_samples": "fraction of all samples, Active (issuing) included",
            "not_issue": "fraction of samples that did not issue (Active excluded): the stall breakdown",
        },
        "stalls": stalls,
        "hot_lines": top_lines,
        "hot_line_share": HOT_LINE_SHARE,
        "coverage": cov,
        "simt_functions_in_hot_lines": candidates,
        "per_function": merged["per_function"],
        "per_role": merged["per_role"],
        "per_role_definition": (
            "not-issued stall mixture of the hot source lines of the SIMT functions "
            "each role runs (docs/formats.md §3), weighted by their sample shares"
        ),
        "source_mapped": source_mapped,
        "instructions": merged["instructions_seen"],
        "per_rank": merged["per_rank"],
        "states": STATES,
    }


def pcsampling(run: StageRun, parts: Mapping[str, Status]) -> Status:
    """Decode every rank's samples, merge them into stalls, hot lines and per-role mixtures, and judge coverage."""
    cfg = run.config
    repo = (
        resolve(cfg).repo
        if cfg["mode"] == "collect"
        else (Path(cfg["deepep"]["repo"]) if cfg["deepep"]["repo"] else None)
    )
    try:
        files = decode_ranks(run)
    except RankIdentityError as exc:
        return run.status("invalid", str(exc))
    decoded = [(rank, data) for rank, launches in files.read.items() for _, data in launches]
    left_out, refused = refused_sentence(files.refused), refused_validations(files, "visualize_data.bin")
    if not decoded and files.refused:
        return run.status(
            "invalid",
            "no rank's visualize_data.bin can be read" + left_out,
            validations=refused,
            details=refused_details(files),
        )
    if not decoded:
        c = cfg["cluster"]
        why = why_no_run_has(
            "visualize_data.bin",
            run.raw_dir("pcsampling_dir"),
            c["nodes"],
            c["ranks_per_node"],
            cfg["kernel"]["name"],
            load_identities(run.params["identity"]),
            c["infer_rank"],
        )
        return run.status("invalid", f"no rank has PC sampling output: {why}")
    merged = aggregate(decoded, repo)
    per_rank, stalls, top_lines = merged["per_rank"], merged["stalls"], merged["hot_lines"]
    lines_seen = merged["lines_seen"]
    # Coverage as the timeline judges it: which of the world's ranks have samples (ranks without a run count as missing)
    cov = {
        **coverage(world_ranks(cfg), per_rank, cfg["stats"]["min_rank_coverage"], files.refused),
        **refused_details(files),
    }
    validations = list(refused)
    if cov["state"] == "none":
        result = {
            "toolchain": run.toolchain,
            "source": run.source,
            "no_samples": NO_SAMPLES_WHY,
            "coverage": cov,
            "per_rank": per_rank,
            "summary": {"stalls": None, "hot_lines": [], "coverage": cov},
        }
        write_json_atomic(run.outputs["stats"], result)
        validations.append(Validation("SIMT samples", False, "warning", NO_SAMPLES_WHY))
        return run.status("ok", NO_SAMPLES_WHY + left_out, validations=validations, details={"coverage": cov})
    if cov["state"] != "full":
        validations.append(
            Validation("rank coverage", False, "error" if cov["state"] == "most_missing" else "warning", cov["text"])
        )
    source_mapped = lines_seen > 0
    if not source_mapped:
        validations.append(
            Validation(
                "source mapping",
                False,
                "warning",
                "no per-line data: the kernel was built without -g, so msopprof could not map PCs to source lines; "
                "rebuild with device debug info (-g on the device target in "
                "cmake/AscendDeepEPKernel.cmake; the stand-in: deepep.build_env DEVICE_DEBUG_INFO=ON)",
            )
        )
    result = pcsampling_record(run, merged, cov, source_mapped)
    result["summary"] = {"stalls": stalls, "hot_lines": top_lines, "per_role": merged["per_role"], "coverage": cov}
    write_json_atomic(run.outputs["stats"], result)
    common = {
        "validations": validations,
        "upstream": {k: p.state for k, p in parts.items()},
        "details": {"coverage": cov},
    }
    if cov["state"] == "most_missing":  # means over a minority of ranks would pass for the cluster's picture
        return run.status(
            "invalid",
            f"PC sampling coverage too low: {cov['text']}" + left_out,
            artifacts=[str(p) for p in run.outputs.values()],
            **common,
        )
    reason = stall_reason(cov, stalls, top_lines) + left_out
    return run.status("ok", reason, artifacts=[str(p) for p in run.outputs.values()], **common)


def stall_reason(cov: Mapping[str, Any], stalls: Mapping[str, Any], top_lines: list[dict[str, Any]]) -> str:
    """The status sentence: coverage, the top not-issued stall, the hottest source line."""
    worst = max(stalls["not_issue"], key=stalls["not_issue"].get)
    lead = f"PARTIAL COVERAGE: {cov['text']}; " if cov["state"] == "partial" else ""
    reason = (
        lead + f"stall samples on {cov['found']} of {cov['expected']} ranks; top stall "
        f"{worst} ({100 * stalls['not_issue'][worst]:.0f}% of not-issued samples)"
    )
    reason += (
        f"; hottest line {top_lines[0]['file']}:{top_lines[0]['line']} "
        f"({top_lines[0].get('function') or 'function unknown'}, "
        f"{100 * top_lines[0]['share_of_samples']:.1f}% of all samples)"
        if top_lines
        else "; no source lines (see source mapping)"
    )
    return reason
