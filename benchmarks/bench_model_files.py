"""Model files (ecrm.save / ecrm.load) against pickle: size and time, side by side.

A pickle of a fitted ECRM keeps the m x m Cholesky factor; a model file holds O(m (p + e))
arrays and rebuilds the factor only when a prediction needs it. Run:
``python benchmarks/bench_model_files.py``.
"""

import os
import pickle
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time  # noqa: E402

from ecrm import ECRM, load, save  # noqa: E402
from ecrm.datasets import make_hmc  # noqa: E402
from ecrm.losses import HierarchicalLoss  # noqa: E402


def main() -> None:
    print(describe())
    print(f"{'m':>6}{'.ecrm MB':>10}{'pickle MB':>11}{'size ratio':>12}{'save s':>8}"
          f"{'load s':>8}{'unpickle s':>12}")
    folder = tempfile.mkdtemp()
    for m in (500, 1500, 3000):
        X, Y, h = make_hmc(m, n_labels=40, random_state=0)
        model = ECRM(HierarchicalLoss(h), h, gamma=0.1).fit(X, Y)
        path = os.path.join(folder, "m.ecrm")
        t_save = median_time(lambda: save(model, path), 3)  # noqa: B023
        t_load = median_time(lambda: load(path), 3)  # noqa: B023
        blob = pickle.dumps(model)
        t_unpickle = median_time(lambda: pickle.loads(blob), 3)  # noqa: B023
        size = os.path.getsize(path)
        print(f"{m:>6}{size / 1e6:>10.2f}{len(blob) / 1e6:>11.2f}{len(blob) / size:>11.1f}x"
              f"{t_save:>8.2f}{t_load:>8.2f}{t_unpickle:>12.2f}")


if __name__ == "__main__":
    main()
