"""The declared solver protocol: a new solver is one class and one table line.

The toy solver here solves :math:`(K + rI)\\,a = t - b\\mathbf 1` directly
(``scipy.linalg.solve``) and computes the exact leave-one-out predictions from the dense hat
matrix, so it shares no algebra with the dual's Cholesky and eigendecomposition paths: the
estimators, the leave-one-out search and the model files reach it only through
:class:`ecrm.Solver`, :class:`~ecrm.weights._fit.Basis` and
:class:`~ecrm.weights._fit.Source`.
"""

import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import linalg
from sklearn.base import clone
from test_solvers import TREE, _problem

import ecrm
from _ids import readable
from ecrm import ECRM, ECRMCV, JointKernelECRM, NystromSolver, Solver
from ecrm.estimators._parameters import CONSTRAINTS, vocabulary
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.model_files.io import ModelFileError
from ecrm.selection import LeaveOneOutSearch
from ecrm.weights._fit import Basis, LooBasis, RiskFit, Source
from ecrm.weights.kernel._kernels import kernel_matrix
from ecrm.weights.kernel._solvers.solver import SOLVER_CLASSES, register_solver, unregister_solver

BUILT_IN = ("dual", "primal", "nystrom")


def _direct_fit(K, T, ridge, fit_intercept):
    """Coefficients, intercepts, u and s of the ridge regressions of the columns of ``T``."""
    G = K + ridge * np.eye(len(K))
    if not fit_intercept:
        return linalg.solve(G, T, assume_a="sym"), np.zeros(T.shape[1]), None, None
    u = linalg.solve(G, np.ones(len(K)), assume_a="sym")
    s = float(u.sum())
    b = u @ T / s
    return linalg.solve(G, T - b, assume_a="sym"), b, u, s


class DirectFit(RiskFit):
    """The toy's fit: dual coefficients on the kernel columns, weights by dense solves."""

    coef_name = "dual_coef_"

    def __init__(self, kernel_params, coef, intercept, n_risk, ridge, fit_intercept, *,
                 X_train=None):
        self.kernel_params, self.coef, self.intercept = kernel_params, coef, intercept
        self.n_risk, self.ridge, self.fit_intercept = n_risk, ridge, fit_intercept
        self.X_train = X_train

    @property
    def n_columns(self):
        return self.X_train.shape[0]

    def block(self, X):
        return kernel_matrix(X, self.X_train, **self.kernel_params)

    def weights(self, V):
        """w(x) = G^-1 v + u (1 - u'v) / s, with G = K + ridge I and u = G^-1 1."""
        G = kernel_matrix(self.X_train, self.X_train, **self.kernel_params)
        G[np.diag_indices_from(G)] += self.ridge
        W = linalg.solve(G, V.T, assume_a="sym").T
        if self.fit_intercept:
            u = linalg.solve(G, np.ones(len(G)), assume_a="sym")
            W += np.outer(1.0 - V @ u, u / u.sum())
        return W

    def to_state(self):
        return {"kernel_params": self.kernel_params, "coef": self.coef,
                "intercept": self.intercept, "n_risk": self.n_risk, "ridge": self.ridge,
                "fit_intercept": self.fit_intercept}

    @classmethod
    def from_state(cls, state, X_train=None):
        return cls(**state, X_train=X_train)

    def slim(self):
        return self

    def check_state(self, X, n_features, kernel_params):
        if self.X_train is not X or self.kernel_params != kernel_params:
            raise ValueError("_fit must hold X_fit_ and kernel_params_")


class DirectBasis(Basis, LooBasis):
    """One kernel setting on some rows: fits and exact leave-one-out by dense solves."""

    def __init__(self, X, Y, T, kernel_params):
        self.X, self.Y, self.T, self.kernel_params = X, Y, T, kernel_params
        self.K = kernel_matrix(X, X, **kernel_params)
        self.n_fit, self.diagonal_max = len(self.K), float(np.abs(self.K.diagonal()).max())

    def fit(self, ridge, fit_intercept):  # the one fit of ECRM: T holds [psi, const, Y]
        n_risk = self.T.shape[1] - self.Y.shape[1]
        A, b, _, _ = _direct_fit(self.K, self.T, ridge, fit_intercept)
        return DirectFit(self.kernel_params, A, b, n_risk, ridge, fit_intercept, X_train=self.X)

    def _loo(self, on_labels, trial):
        """P_-i = (H t)_i - H_ii t_i over 1 - H_ii, H the hat matrix of the fit."""
        T = self.Y.astype(float) if on_labels else self.T
        m = self.n_fit
        G = self.K + trial.ridge * np.eye(m)
        H = self.K @ linalg.solve(G, np.eye(m), assume_a="sym")  # K G^-1
        if trial.fit_intercept:
            u = linalg.solve(G, np.ones(m), assume_a="sym")
            C = np.outer(np.ones(m), u) / u.sum()  # the intercept's projection 1 u'/s
            H = H @ (np.eye(m) - C) + C
        h = np.diag(H)[:, None]
        return (H @ T - h * T) / (1.0 - h)

    def loo_values(self, criterion, trials, rows):
        return [criterion.evaluate(self._loo(criterion.on_labels, t)[rows], self.Y[rows],
                                   t.where) for t in trials]

    def loo_predictions(self, criterion, trial, rows):
        return criterion.predict(self._loo(criterion.on_labels, trial)[rows], trial.where)

    def refit(self, trial):  # the search's T holds [psi, const]: the marginals Y follow
        return DirectBasis(self.X, self.Y, np.column_stack([self.T, self.Y]),
                           self.kernel_params).fit(trial.ridge, trial.fit_intercept)


