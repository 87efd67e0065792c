"""A small label ranking data file in the benchmark's CSV layout, for the end-to-end tests of
``ecrm reproduce``."""

import numpy as np


def write_toy_rankings(path, n: int, p: int = 3, k: int = 4, seed: int = 1) -> None:
    """Write ``n`` points of ``p`` normal features, each ranking ``k`` labels by a random
    linear score (rank 1 = highest), under the header line ``n,p,k``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    R = np.argsort(np.argsort(-(X @ rng.normal(size=(p, k))), axis=1), axis=1) + 1
    lines = [f"{n},{p},{k}"] + [",".join([f"{v:.4f}" for v in x] + [str(v) for v in r])
                                for x, r in zip(X, R, strict=True)]
    path.write_text("\n".join(lines) + "\n")
