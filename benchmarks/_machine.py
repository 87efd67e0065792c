"""What machine a benchmark ran on (printed with every table)."""

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
