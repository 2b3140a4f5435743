"""Minimal stand-in for the parts of torch the generated perf driver calls (simulated cluster only).

Put on PYTHONPATH only for the simulated cluster's driver runs; never installed anywhere.
"""

__version__ = "0.0+dispatchprof-sim-shim"


class _Npu:
    @staticmethod
    def synchronize() -> None:
        """The stand-in dispatch is synchronous: nothing to wait for."""

    @staticmethod
    def current_device() -> int:
        import os

        return int(os.environ.get("DEEPEP_SIM_LOCAL_RANK", "0"))


npu = _Npu()
