"""Stand-in for ascend_deepep's V2 elastic dispatch precision test (simulated cluster).

Same conventions as the real multi-node launcher: the parent environment gives WORLD_SIZE (nodes),
RANK (node index), MASTER_ADDR/MASTER_PORT; --ep-size processes are spawned per node (never
torchrun). Node 0 serves the store the ranks exchange tokens through. Each rank writes a log under
<log-dir>/<timestamp>_<run-tag>/ and prints one pass or fail line; the process exits non-zero when
any local rank fails.

Fault knobs (environment, set by the workflow's sim section): DEEPEP_SIM_PRECISION_FAIL_RANK,
DEEPEP_SIM_DEAD_NODE (that node never starts its ranks and hangs), DEEPEP_SIM_LATE_NODE_S.
"""

import argparse
import os
import socket
import sys
import time
from collections import Counter

from ascend_deepep import ElasticBuffer
from ascend_deepep import _mp as mp
from ascend_deepep._store import StoreClient, serve
from ascend_deepep.elastic import expected_receive, make_inputs

# Runtime tuning a rank prints when set, as a test prints its configuration (names a user sets on the launching host).
TUNING_ENV = (
    "TASK_QUEUE_ENABLE",
    "PYTORCH_NPU_ALLOC_CONF",
    "ACL_DEVICE_SYNC_TIMEOUT",
    "HCCL_CONNECT_TIMEOUT",
    "HCCL_BUFFSIZE",
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="V2 elastic dispatch precision test (stand-in)")
    p.add_argument("--ep-size", type=int, default=8, help="processes per node")
    p.add_argument("--num-tokens", type=int, default=256)
    p.add_argument("--num-max-tokens-per-rank", type=int, default=256)
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--num-topk", type=int, default=16)
    p.add_argument("--num-experts", type=int, default=384)
    p.add_argument("--num-aiv", type=int, default=56)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--route", default="balanced", choices=["balanced", "random", "skewed"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shmem-ip-port", default="tcp://127.0.0.1:4455")
    p.add_argument("--log-dir", default="logs")
    p.add_argument("--run-tag", default="run")
    p.add_argument("--profile", action="store_true")
    return p.parse_args(argv)


def log_line(log, text):
    print(text, flush=True)
    log.write(text + "\n")
    log.flush()


def test_loop(local_rank, num_local_ranks, args, run_dir):
    node = int(os.environ.get("RANK", "0"))
    num_nodes = int(os.environ.get("WORLD_SIZE", "1"))
    rank = node * num_local_ranks + local_rank
    world = num_nodes * num_local_ranks
    with open(os.path.join(run_dir, f"rank{rank}.log"), "w") as log:
        log_line(
            log,
            f"[rank {rank}] node {node} local rank {local_rank} of world "
            f"{world} pid {os.getpid()} host {socket.gethostname()}",
        )
        tuning = " ".join(f"{name}={os.environ[name]}" for name in TUNING_ENV if name in os.environ)
        if tuning:
            log_line(log, f"[rank {rank}] runtime tuning: {tuning}")
        store = StoreClient(os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29520")))
        os.environ["DEEPEP_SIM_LOCAL_RANK"] = str(local_rank)  # the device this process sets
        buffer = ElasticBuffer(
            store,
            rank,
            world,
            args.num_experts,
            args.num_max_tokens_per_rank,
            args.hidden,
            args.dtype,
            num_local_ranks,
            args.num_aiv,
        )
        inputs = make_inputs(args.seed, rank, args.num_tokens, args.num_topk, args.num_experts, world, args.route)
        dispatch_args = {"x": inputs.x, "topk_idx": inputs.topk_idx, "topk_weights": inputs.topk_weights}
        store.barrier("init", world)

        recv_x, recv_topk_idx, recv_topk_weights, _, _ = buffer.dispatch(**dispatch_args)

        # Reference: rebuild every rank's inputs and check what this rank must have received.
        everyone = {
            r: make_inputs(args.seed, r, args.num_tokens, args.num_topk, args.num_experts, world, args.route)
            for r in range(world)
        }
        expected = expected_receive(everyone, rank, args.num_experts // world)
        got = Counter(zip([tuple(v) for v in recv_x], [tuple(e) for e in recv_topk_idx]))
        want = Counter((tuple(payload), tuple(experts)) for _, _, payload, experts in expected)
        mismatched = max(sum((got - want).values()), sum((want - got).values()))
        store.barrier("done", world)
        if mismatched:
            log_line(
                log,
                f"[rank {rank}] elastic dispatch precision check FAILED: "
                f"{mismatched} of {len(expected)} received tokens differ",
            )
        else:
            log_line(log, f"[rank {rank}] elastic dispatch precision check passed: {len(recv_x)} tokens received")
        # Every rank has printed its verdict before any exits: a failing rank's exit ends its siblings (spawn), which
        # must not cut off their pass lines.
        store.barrier("reported", world)
        if mismatched:
            sys.exit(1)


def main():
    args = parse_args()
    node = int(os.environ.get("RANK", "0"))
    if os.environ.get("DEEPEP_SIM_DEAD_NODE", "") == str(node):
        print(f"[sim] node {node} is dead (sim.dead_node): it never starts its ranks", flush=True)
        while True:
            time.sleep(3600)
    late = float(os.environ.get("DEEPEP_SIM_LATE_NODE_S", "0") or 0)
    if late and node != 0:
        print(f"[sim] node {node} starts {late:g} s late (sim.late_node_s)", flush=True)
        time.sleep(late)
    run_dir = os.path.join(args.log_dir, f"{time.strftime('%Y%m%d_%H%M%S')}_{args.run_tag}")
    os.makedirs(run_dir, exist_ok=True)
    server = None
    if node == 0:
        server = serve(os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29520")))
    try:
        mp.spawn(test_loop, args=(args.ep_size, args, run_dir), nprocs=args.ep_size)
    except mp.ProcessExitedException as exc:
        print(f"[node {node}] {exc}", flush=True)
        return 1
    finally:
        if server is not None:
            # Serve until every node is done: the others may still be reading from the store (every rank hangs up
            # when its process ends; at most 0.5 s, so a hung peer cannot hold this node).
            if not server.wait_until_clients_left(0.5):
                print(
                    f"[node {node}] ranks were still connected to the store "
                    "0.5 s after this node's ranks ended; shutting it down",
                    flush=True,
                )
            server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
