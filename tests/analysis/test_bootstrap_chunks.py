"""The bootstrap resampled in chunks sized by bytes gives the numbers the former fixed chunks gave, bit for bit."""

import numpy as np
import pytest

from dispatchprof.analysis import latency
from dispatchprof.analysis.latency import bootstrap_ci


def former_bootstrap_ci(values: np.ndarray, q: float, resamples: int, seed: int) -> list[float]:
    """bootstrap_ci as it was before its chunks were sized by bytes (500 resamples x n int64 indices per chunk)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return [float("nan"), float("nan")]
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    for start in range(0, resamples, 500):
        stop = min(resamples, start + 500)
        idx = rng.integers(0, len(values), size=(stop - start, len(values)))
        stats[start:stop] = np.percentile(values[idx], q, axis=1, method="linear")
    return [float(np.percentile(stats, 2.5, method="linear")), float(np.percentile(stats, 97.5, method="linear"))]


def heavy_tailed(n: int, seed: int) -> np.ndarray:
    """Latencies with ties and a tail, like a kernel's per-iteration maxima (rounded to the CSV's ns)."""
    rng = np.random.default_rng(seed)
    return np.round(100 + rng.gamma(2.0, 3.0, n) + (rng.random(n) < 0.02) * rng.uniform(50, 400, n), 3)


@pytest.mark.parametrize("n", [2, 3, 7, 1000, 4097])
@pytest.mark.parametrize("seed", [0, 1, 12345])
@pytest.mark.parametrize("q", [50, 95])
def test_the_cis_are_the_former_ones_bit_for_bit(n, seed, q):
    values = heavy_tailed(n, seed + n)
    assert bootstrap_ci(values, q, 1001, seed) == former_bootstrap_ci(values, q, 1001, seed)


@pytest.mark.parametrize("budget", [1, 12 * 300, 12 * 300 * 7, 10**9])
def test_any_chunk_size_gives_the_same_numbers_and_no_chunk_exceeds_its_bytes(monkeypatch, budget):
    # at n = 300: budget 1 gives one resample per chunk, 12 * 300 * 7 seven (2000 is no multiple of 7), 10**9 one chunk
    values = heavy_tailed(300, 5)
    rows: list[int] = []
    draw = latency.resampled_percentiles

    def recorded(values, q, rng, count, index):
        rows.append(count)
        assert index == np.int32  # n fits: 4 bytes per index, not 8
        return draw(values, q, rng, count, index)

    monkeypatch.setattr(latency, "BOOTSTRAP_CHUNK_BYTES", budget)
    monkeypatch.setattr(latency, "resampled_percentiles", recorded)
    assert bootstrap_ci(values, 95, 2000, 3) == former_bootstrap_ci(values, 95, 2000, 3)
    assert sum(rows) == 2000
    assert max(rows) == max(1, min(2000, budget // (300 * 12)))  # indices (int32) and gathered floats: 12 bytes each
