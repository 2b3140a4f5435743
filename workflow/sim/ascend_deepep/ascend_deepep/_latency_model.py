"""The stand-in's latency model: what one dispatch kernel launch would take on one rank.

Composed from the kernel's AIV roles (shared/formats/deepep.md §4) so a change to one role moves the
end-to-end latency: CalCumSum, then TokenCopyToBuffer, then the slower of URMASendToken (remote bytes)
and SelfCopyToken (local bytes). Multiplicative jitter, rare tail spikes and a warm-up transient on top.
Knobs (environment): DEEPEP_SIM_SLOW_RANK + DEEPEP_SIM_SLOW_FACTOR (consistently slower),
DEEPEP_SIM_SPIKY_RANK (occasionally much slower), DEEPEP_SIM_ROLE_SPEEDUP ("Role=0.9,Other=1.1"),
DEEPEP_SIM_NOISE_SEED. All numbers are simulated.
"""

from __future__ import annotations

import math
import os
import random

# Simulated throughputs in bytes per microsecond and fixed costs in microseconds.
REMOTE_BYTES_PER_US = 25_000.0
LOCAL_BYTES_PER_US = 90_000.0
STAGE_BYTES_PER_US = 120_000.0
JITTER_SIGMA = 0.02
SPIKE_PROB, SPIKE_RANGE = 0.002, (1.3, 1.8)
SPIKY_PROB, SPIKY_RANGE = 0.08, (2.0, 3.0)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value not in ("", "None") else None


def role_speedups() -> dict[str, float]:
    spec = os.environ.get("DEEPEP_SIM_ROLE_SPEEDUP", "")
    return {k: float(v) for k, v in (item.split("=") for item in spec.split(",") if item)}


def role_times_us(remote_bytes: int, local_bytes: int, num_experts: int) -> dict[str, float]:
    speed = role_speedups()
    times = {
        "CalCumSum": 6.0 + 0.02 * num_experts,
        "TokenCopyToBuffer": 4.0 + (remote_bytes + local_bytes) / STAGE_BYTES_PER_US,
        "URMASendToken": 8.0 + remote_bytes / REMOTE_BYTES_PER_US,
        "SelfCopyToken": 3.0 + local_bytes / LOCAL_BYTES_PER_US,
    }
    return {role: t * speed.get(role, 1.0) for role, t in times.items()}


def kernel_us(rank: int, call: int, warmup: int, remote_bytes: int, local_bytes: int, num_experts: int) -> float:
    roles = role_times_us(remote_bytes, local_bytes, num_experts)
    base = roles["CalCumSum"] + roles["TokenCopyToBuffer"] + max(roles["URMASendToken"], roles["SelfCopyToken"])
    seed = _env_int("DEEPEP_SIM_NOISE_SEED") or 0
    rng = random.Random(f"{seed}/{rank}/{call}")
    t = base * math.exp(rng.gauss(0.0, JITTER_SIGMA))
    if rng.random() < SPIKE_PROB:
        t *= rng.uniform(*SPIKE_RANGE)
    if rank == _env_int("DEEPEP_SIM_SPIKY_RANK") and rng.random() < SPIKY_PROB:
        t *= rng.uniform(*SPIKY_RANGE)
    if rank == _env_int("DEEPEP_SIM_SLOW_RANK"):
        t *= float(os.environ.get("DEEPEP_SIM_SLOW_FACTOR", "1.15"))
    if call < warmup:
        t *= 1.0 + 1.5 * math.exp(-call / 2.0)
    return t


# The stand-in kernel's own tiling: what the real role split might be (the workflow's kernel.roles is an
# assumption the user configures; here it is the simulated truth).
ROLE_ORDER = ("TokenCopyToBuffer", "URMASendToken", "SelfCopyToken", "CalCumSum")
ROLE_PROFILE = {  # vec, scalar, mte2, mte3 ratios and the base I-cache miss rate per role
    "TokenCopyToBuffer": (0.05, 0.10, 0.45, 0.35, 0.020),
    "URMASendToken": (0.02, 0.40, 0.20, 0.10, 0.025),
    "SelfCopyToken": (0.03, 0.08, 0.50, 0.40, 0.015),
    "CalCumSum": (0.30, 0.30, 0.10, 0.05, 0.030),
}


def stand_in_tiling(num_aiv: int) -> list[str]:
    cumsum = max(1, min(16, num_aiv // 2))
    selfcopy = min(4, max(0, num_aiv - cumsum - 2))
    rest = num_aiv - cumsum - selfcopy
    stage, urma = (rest + 1) // 2, rest // 2
    return ["TokenCopyToBuffer"] * stage + ["URMASendToken"] * urma + ["SelfCopyToken"] * selfcopy + ["CalCumSum"] * cumsum


def core_metrics(rank: int, num_aiv: int, remote_bytes: int, local_bytes: int, num_experts: int) -> list[dict]:
    """Per AIV core: the PMU view of one launch (aiv time, ratios, I-cache miss rate). Simulated."""
    times = role_times_us(remote_bytes, local_bytes, num_experts)
    hot = os.environ.get("DEEPEP_SIM_ICACHE_HOT_ROLE", "")
    rng = random.Random(f"pmu/{_env_int('DEEPEP_SIM_NOISE_SEED') or 0}/{rank}")
    slow = float(os.environ.get("DEEPEP_SIM_SLOW_FACTOR", "1.15")) if rank == _env_int("DEEPEP_SIM_SLOW_RANK") else 1.0
    cores = []
    for i, role in enumerate(stand_in_tiling(num_aiv)):
        vec, scalar, mte2, mte3, miss = ROLE_PROFILE[role]
        if role == hot:
            miss = 0.28
        cores.append(
            {
                "block_id": i,
                "sub_block_id": "vector0",
                "role": role,
                "aiv_time_us": times[role] * slow * math.exp(rng.gauss(0, 0.03)),
                "vec_ratio": vec,
                "scalar_ratio": scalar,
                "mte2_ratio": mte2,
                "mte3_ratio": mte3,
                "mte2_bw": round(remote_bytes / max(times[role], 1.0) / 1e3 * mte2, 3),
                "icache_miss_rate": min(1.0, max(0.0, miss * math.exp(rng.gauss(0, 0.1)))),
            }
        )
    return cores
