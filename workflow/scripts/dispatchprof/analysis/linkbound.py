"""How far dispatch is from what its links allow: per link class, the time its bytes need at the class's peak on the
busiest rank (sending or receiving); the bound is the largest of those, and the group's efficiency is bound / measured.

- Bytes: ``traffic.link_bytes`` (token payload per (token, destination rank) pair, split by topology).
- Peaks: GB/s (1e9 B/s) per rank, in one direction (a rank's link can send at the peak and receive at the peak); a
  vendor figure that is a bidirectional aggregate must be halved before it is configured. A class whose bytes are
  not zero and whose peak is not configured leaves the bound not established ("peak not configured"), never a guess.
- Measured: the kernel scope's per-iteration max over ranks (median, with its bootstrap CI).
Efficiency is an average over the kernel, not a link counter and not evidence of congestion. It is never clamped: above
1 the peak or the byte definition is wrong, and the result says so.
"""

from __future__ import annotations

from typing import Any, Mapping

from dispatchprof.analysis.traffic import LINK_CLASSES

NOT_A_COUNTER = (
    "an average over the kernel: bytes / the whole kernel's time, not a link counter (no hardware counter was read) "
    "and not evidence of network congestion (a kernel far from its bound "
    "may be waiting for slow senders, its own work or a slow link alike)"
)
CLASS_TIME_MISSING = (
    "needs the class's own send time (DebugClock URMASendToken send phases per destination rank); this run has none "
    "(the legacy slots hold one send completion per core, not "
    "per destination), so only the group's efficiency is given"
)


def busiest(link: Mapping[str, Any], peak_gbps: float) -> dict[str, Any]:
    """The rank, sending or receiving, whose bytes need the longest at the peak. A node pair never binds harder: with a
    per-rank peak its links carry the sum of its ranks' (ranks_per_node x the peak), so its time is at most its busiest
    rank's; its bytes are shown (``per_node_pair``) to tell which pair carries the load."""
    candidates = [(b, r, "sends") for r, b in link["sent_per_rank"].items()]
    candidates += [(b, r, "receives") for r, b in link["received_per_rank"].items()]
    nbytes = max(b for b, _, _ in candidates)
    at_max = [(r, verb) for b, r, verb in candidates if b == nbytes]
    ranks = sorted({int(r) for r, _ in at_max})
    verbs = " and ".join(dict.fromkeys(verb for r, verb in at_max if int(r) == ranks[0]))
    # an even load: the first rank is named with how many share it, never alone
    where = f"rank {ranks[0]} {verbs}" + (f", as much as {len(ranks) - 1} other ranks" if len(ranks) > 1 else "")
    return {
        "where": where,
        "bytes": int(nbytes),
        "bound_us": nbytes / (peak_gbps * 1e3),
        "ranks_at_max": len(ranks),
    }  # GB/s x 1e3 = B/us


def class_bound(name: str, link: Mapping[str, Any], peak: Mapping[str, Any], kernel_us: float | None) -> dict[str, Any]:
    """One class: its bytes, its peak (with source), the bound
    on its busiest rank or node pair, and its average rate."""
    out: dict[str, Any] = {
        "bytes_per_launch": int(link["bytes_per_launch"]),
        "peak_gbps": peak.get("peak_gbps"),
        "peak_source": peak.get("source"),
        "peak_kind": peak.get("kind"),
        "configured_peak_gbps": peak.get(
            "configured_peak_gbps", peak.get("peak_gbps")
        ),  # under sim: hardware.links, shown, not used
        "bound_us": None,
        "busiest": None,
        "achieved_gbps": None,
        "efficiency": None,
        "efficiency_why": CLASS_TIME_MISSING,
    }
    if not link["bytes_per_launch"]:
        out["bound_us"], out["note"] = 0.0, "no bytes of this class: it sets no bound"
        return out
    busy_bytes = max([*link["sent_per_rank"].values(), *link["received_per_rank"].values()])
    if kernel_us:  # the busiest rank's bytes over the whole kernel: per rank, comparable with a per-rank peak
        out["achieved_gbps"] = busy_bytes / (kernel_us * 1e3)
        out["achieved_definition"] = (
            f"the busiest rank's bytes of this class ({busy_bytes} B) / "
            f"the median per-iteration max kernel time; {NOT_A_COUNTER}"
        )
    if peak.get("peak_gbps") is None:
        out["note"] = f"peak not configured (hardware.links.{name}.peak_gbps)"
        return out
    out["busiest"] = busiest(link, float(peak["peak_gbps"]))
    out["bound_us"] = out["busiest"]["bound_us"]
    return out


def link_bound(
    link_bytes: Mapping[str, Any],
    peaks: Mapping[str, Mapping[str, Any]],
    per_iteration_max: Mapping[str, Any] | None,
    far_below: float = 0.6,
) -> dict[str, Any]:
    """The bandwidth section: per class (``class_bound``), the bound (largest class bound), the group's efficiency with
    its CI (bound / the CI of the median per-iteration max), which class sets the bound, and what the figures are not.
    ``far``: the efficiency is below ``far_below`` (hardware.far_below)."""
    section: dict[str, Any] = {
        "links": None,
        "bound_us": None,
        "efficiency": None,
        "definition": link_bytes.get("definition"),
        "not": NOT_A_COUNTER,
        "far_below": far_below,
        "far": None,
    }
    if not link_bytes.get("available"):
        section["reason"] = f"no link bytes: {link_bytes.get('reason')}"
        return section
    kernel_us = per_iteration_max["median"] if per_iteration_max else None
    links = {c: class_bound(c, link_bytes["links"][c], peaks.get(c, {}), kernel_us) for c in LINK_CLASSES}
    section["links"] = links
    section["bytes"] = {
        c: {k: link_bytes["links"][c][k] for k in ("sent_per_rank", "received_per_rank", "per_node_pair")}
        for c in LINK_CLASSES
    }
    unset = [c for c, v in links.items() if v["bound_us"] is None]
    if unset:
        section["reason"] = (
            "peak not configured for "
            + " and ".join(f"{c} (hardware.links.{c}.peak_gbps)" for c in unset)
            + ": the bound is not established"
        )
        return section
    sets = max(LINK_CLASSES, key=lambda c: links[c]["bound_us"])
    section.update(bound_us=links[sets]["bound_us"], sets_bound=sets, busiest=links[sets]["busiest"])
    if not kernel_us or not section["bound_us"]:
        section["reason"] = (
            "no measured kernel time" if not kernel_us else "no cross-rank bytes: nothing for the links to carry"
        )
        return section
    lo, hi = per_iteration_max["median_ci95"]
    section.update(
        measured_us=kernel_us,
        efficiency=section["bound_us"] / kernel_us,
        efficiency_ci95=[section["bound_us"] / hi, section["bound_us"] / lo],
        efficiency_definition=(
            "bound / the median per-iteration max kernel time (kernel scope); CI from the median's bootstrap CI"
        ),
    )
    section["far"] = section["efficiency"] < far_below
    if section["efficiency"] > 1:
        section["warning"] = (
            f"efficiency {section['efficiency']:.2f} > 1: the kernel moved its bytes faster than the configured peak "
            "allows, so the peak (hardware.links.*.peak_gbps: per rank, one "
            "direction) or the byte definition is wrong; the value is not clamped"
        )
    return section
