"""The tests' file of labels that are thresholds of single features of very different
scales: the forest finds them, a kernel needs standardised features and still trails."""

from pathlib import Path

import numpy as np


def write_threshold_file(folder: Path) -> Path:
    """``folder/train.csv``: 300 rows of 4 features, labels as paths."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) * np.array([1, 20, 0.05, 3])
    rows = []
    for x in X:
        labels = (["a"] if x[0] > 0.3 else []) + (["a/x"] if x[0] > 0.3 and x[1] > 5 else []) \
            + (["b"] if x[2] < -0.02 else [])
        rows.append(",".join(f"{v:.5g}" for v in x) + "," + ";".join(labels))
    (folder / "train.csv").write_text("f0,f1,f2,f3,labels\n" + "\n".join(rows) + "\n")
    return folder / "train.csv"