class DirectSource(Source):
    def __init__(self, X, Y, T, settings):
        self.X, self.Y, self.T, self.settings = X, Y, T, list(settings)
        self.n_rows = X.shape[0]

    def add_setting(self, params):
        self.settings.append(params)
        return len(self.settings) - 1

    def basis(self, k, subset=None):
        rows = slice(None) if subset is None else subset
        return DirectBasis(self.X[rows], self.Y[rows], self.T[rows], self.settings[k])


class DirectSolver(Solver):
    """The toy: (K + ridge I) solved densely, m x m memory like the dual's."""

    name = "direct"
    fit_types = (DirectFit,)

    def memory_need(self, *, m, p, kernel, cv, n_targets=1):
        from ecrm.weights.kernel._solvers.budget import MemoryNeed

        return MemoryNeed(8.0 * m * m * (3 if cv else 2))

    def basis(self, X, Y, kernel_params, targets, *, space, alpha, random_state, backend):
        return DirectBasis(X, Y, targets(Y), kernel_params)

    def source(self, X, Y, settings, targets, *, space, alphas, random_state, backend,
               decompose, needs_scores, refine):
        return DirectSource(X, Y, targets.risk(Y), settings)


@pytest.fixture
def direct():
    register_solver(DirectSolver)  # the one table line
    yield DirectSolver
    unregister_solver("direct")


def _same_predictions(a, b, Xt, weights=True):
    assert_allclose(a.predict_costs(Xt), b.predict_costs(Xt), atol=1e-8)
    assert_allclose(a.predict_scores(Xt), b.predict_scores(Xt), atol=1e-8)
    if weights:  # a Nystrom model file holds no training rows, hence no weights
        assert_allclose(a.conditional_weights(Xt), b.conditional_weights(Xt), atol=1e-8)
    assert_array_equal(a.predict(Xt), b.predict(Xt))


@pytest.mark.parametrize("loss", [HammingLoss(), HierarchicalLoss(TREE)], ids=readable)
@pytest.mark.parametrize("fit_intercept", [True, False], ids="fit_intercept={}".format)
@pytest.mark.parametrize("as_object", [False, True], ids=["by-name", "as-an-object"])
def test_the_toy_solver_fits_saves_and_loads_as_the_dual(direct, tmp_path, loss, fit_intercept,
                                                          as_object):
    X, Y, Xt = _problem()
    kw = {"kernel": "rbf", "gamma": 0.2, "alpha": 1e-2, "fit_intercept": fit_intercept}
    ref = ECRM(loss, TREE, solver="dual", **kw).fit(X, Y)
    toy = ECRM(loss, TREE, solver=direct() if as_object else "direct", **kw).fit(X, Y)
    assert_allclose(toy.dual_coef_, ref.dual_coef_, atol=1e-8)
    _same_predictions(toy, ref, Xt)
    ecrm.save(toy, tmp_path / "toy.ecrm")
    loaded = ecrm.load(tmp_path / "toy.ecrm")
    assert loaded.get_params()["solver"] == toy.solver
    assert type(loaded._fit) is DirectFit
    _same_predictions(loaded, ref, Xt)


def test_the_toy_solver_runs_the_leave_one_out_search(direct, tmp_path):
    X, Y, Xt = _problem(m=36)
    kw = {"alphas": [1e-3, 1e-2, 1e-1, 1.0], "random_state": 0,
          "search": LeaveOneOutSearch(kernel_grid={"gamma": [0.05, 0.2, 1.0]},
                                      kernel_subsample=24)}
    ref = ECRMCV(HammingLoss(), TREE, solver="dual", **kw).fit(X, Y)
    toy = ECRMCV(HammingLoss(), TREE, solver="direct", **kw).fit(X, Y)
    for table in ("cv_results_", "kernel_search_results_"):
        assert_allclose(getattr(toy, table)["mean_score"],
                        getattr(ref, table)["mean_score"], atol=1e-10)
    assert (toy.alpha_, toy.fit_intercept_, toy.kernel_params_) == \
        (ref.alpha_, ref.fit_intercept_, ref.kernel_params_)
    assert_array_equal(toy.loo_predictions_, ref.loo_predictions_)
    ecrm.save(toy, tmp_path / "toy.ecrm")
    _same_predictions(ecrm.load(tmp_path / "toy.ecrm"), ref, Xt)


