"""Run every benchmark that needs no data, then the HMC one if the data are there."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
scripts = ["bench_oracles.py", "bench_fit.py", "bench_model_files.py"]
if (HERE / "bench_flow_inference.py").exists():
    scripts.append("bench_flow_inference.py")
data = os.environ.get("ECRM_DATA") or str(HERE.parents[1] / "shared" / "data" / "hmc")
if Path(data).is_dir():
    scripts.append("bench_hmc.py")
for script in scripts:
    print(f"\n== {script}", flush=True)
    args = [sys.executable, str(HERE / script)]
    if script == "bench_hmc.py":
        args += ["--data-dir", data, "--plot", "results"]
    subprocess.run(args, check=True)
