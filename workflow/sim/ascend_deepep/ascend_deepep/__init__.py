"""Stand-in for the ascend_deepep package (simulated cluster). Not the real library."""

from pathlib import Path

from ascend_deepep.elastic import ElasticBuffer

# The kernel library this checkout's build wrote (scripts/build.sh, BUILD_DIR default build/): the real package
# maps its native library into the process, the stand-in maps nothing, so it names the file it stands for and the
# perf driver's runtime hashes it (which build did a run load?).
KERNEL_LIBRARY = Path(__file__).resolve().parents[1] / "build" / "libascend_deepep_kernels.so"

__all__ = ["ElasticBuffer", "KERNEL_LIBRARY"]
