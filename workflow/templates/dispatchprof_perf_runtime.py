"""Runtime of the generated perf driver (dispatchprof). Standard library only: it runs in the test's
Python environment, next to perf_driver.py, on every rank.

Environment: DISPATCHPROF_OUT (where to write), DISPATCHPROF_WARMUP, DISPATCHPROF_ITERATIONS,
DISPATCHPROF_NUM_EXPERTS, DISPATCHPROF_RANKS_PER_NODE, DISPATCHPROF_TOPK_KEY, DISPATCHPROF_SYNCHRONIZE_START (1|0); RANK (node index) and
RANK_ID (global rank, set by the driver at the start of the per-rank function); DISPATCHPROF_HOST_CLOCK
(optional, module:function): the clock of the full-API scope instead of time.perf_counter. Only the simulated
cluster sets it (its modelled host clock); the clock used is written to api/clock.json.
"""

import csv
import importlib
import json
import os
import socket
import time

OUT = os.environ.get("DISPATCHPROF_OUT", "dispatchprof_out")
WARMUP = int(os.environ.get("DISPATCHPROF_WARMUP", "10"))
ITERATIONS = int(os.environ.get("DISPATCHPROF_ITERATIONS", "110"))
# profile_dispatch_latency(synchronize_start=...): an untimed barrier kernel before each timed launch (default on)
SYNCHRONIZE_START = os.environ.get("DISPATCHPROF_SYNCHRONIZE_START", "1") == "1"
_api: list = []
CLOCK_NAME = os.environ.get("DISPATCHPROF_HOST_CLOCK") or "time.perf_counter"


def _clock():
    if CLOCK_NAME == "time.perf_counter":
        return time.perf_counter
    module, _, name = CLOCK_NAME.partition(":")
    return getattr(importlib.import_module(module), name)


clock = _clock()


def _ranks():
    node = int(os.environ.get("RANK", "0"))
    per_node = int(os.environ.get("DISPATCHPROF_RANKS_PER_NODE", "1"))
    global_rank = os.environ.get("RANK_ID")
    if global_rank is None:
        return node, None, None
    global_rank = int(global_rank)
    return node, global_rank - node * per_node, global_rank


def _atomic_open(path, newline=None):
    """A temporary file beside ``path`` for one process (this rank), opened as a plain open() opens it: its mode is
    0666 less the umask (tempfile's 0600 would lock a lead out of the run on a shared filesystem). os.replace it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return open(f"{path}.{os.getpid()}.tmp", "w", newline=newline)


def _write_json(path, data):
    with _atomic_open(path) as handle:
        json.dump(data, handle, indent=1)
    os.replace(handle.name, path)


def latency_dir():
    return os.path.join(OUT, "latency")


def _tag():
    node, local, global_rank = _ranks()
    return f"rank{global_rank}" if global_rank is not None else f"node{node}_pid{os.getpid()}"


def _device_id():
    try:
        import torch

        return int(torch.npu.current_device())
    except Exception as exc:  # the device is recorded as unknown, never guessed
        return f"unknown ({type(exc).__name__})"


def record_routing(dispatch_args):
    """Per destination rank: tokens and (token, expert) pairs this rank sends, local or remote."""
    node, local, global_rank = _ranks()
    identity = {
        "hostname": socket.gethostname(),
        "node": node,
        "local_rank": local,
        "global_rank": global_rank,
        "device_id": _device_id(),
        "pid": os.getpid(),
        "ASCEND_RT_VISIBLE_DEVICES": os.environ.get("ASCEND_RT_VISIBLE_DEVICES"),
        "RANK_ID": os.environ.get("RANK_ID"),
    }
    _write_json(os.path.join(OUT, "identity", _tag() + ".json"), identity)
    routing = {"global_rank": global_rank, "available": False, "destinations": {}}
    key = os.environ.get("DISPATCHPROF_TOPK_KEY", "topk_idx")
    topk = dispatch_args.get(key) if isinstance(dispatch_args, dict) else None
    if topk is not None and global_rank is not None:
        rows = topk.tolist() if hasattr(topk, "tolist") else list(topk)
        world = int(os.environ.get("WORLD_SIZE", "1")) * int(os.environ.get("DISPATCHPROF_RANKS_PER_NODE", "1"))
        per_rank = int(os.environ["DISPATCHPROF_NUM_EXPERTS"]) // world
        per_node = int(os.environ.get("DISPATCHPROF_RANKS_PER_NODE", "1"))
        dest = {}
        for experts in rows:
            ranks_of_token = {}
            for e in experts:
                if int(e) < 0:
                    continue  # a masked expert slot routes nowhere
                r = int(e) // per_rank
                ranks_of_token[r] = ranks_of_token.get(r, 0) + 1
            for r, pairs in ranks_of_token.items():
                d = dest.setdefault(str(r), {"tokens": 0, "pairs": 0, "remote": r != global_rank, "same_node": r // per_node == global_rank // per_node})
                d["tokens"] += 1
                d["pairs"] += pairs
        routing.update(available=True, key=key, destinations=dest, num_tokens=len(rows))
    else:
        routing["note"] = f"dispatch arguments have no {key!r} (or the global rank is unknown)"
    _write_json(os.path.join(OUT, "routing", _tag() + ".json"), routing)


def record_api(iteration, started):
    _api.append((iteration, (clock() - started) * 1e6))


def finish():
    _write_json(os.path.join(OUT, "api", "clock.json"), {"clock": CLOCK_NAME, "wall_time": CLOCK_NAME == "time.perf_counter"})
    path = os.path.join(OUT, "api", _tag() + ".csv")
    node, local, global_rank = _ranks()
    with _atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rank", "iteration", "api_us", "is_warmup"])
        for iteration, us in _api:
            writer.writerow([global_rank, iteration, f"{us:.3f}", int(iteration < WARMUP)])
    os.replace(handle.name, path)
