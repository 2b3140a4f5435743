#!/usr/bin/env python3
"""Stand-in for a local probe: the descriptor-building piece of elastic_dispatch_kernel, extracted as a standalone
single-card program (the guide's route for I-cache misses under `msopprof simulator`).

Run alone it only prints what it would launch. Under the stand-in `msopprof simulator` (DEEPEP_SIM_SIMULATOR_DIR is
set) it hands its instruction stream to the simulator, as a kernel binary is handed to camodel: the simulator
executes it, and every timing and I-cache miss comes from that execution, not from here.

The stream is deterministic in its arguments: per vector core, a loop over descriptors whose body sits at one
address range, with a slow path (a fallback encoder) far away in the binary every `--slow-every` descriptors. The
slow path maps onto the same I-cache sets as the loop body, so it evicts it: the misses a probe is meant to find.
"""

import argparse
import json
import os
import sys
from pathlib import Path

SOURCE = "csrc/kernels/elastic_dispatch/descriptor.h"
BODY = [  # (instr, pipe, cycles, detail, source line); detail holds commas, as the simulator's CSVs do
    ("LD", "SCALARLDST", 4, "x1, [x0, #0x10]", 41),
    ("ADD", "SCALAR", 1, "x2, x1, x3", 42),
    ("MOV_SRC_TO_DST_ALIGN", "MTE2", 40, "dst:UB[0x200], src:GM[0x10f80000], len:0x80", 44),
    ("VECTOR_DUP", "VECTOR", 8, "dst:UB[0x400], repeat:8, mask:0xffff", 45),
    ("VADD", "VECTOR", 12, "dst:UB[0x400], src0:UB[0x200], src1:UB[0x400], repeat:8", 46),
    ("SET_FLAG", "SCALAR", 1, "pipe:V, tpipe:MTE3, event:0", 47),
    ("WAIT_FLAG", "MTE3", 1, "pipe:V, tpipe:MTE3, event:0", 48),
    ("MOV_UB_TO_OUT_ALIGN", "MTE3", 36, "dst:GM[0x10f90000], src:UB[0x400], len:0x80", 49),
    ("CMP", "SCALAR", 1, "x4, x5", 50),
    ("B.NE", "FLOWCTRL", 2, "loop_body", 51),
]
SLOW = [
    ("LD", "SCALARLDST", 4, "x6, [x0, #0x40]", 88),
    ("MUL", "SCALAR", 3, "x7, x6, x8", 89),
    ("VCMAX", "VECTOR", 16, "dst:UB[0x600], src:UB[0x400], repeat:4", 90),
    ("ST", "SCALARLDST", 4, "x7, [x0, #0x48]", 91),
    ("RET", "FLOWCTRL", 2, "", 92),
]
BODY_BASE = 0x10F86A00  # instruction addresses of the body; the slow path is 4 KiB further: same I-cache sets
SLOW_BASE = BODY_BASE + 0x1000
INSTR_BYTES = 0x20  # wide enough that the body spans several 128-byte lines


def stream(descriptors: int, slow_every: int, core: int) -> list[dict]:
    out = []
    for d in range(descriptors):
        for i, (instr, pipe, cycles, detail, line) in enumerate(BODY):
            out.append(
                {
                    "pc": BODY_BASE + i * INSTR_BYTES,
                    "instr": instr,
                    "pipe": pipe,
                    "cycles": cycles,
                    "detail": detail,
                    "code": f"{SOURCE}:{line}",
                }
            )
        if slow_every and (d + core) % slow_every == 0:
            for i, (instr, pipe, cycles, detail, line) in enumerate(SLOW):
                out.append(
                    {
                        "pc": SLOW_BASE + i * INSTR_BYTES,
                        "instr": instr,
                        "pipe": pipe,
                        "cycles": cycles,
                        "detail": detail,
                        "code": f"{SOURCE}:{line}",
                    }
                )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--descriptors", type=int, default=64)
    parser.add_argument("--cores", type=int, default=2, help="vector cores the probe runs on (one AI core has two)")
    parser.add_argument("--slow-every", type=int, default=8)
    args = parser.parse_args(argv)
    # sim.probe: multi_card makes the probe open two devices, which the simulator refuses (single card only).
    devices = [0, 1] if os.environ.get("DEEPEP_SIM_PROBE") == "multi_card" else [0]
    cores = {f"core{c // 2}.veccore{c % 2}": stream(args.descriptors, args.slow_every, c) for c in range(args.cores)}
    target = os.environ.get("DEEPEP_SIM_SIMULATOR_DIR")
    if not target:
        print(f"descriptor probe: {args.descriptors} descriptors on {args.cores} vector cores (no simulator attached)")
        return 0
    record = {"kernel": "build_descriptors", "devices": devices, "cores": cores}
    Path(target, "kernel.json").write_text(json.dumps(record))
    print(f"descriptor probe: launched build_descriptors ({args.descriptors} descriptors, {args.cores} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