def test_a_file_of_the_toy_fit_is_checked_by_the_fit(direct, tmp_path):
    """The loader runs the fit's own check_state, and refuses the fit class once its solver
    is no longer registered."""
    X, Y, _ = _problem()
    toy = ECRM(HammingLoss(), TREE, solver=direct(), gamma=0.2).fit(X, Y)
    ecrm.save(toy, tmp_path / "toy.ecrm")
    toy._fit.kernel_params = {**toy._fit.kernel_params, "gamma": 0.3}
    with pytest.raises(ValueError, match="_fit must hold X_fit_ and kernel_params_"):
        toy._check_fitted_state()
    unregister_solver("direct")
    try:
        with pytest.raises(ModelFileError, match="DirectSolver"):
            ecrm.load(tmp_path / "toy.ecrm")
    finally:
        register_solver(DirectSolver)


def test_a_solver_is_known_only_while_registered(direct):
    X, Y, _ = _problem()
    assert vocabulary("solver") == ("auto", *BUILT_IN, "direct")
    assert CONSTRAINTS["solver"].offered == ("auto", *BUILT_IN, "direct")  # the CLI's too
    unregister_solver("direct")
    try:
        with pytest.raises(ValueError, match="solver must be one of .* or a Solver; got 'direct'"):
            ECRM(HammingLoss(), TREE, solver="direct").fit(X, Y)
        assert vocabulary("solver") == ("auto", *BUILT_IN)
    finally:
        register_solver(DirectSolver)
    with pytest.raises(ValueError, match="already registered"):
        register_solver(DirectSolver)


def test_auto_chooses_among_the_exact_solvers_only(direct):
    """The toy is not exact for ``"auto"`` (``auto=False``): a small problem takes the dual,
    a linear kernel over the budget the primal, as before the table."""
    from ecrm.weights.kernel._solvers.choice import check_solver_params

    assert check_solver_params("auto", None, m=50, p=3,
                               kernel="rbf").method == SOLVER_CLASSES["dual"]()
    assert check_solver_params("auto", 1e-3, m=10**5, p=3,
                               kernel="linear").solver == "primal"


def test_a_solver_object_carries_its_settings(tmp_path):
    X, Y, Xt = _problem(m=60)
    solver = NystromSolver(n_components=20, center_selection="kmeans++")
    by_object = ECRM(HammingLoss(), TREE, solver=solver, random_state=0).fit(X, Y)
    assert repr(solver) == "NystromSolver(n_components=20, center_selection='kmeans++')"
    ecrm.save(by_object, tmp_path / "nystrom.ecrm")
    loaded = ecrm.load(tmp_path / "nystrom.ecrm")
    assert loaded.solver == solver and loaded.solver is not solver
    _same_predictions(loaded, by_object, Xt, weights=False)
    with pytest.raises(ValueError, match="n_components=80 must be at most"):
        ECRM(HammingLoss(), TREE, solver=NystromSolver(80)).fit(X, Y)


def test_the_estimators_take_no_nystrom_settings_of_their_own():
    """``n_components`` and ``center_selection`` live on the solver object only."""
    solver = NystromSolver(n_components=20)
    for cls in (ECRM, ECRMCV):
        assert not {"n_components", "center_selection"} & set(inspect.signature(cls).parameters)
        with pytest.raises(TypeError, match="center_selection"):
            cls(HammingLoss(), TREE, solver=solver, center_selection="leverage")
        with pytest.raises(TypeError, match="n_components"):
            cls(HammingLoss(), TREE, solver="nystrom", n_components=20)


def test_solver_objects_clone_and_take_nested_parameters():
    est = ECRMCV(HammingLoss(), TREE, solver=NystromSolver(n_components=5))
    copy = clone(est)
    assert copy.solver == est.solver and copy.solver is not est.solver
    assert est.get_params()["solver__n_components"] == 5
    est.set_params(solver__center_selection="leverage")
    assert est.solver.center_selection == "leverage"
    assert copy.solver.center_selection == "uniform"
    with pytest.raises(ValueError, match="no parameters"):
        NystromSolver().set_params(gamma=1.0)


def test_the_joint_kernel_estimator_fits_through_the_dual_basis():
    """With the identity task kernel the joint basis is the dual's: the same fit."""
    X, Y, Xt = _problem()
    kw = {"kernel": "rbf", "gamma": 0.2, "alpha": 1e-2}
    joint = JointKernelECRM(HammingLoss(), TREE, **kw).fit(X, Y)
    plain = ECRM(HammingLoss(), TREE, solver="dual", **kw).fit(X, Y)
    assert_allclose(joint.predict_costs(Xt), plain.predict_costs(Xt), atol=1e-8)


def test_the_command_line_offers_the_table_s_solvers():
    from ecrm.cli import build_parser

    parser = build_parser(["fit", "--help"])
    fit = parser._subparsers._group_actions[0].choices["fit"]
    (action,) = [a for a in fit._actions if "--solver" in a.option_strings]
    assert tuple(action.choices) == ("auto", *SOLVER_CLASSES) == ("auto", *BUILT_IN)
    assert vocabulary("solver") == ("auto", *SOLVER_CLASSES)
