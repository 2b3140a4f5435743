"""Runtime of the generated perf driver (dispatchprof). Standard library only: it runs in the test's
Python environment, next to perf_driver.py, on every rank.

Environment: DISPATCHPROF_OUT (where to write), DISPATCHPROF_WARMUP, DISPATCHPROF_ITERATIONS,
DISPATCHPROF_NUM_EXPERTS, DISPATCHPROF_RANKS_PER_NODE, DISPATCHPROF_TOPK_KEY, DISPATCHPROF_SYNCHRONIZE_START (1|0); RANK
(node index) and RANK_ID (global rank, set by the driver at the start of the per-rank function); DISPATCHPROF_HOST_CLOCK
(optional, module:function): the clock of the full-API scope instead of time.perf_counter. Only the simulated cluster
sets it (its modelled host clock); the clock used is written to api/clock.json. DISPATCHPROF_MODULE (default
ascend_deepep): the package whose loaded files are named, with their sha256, in library/<rank>.json and
in one "[rank r] dispatchprof: loaded ..." line of the log per file (which build did this run import?).
"""

import csv
import hashlib
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


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _mapped_under(root):
    """Shared objects this process has mapped from under ``root`` (Linux /proc/self/maps; empty elsewhere)."""
    try:
        with open("/proc/self/maps") as handle:
            paths = {line.split(None, 5)[5].strip() for line in handle if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    return sorted(p for p in paths if ".so" in os.path.basename(p) and os.path.realpath(p).startswith(root + os.sep))


def loaded_library():
    """The package the test imported (DISPATCHPROF_MODULE): its file, the native libraries mapped from its
    directory or from DISPATCHPROF_IMPORT_ROOT, and the stand-in's KERNEL_LIBRARY, each with its sha256. Computed
    here, as the real package prints none."""
    name = os.environ.get("DISPATCHPROF_MODULE", "ascend_deepep")
    module = importlib.import_module(name)
    init = os.path.realpath(getattr(module, "__file__", None) or "")
    files = [init] if os.path.isfile(init) else []
    # the package's own directory, and the checkout it was asked to come from (its build/ holds the kernel library);
    # never the whole site-packages, which would list torch's libraries too
    roots = [os.path.dirname(init)] if files else []
    if os.environ.get("DISPATCHPROF_IMPORT_ROOT"):
        roots.append(os.path.realpath(os.environ["DISPATCHPROF_IMPORT_ROOT"]))
    for root in roots:
        files += _mapped_under(root)
    kernel = getattr(module, "KERNEL_LIBRARY", None)  # the stand-in names the library it stands for
    if kernel is not None and os.path.isfile(str(kernel)):
        files.append(os.path.realpath(str(kernel)))
    return {"module": name, "file": init, "files": [{"path": f, "sha256": _sha256(f)} for f in dict.fromkeys(files)]}


def record_library():
    """Write library/<rank>.json and print one line per loaded file (the node log keeps it)."""
    try:
        loaded = loaded_library()
    except Exception as exc:  # the record says why, the run goes on
        loaded = {"error": f"{type(exc).__name__}: {exc}"}
    _write_json(os.path.join(OUT, "library", _tag() + ".json"), loaded)
    node, local, global_rank = _ranks()
    for entry in loaded.get("files", []):
        print(f"[rank {global_rank}] dispatchprof: loaded {entry['path']} sha256 {entry['sha256']}", flush=True)
    if "error" in loaded:
        print(f"[rank {global_rank}] dispatchprof: could not name the loaded library: {loaded['error']}", flush=True)


def record_routing(dispatch_args):
    """Per destination rank: tokens and (token, expert) pairs this rank sends, local or remote; and which library
    this process loaded (record_library)."""
    record_library()
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
                d = dest.setdefault(
                    str(r),
                    {
                        "tokens": 0,
                        "pairs": 0,
                        "remote": r != global_rank,
                        "same_node": r // per_node == global_rank // per_node,
                    },
                )
                d["tokens"] += 1
                d["pairs"] += pairs
        routing.update(available=True, key=key, destinations=dest, num_tokens=len(rows))
    else:
        routing["note"] = f"dispatch arguments have no {key!r} (or the global rank is unknown)"
    _write_json(os.path.join(OUT, "routing", _tag() + ".json"), routing)


def record_api(iteration, started):
    _api.append((iteration, (clock() - started) * 1e6))


def finish():
    _write_json(
        os.path.join(OUT, "api", "clock.json"), {"clock": CLOCK_NAME, "wall_time": CLOCK_NAME == "time.perf_counter"}
    )
    path = os.path.join(OUT, "api", _tag() + ".csv")
    node, local, global_rank = _ranks()
    with _atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rank", "iteration", "api_us", "is_warmup"])
        for iteration, us in _api:
            writer.writerow([global_rank, iteration, f"{us:.3f}", int(iteration < WARMUP)])
    os.replace(handle.name, path)
