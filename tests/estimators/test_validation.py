"""Every bad parameter and input fails at fit, naming the parameter, and leaves no fitted state."""

import re

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from _shapes import TREE6 as TREE
from ecrm import ECRM, ECRMCV, Hierarchy, JointKernelECRM, MultilabelSpace, NystromSolver
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.losses.base import Loss
from ecrm.selection import LeaveOneOutSearch, OutOfBagSearch

DAG = Hierarchy([("a", "c"), ("b", "c"), ("c", "d")])
ESTIMATORS = {"ECRM": ECRM, "ECRMCV": ECRMCV, "joint": JointKernelECRM}


def _data(m=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    Y = TREE.close((X @ rng.normal(size=(3, TREE.n_labels)) + rng.normal(size=(m, 6))) > 0)
    return X, Y


def _assert_unfitted(est, X):
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    with pytest.raises(NotFittedError):
        est.predict(X)


class _PlainHamming(Loss):
    """The Hamming loss with no linear form: ECRM reaches it through the risk weights."""

    def __call__(self, Y_pred, Y_true):
        return np.abs(np.asarray(Y_pred, float) - np.asarray(Y_true, float)).sum(axis=1)


def _id(value) -> str:
    """A test id that is the same in every process (xdist): functions by name."""
    return getattr(value, "__name__", None) or repr(value)


def _nan_kernel(a, b):
    return np.nan


# parameters every estimator has: (params, message fragment)
KERNEL_CASES = [
    ({"gamma": np.nan}, r"gamma must be a real number in \[0, inf\); got nan"),
    ({"gamma": -50}, r"gamma must be a real number in \[0, inf\); got -50"),
    ({"gamma": "scale"}, r"gamma must be a real number in \[0, inf\); got 'scale'"),
    ({"degree": 2.5}, r"degree must be an integer >= 1; got 2.5"),
    ({"degree": 0}, r"degree must be an integer >= 1; got 0"),
    ({"coef0": np.inf}, r"coef0 must be a real number"),
    ({"kernel": "gaussian"}, r"kernel must be one of 'rbf', .* or a callable; got 'gaussian'"),
    ({"kernel": _nan_kernel}, r"kernel <function _nan_kernel.*gave NaN or infinite values"),
]
# ECRM and JointKernelECRM
ALPHA_CASES = [
    ({"alpha": 0}, r"alpha must be a real number in \(0, inf\); got 0"),
    ({"alpha": -1.0}, r"alpha must be a real number in \(0, inf\)"),
    ({"alpha": np.nan}, r"alpha must be a real number in \(0, inf\)"),
    ({"alpha": "big"}, r"alpha must be a real number in \(0, inf\)"),
    ({"alpha": True}, r"alpha must be a real number in \(0, inf\)"),
    ({"alpha": 1e307}, r"alpha=1e\+307 is too large for 30 training samples"),
    ({"alpha": 5e-324}, r"alpha=5e-324 is too small: the ridge term m \* alpha"),
    ({"alpha": 1e-300}, r"alpha=1e-300 is too small.*round-off of the kernel diagonal"),
    ({"fit_intercept": "no"}, r"fit_intercept must be True or False; got 'no'"),
    ({"fit_intercept": 1}, r"fit_intercept must be True or False; got 1"),
]
CV_CASES = [
    ({"alphas": []}, r"alphas must not be empty"),
    ({"alphas": [1e-3, -1.0]}, r"alphas\[1\] must be a real number in \(0, inf\)"),
    ({"alphas": [1e-3, np.nan]}, r"alphas\[1\] must be a real number"),
    ({"alphas": [1e-3, 1e307]}, r"alphas\[1\]=1e\+307 is too large"),
    ({"alphas": [5e-324]}, r"alphas\[0\]=5e-324 is too small"),
    ({"alphas": [1e-300]}, r"alpha=1e-300 is too small.*round-off of the kernel diagonal"),
    ({"fit_intercept": "no"}, r"fit_intercept must be True, False or 'auto'; got 'no'"),
    ({"loo_samples": 0}, r"loo_samples must be an integer >= 1; got 0"),
    ({"loo_samples": -3}, r"loo_samples must be an integer >= 1; got -3"),
    ({"loo_samples": 2.5}, r"loo_samples must be an integer >= 1; got 2.5"),
    ({"kernel_subsample": 1}, r"kernel_subsample must be an integer >= 2; got 1"),
    ({"kernel_grid": {"alpha": [1.0]}}, r"kernel_grid may only set kernel"),
    ({"kernel_grid": {"gamma": [0.1, -1.0]}}, r"gamma must be a real number in \[0, inf\)"),
    ({"kernel_grid": {"kernel": ["precomputed"]}}, r"kernel_grid cannot contain 'precomputed'"),
]
CASES = ([(name, p, msg) for name in ESTIMATORS for p, msg in KERNEL_CASES]
         + [(name, p, msg) for name in ("ECRM", "joint") for p, msg in ALPHA_CASES]
         + [("ECRMCV", p, msg) for p, msg in CV_CASES])


#: The search objects of ECRMCV and ForestECRMCV.
SEARCHES = {"ECRMCV": LeaveOneOutSearch, "ForestECRMCV": OutOfBagSearch}


def _search_settings(name: str, params: dict) -> dict:
    """``params`` with ECRMCV's (ForestECRMCV's) search settings on its search object."""
    if name not in SEARCHES:
        return params
    settings = set(SEARCHES[name]().get_params()) - {"alphas", "scoring"}
    own = {k: v for k, v in params.items() if k in settings}
    rest = {k: v for k, v in params.items() if k not in settings}
    return {**rest, "search": SEARCHES[name](**own)} if own else rest


@pytest.mark.parametrize(("name", "params", "message"), CASES,
                         ids=[f"{n}-{next(iter(p))}={_id(next(iter(p.values())))}"
                              for n, p, _ in CASES])
def test_bad_parameter_is_named_and_leaves_the_estimator_unfitted(name, params, message):
    X, Y = _data()
    est = ESTIMATORS[name](HammingLoss(), TREE, **_search_settings(name, params))
    with pytest.raises(ValueError, match=message):
        est.fit(X, Y)
    _assert_unfitted(est, X)


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_inputs_that_overflow_the_kernel_are_a_clear_error(name, kernel):
    X, Y = _data()
    est = ESTIMATORS[name](HammingLoss(), TREE, kernel=kernel)
    with pytest.raises(ValueError, match=rf"kernel '{kernel}' gave (NaN or )?infinite values.*"
                                         r"largest \|x\| = .*e\+200"):
        est.fit(X * 1e200, Y)
    _assert_unfitted(est, X)


NON_FINITE = {"ECRM": "the fit produced non-finite coefficients with the kernel",
              "ECRMCV": "the leave-one-out costs are not finite for the kernel",
              "joint": "the fit produced non-finite coefficients with the kernel"}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_non_finite_solve_fails_at_fit_naming_kernel_and_alpha(name):
    """Never later, at predict, as 'costs contain NaN'."""
    # The zero kernel with the smallest admissible ridge: G^{-1} 1 overflows.
    X, Y = _data(m=20)
    K = np.zeros((20, 20))
    alpha = float(np.finfo(float).tiny) * 1.01 / 20
    key = "alphas" if name == "ECRMCV" else "alpha"
    est = ESTIMATORS[name](HammingLoss(), TREE, kernel="precomputed",
                           **{key: [alpha] if name == "ECRMCV" else alpha})
    message = NON_FINITE[name] + r".*'precomputed'.*alpha=" + re.escape(repr(alpha))
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=message):
        est.fit(K, Y)
    _assert_unfitted(est, K)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_bad_components_and_data(name):
    X, Y = _data()
    cls = ESTIMATORS[name]
    bad = [
        (cls("hamming", TREE), TypeError, "loss must be an ecrm.losses.Loss", (X, Y)),
        (cls(HammingLoss(), "tree"), TypeError, "output_space must be an ecrm output", (X, Y)),
        # the loss's check_space hook runs at fit
        (cls(HierarchicalLoss(DAG), TREE), ValueError, "HierarchicalLoss was built on", (X, Y)),
        (cls(HammingLoss(), TREE), ValueError, "same number of rows; got 30 and 29",
         (X, Y[:-1])),
        (cls(HammingLoss(), TREE), ValueError, "at least 2 training samples; got 1",
         (X[:1], Y[:1])),
        (cls(HammingLoss(), TREE, kernel="precomputed"), ValueError,
         r"kernel matrix of shape \(n_samples, 30\); got shape \(30, 3\)", (X, Y)),
    ]
    for est, error, message, (Xb, Yb) in bad:
        with pytest.raises(error, match=message):
            est.fit(Xb, Yb)
        _assert_unfitted(est, X)


