"""The estimators' BLAS thread rule: small problems fit and predict on one thread
(:mod:`ecrm.threads`), a setting and a block switch it off or move it, and the commands'
``--threads`` decides alone."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from ecrm import ECRM
from ecrm.datasets import make_hmc
from ecrm.losses import HammingLoss
from ecrm.threads import set_small_fit_rows, small_fit_rows, small_fits


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


class _Probe(ECRM):
    """ECRM that records the BLAS threads inside ``fit`` and ``predict``."""

    seen: list = []

    def _check_params(self):
        type(self).seen.append(("fit", _blas_threads()))
        return super()._check_params()

    def _slim_fit(self):
        type(self).seen.append(("predict", _blas_threads()))
        return super()._slim_fit()


@pytest.fixture
def data():
    X, Y, h = make_hmc(60, n_features=4, n_labels=6, random_state=0)
    return X, Y, h


def _run(X, Y, h) -> list:
    _Probe.seen = []
    _Probe(HammingLoss(), h).fit(X, Y).predict(X[:5])
    return _Probe.seen


def test_small_problems_run_on_one_blas_thread(data):
    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        seen = _run(*data)
        assert _blas_threads() == {2}  # restored after the call
    assert [kind for kind, _ in seen] == ["fit", "predict"]
    assert all(threads == {1} for _, threads in seen)


def test_the_rule_is_switched_off_or_moved_for_every_estimator(data):
    X, Y, h = data
    with threadpool_limits(limits=2, user_api="blas"):
        with small_fits(0):
            assert small_fit_rows() == 0
            assert all(threads == {2} for _, threads in _run(X, Y, h))
        previous = set_small_fit_rows(50)  # X has 60 rows: above; its 5 predicted: below
        try:
            seen = _run(X, Y, h)
        finally:
            set_small_fit_rows(previous)
        assert seen == [("fit", {2}), ("predict", {1})]
    assert small_fit_rows() == previous


def test_a_bad_threshold_is_refused():
    with pytest.raises(ValueError, match="rows must be an integer >= 0; got -1"):
        set_small_fit_rows(-1)
    with pytest.raises(ValueError, match="rows must be an integer >= 0"), small_fits(2.5):
        pass


def test_the_commands_threads_switch_the_rule_off():
    from ecrm.commands._threads import limit_threads

    with limit_threads(2):
        assert small_fit_rows() == 0 and _blas_threads() == {2}
    with limit_threads(0):
        assert small_fit_rows() == 0
    with limit_threads(None):  # a command without --threads: the estimators' rule
        assert small_fit_rows() > 0


def test_the_wrapped_methods_keep_their_signatures_and_results(data):
    import inspect

    X, Y, h = data
    assert list(inspect.signature(ECRM.fit).parameters) == ["self", "X", "Y"]
    with small_fits(0):
        expected = ECRM(HammingLoss(), h).fit(X, Y).predict_scores(X)
    np.testing.assert_allclose(ECRM(HammingLoss(), h).fit(X, Y).predict_scores(X), expected,
                               rtol=1e-10, atol=1e-12)
