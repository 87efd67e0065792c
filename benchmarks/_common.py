"""Shared by the benchmarks: the machine they ran on and a median timer."""

import os
import platform

import numpy as np
import scipy
import sklearn


def describe() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"numpy {np.__version__}, scipy {scipy.__version__}, "
            f"scikit-learn {sklearn.__version__}")


def median_time(fn, repeats: int, *, warmup: bool = True) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs (after one warm-up run)."""
    import time

    if warmup:
        fn()  # imports, thread pools, page faults, cached plans
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))