@pytest.mark.parametrize("name", ["ECRMCV", "joint"])
def test_a_loss_without_linear_form_fails_before_any_fitted_state(name):
    """Regression: ECRMCV used to set X_fit_ before checking the loss's linear form."""
    X, Y = _data()
    est = ESTIMATORS[name](_PlainHamming(), MultilabelSpace(TREE.n_labels))
    with pytest.raises(TypeError, match="needs a loss with a linear form"):
        est.fit(X, Y)
    _assert_unfitted(est, X)


def test_a_failed_refit_keeps_the_previous_model():
    X, Y = _data()
    est = ECRM(HammingLoss(), TREE, gamma=0.5).fit(X, Y)
    before = est.predict_costs(X)
    est.set_params(gamma=-1.0)
    with pytest.raises(ValueError, match="gamma"):
        est.fit(X, Y)
    np.testing.assert_array_equal(est.predict_costs(X), before)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_conditional_risk_checks_Y_against_the_output_space(name):
    X, Y = _data()
    est = ESTIMATORS[name](HammingLoss(), TREE, gamma=0.5).fit(X, Y)
    with pytest.raises(ValueError, match=r"shape \(n, 6\); got shape \(5, 5\)"):
        est.conditional_risk(X[:5], Y[:5, :5])
    outside = np.zeros((5, 6))
    outside[2, TREE.index["a11"]] = 1  # a11 without its ancestors
    with pytest.raises(ValueError, match="row 2.*a11"):
        est.conditional_risk(X[:5], outside)
    with pytest.raises(ValueError, match="same number of rows; got 5 and 4"):
        est.conditional_risk(X[:5], Y[:4])


