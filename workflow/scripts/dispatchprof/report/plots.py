"""Latency plots as PNG files (matplotlib, no display). The report embeds them; nothing is computed here
that the statistics do not already hold, except drawing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:  # the report's stacked_shares runs without pandas: its import is ~0.5 s of the report job
    import pandas as pd


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{path.suffix}")  # the suffix picks the format: .png, or .svg for report.md
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    tmp.replace(path)


def rank_distributions(frame: pd.DataFrame, title: str, path: Path) -> None:
    """Per-rank distribution of measured samples (box), warm-up samples marked as x."""
    import numpy as np

    # arrays, not a copy of the frame per selection: on a 5M-row CSV each copy is ~120 MiB (issue 58 part 4)
    warmup = frame["warmup"].to_numpy(dtype=bool)
    keep = frame["in_average"].to_numpy(dtype=bool) & ~warmup
    rank, us = frame["rank"].to_numpy(), frame["us"].to_numpy()
    ranks = sorted(np.unique(rank).tolist())
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(ranks) + 2), 3.6))
    measured_rank, measured_us = rank[keep], us[keep]
    del keep
    ax.boxplot(
        [measured_us[measured_rank == r] for r in ranks],
        positions=range(len(ranks)),
        showfliers=True,
        widths=0.6,
    )
    del measured_rank, measured_us
    warm_rank, warm_us = rank[warmup], us[warmup]
    ax.scatter(
        [ranks.index(r) for r in warm_rank.tolist()],
        warm_us,
        marker="x",
        color="#9a6700",
        s=14,
        label="warm-up (excluded)",
    )
    ax.set_xticks(range(len(ranks)), [str(r) for r in ranks])
    ax.set_xlabel("rank")
    ax.set_ylabel("latency (us)")
    ax.set_title(title)
    if len(warm_us):
        ax.legend(loc="upper right", fontsize=8)
    _save(fig, path)


def iteration_max_series(per_iter: pd.DataFrame, warmup_iterations: int, title: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.plot(per_iter["iteration"], per_iter["max_us"], lw=1, color="#0969da")
    if warmup_iterations:
        ax.axvspan(-0.5, warmup_iterations - 0.5, color="#d0d7de", alpha=0.6, label="warm-up (excluded)")
        ax.legend(loc="upper right", fontsize=8)
    ax.set_xlabel("iteration")
    ax.set_ylabel("max over ranks (us)")
    ax.set_title(title)
    _save(fig, path)


def slowest_rank_histogram(fractions: dict[str, float], title: str, path: Path) -> None:
    ranks = sorted(fractions, key=int)
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(ranks) + 2), 3.0))
    ax.bar(range(len(ranks)), [fractions[r] for r in ranks], color="#cf222e")
    ax.set_xticks(range(len(ranks)), ranks)
    ax.set_xlabel("rank")
    ax.set_ylabel("fraction of iterations longest")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    _save(fig, path)


def stacked_shares(shares: dict[str, dict[str, float]], title: str, path: Path) -> None:
    """One horizontal bar per row (e.g. a role), split by category shares that sum to 1."""
    rows = list(shares)
    categories = sorted(
        {c for mix in shares.values() for c in mix}, key=lambda c: -sum(m.get(c, 0.0) for m in shares.values())
    )
    fig, ax = plt.subplots(figsize=(9, 1.0 + 0.5 * len(rows)))
    left = [0.0] * len(rows)
    colors = plt.get_cmap("tab10")
    for k, category in enumerate(categories):
        values = [shares[r].get(category, 0.0) for r in rows]
        ax.barh(rows, values, left=left, color=colors(k % 10), label=category)
        left = [a + b for a, b in zip(left, values)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of not-issued samples")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, fontsize=7)
    ax.set_title(title)
    _save(fig, path)
