#!/usr/bin/env bash
# Stand-in for ascend_deepep's scripts/build.sh (simulated cluster): no compiler runs.
# Honours DEBUG_CLOCK_ON=ON|OFF and DEVICE_DEBUG_INFO=ON|OFF (adds -g to the device target), and
# BUILD_DIR (default ./build). Writes the "built" kernel library and the flags it was built with.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
flags="-O2 -xasc --npu-arch=dav-3510"
[ "${DEVICE_DEBUG_INFO:-OFF}" = "ON" ] && flags="$flags -g"
[ "${DEBUG_CLOCK_ON:-OFF}" = "ON" ] && flags="$flags -DDEBUG_CLOCK_ON"
mkdir -p "$build_dir/CMakeFiles/ascend_deepep_kernels.dir/kernels"
echo "[build] compiling kernels/elastic_dispatch.cpp with: $flags"
printf 'stand-in kernel object\nflags: %s\n' "$flags" > "$build_dir/CMakeFiles/ascend_deepep_kernels.dir/kernels/elastic_dispatch.cpp.o"
printf 'stand-in libascend_deepep_kernels.so\nflags: %s\n' "$flags" > "$build_dir/libascend_deepep_kernels.so"
# The kernel's per-role work constants (constexpr float WORK_<role> = <x>f;) go into the library: a commit that
# changes one changes the library's sha256 and the work of that role in every run that loads it.
sed -n 's/^constexpr float WORK_\([A-Za-z]*\) = \([0-9.]*\)f;.*/work_factor \1 \2/p' kernels/elastic_dispatch.cpp >> "$build_dir/libascend_deepep_kernels.so"
echo "$flags" > "$build_dir/device_compile_flags.txt"
# A DEBUG_CLOCK_ON build stores the AKL event map where the real build.sh does (docs/formats.md §3).
[ "${DEBUG_CLOCK_ON:-OFF}" = "ON" ] && python3 -c 'import sys; from pathlib import Path; sys.path.insert(0, "."); from ascend_deepep._debugclock import write_event_map; write_event_map(Path("ascend_deepep/lib/event_map.json"))'
echo "[build] done: $build_dir/libascend_deepep_kernels.so"