#: Each declared constraint's edge: a value it accepts and one just past it.
EDGES = {"alpha": (1e-12, 0.0), "gamma": (0.0, -1e-3), "degree": (1, 0), "coef0": (-1e300, np.inf),
         "n_components": (1, 0), "memory_budget": (1e-3, 0.0), "loo_samples": (1, 0),
         "kernel_subsample": (2, 1), "verbose": (0, -1), "C": (1e-12, 0.0), "tol": (0.0, -1e-3),
         "max_iter": (1, 0), "gap_every": (1, 0), "max_added_gammas": (0, -1),
         "n_estimators": (1, 0), "max_features": (1.0, 1.5), "min_samples_leaf": (1, 0),
         "max_depth": (1, 0), "n_split_targets": (1, 0), "max_samples": (1.0, 1.5),
         "min_samples_split": (2, 1), "search_estimators": (1, 0)}
#: The forest's parameters (ecrm.ForestECRM; search_estimators: ecrm.ForestECRMCV's search's).
FOREST = ("n_estimators", "max_features", "min_samples_leaf", "max_depth", "n_split_targets",
          "max_samples", "min_samples_split", "search_estimators")
#: The ``ecrm`` options of estimator parameters.
OPTIONS = {"--alpha": "alpha", "--gamma": "gamma", "--n-components": "n_components",
           "--memory-budget": "memory_budget", "--loo-samples": "loo_samples"}


@pytest.mark.parametrize("parameter", sorted(EDGES))
def test_fit_checks_every_declared_constraint(parameter):
    """The estimators check each parameter by its one declaration (ecrm.estimators._parameters); the
    choice parameters' tests are generated in test_constraint_tables.py."""
    from ecrm.estimators._parameters import CONSTRAINTS, Number

    assert set(EDGES) == {k for k, c in CONSTRAINTS.items() if isinstance(c, Number)}
    X, Y = _data()
    ok, bad = EDGES[parameter]
    from ecrm import ForestECRM, ForestECRMCV, StructuredSVM

    cls, extra = ((ECRM, {}) if parameter == "alpha" else
                  (ForestECRMCV if parameter == "search_estimators" else ForestECRM,
                   {"n_estimators": 2} if parameter != "n_estimators" else {})
                  if parameter in FOREST else
                  (StructuredSVM, {"max_iter": 2}) if parameter in ("C", "tol", "gap_every") else
                  (StructuredSVM, {}) if parameter == "max_iter" else
                  (ECRMCV, {"alphas": [1e-2]}))

    def make(value):
        if parameter == "n_components":  # the Nystrom solver's setting
            return cls(HammingLoss(), TREE, **extra, solver=NystromSolver(n_components=value))
        return cls(HammingLoss(), TREE, **extra,
                   **_search_settings(cls.__name__, {parameter: value}))

    with pytest.raises(ValueError, match=re.escape(parameter)):
        make(bad).fit(X, Y)
    make(ok).fit(X, Y)


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_command_line_options_accept_what_the_estimators_accept(option, tmp_path):
    import argparse

    from ecrm.commands import fit

    parser = argparse.ArgumentParser()
    fit.add_parser(parser.add_subparsers())
    train = tmp_path / "train.csv"
    train.write_text("x,labels\n1,a\n")
    ok, bad = EDGES[OPTIONS[option]]
    assert getattr(parser.parse_args(["fit", str(train), "-o", "m.ecrm", option, str(ok)]),
                   OPTIONS[option]) == ok
    with pytest.raises(SystemExit):
        parser.parse_args(["fit", str(train), "-o", "m.ecrm", option, str(bad)])
