"""Many threads predicting at once: every call returns the serial answer, none crashes.

OpenBLAS aborts the process when more threads call it at once than its buffer table holds;
prediction blocks therefore hold a slot of :data:`ecrm.weights.kernel._solvers._backend.BLAS_SLOTS`.
"""

import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from _shapes import TREE7 as TREE
from ecrm import ECRM, NystromSolver
from ecrm.losses import HierarchicalLoss
from ecrm.weights.kernel._solvers._backend import BLAS_SLOTS

CALLERS = 200


def _data(m, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 4))
    scores = X @ rng.normal(size=(4, TREE.n_labels)) + rng.normal(scale=0.5,
                                                                  size=(m, TREE.n_labels))
    return X, TREE.close(scores > 0.2)


@pytest.mark.parametrize("solver,kw", [("dual", {"gamma": 0.3}),
                                       ("primal", {"kernel": "linear"}),
                                       (NystromSolver(60), {"gamma": 0.3})],
                         ids=["dual", "primal", "nystrom"])
def test_concurrent_predictions_equal_the_serial_ones(solver, kw):
    X, Y = _data(300, 0)
    Xt = _data(64, 1)[0]
    est = ECRM(HierarchicalLoss(TREE), TREE, solver=solver, random_state=0, **kw).fit(X, Y)
    want_Y, want_C = est.predict(Xt), est.predict_costs(Xt)
    start = threading.Barrier(CALLERS)
    got: list = [None] * CALLERS
    errors: list = []

    def call(k):
        try:
            start.wait()
            got[k] = (est.predict(Xt), est.predict_costs(Xt), est.predict_scores(Xt))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    for Yk, Ck, Sk in got:
        assert_array_equal(Yk, want_Y)
        # the same arrays and code path; other threads only change BLAS's thread split,
        # which leaves each output entry's sum order (the k-loop of one dot) unchanged
        # in practice: compare at the round-off of an m-term sum of the costs' terms
        scale = np.abs(est._fit.risk_coef).sum(axis=0).max() * np.abs(
            est._fit.block(Xt)).max()
        assert_allclose(Ck, want_C, rtol=0, atol=1e-12 * scale)
        assert Sk.shape == (len(Xt), TREE.n_labels)


def test_prediction_blocks_are_bounded():
    # the semaphore admits a bounded number of blocks (at least one)
    held = []
    while BLAS_SLOTS.acquire(blocking=False):
        held.append(1)
    try:
        assert 1 <= len(held) <= 16
    finally:
        for _ in held:
            BLAS_SLOTS.release()
