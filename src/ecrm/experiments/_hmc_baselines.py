"""The baselines' rows of ``ecrm reproduce hmc``: BR-SVM (the paper's) and the structured SVM.

BR-SVM chooses C and gamma by 3-fold cross-validation. The structured SVM
(:class:`ecrm.StructuredSVM`, opt-in: it is the slowest) is trained once per task loss, C by
3-fold cross-validation of that loss (:func:`tuned_ssvm`).
"""

from __future__ import annotations

import numpy as np

from ecrm.experiments._hmc_rows import timed

__all__ = ["br_svm_row", "ssvm_rows"]

#: The structured SVM's C grid, in units of 1 / (mean diagonal of its kernel, intercept
#: included), its passes when tuning (3-fold, at most 2,000 points) and when refitting, and
#: its relative duality gap.
SSVM_CS = (0.01, 0.1, 1.0, 10.0)
SSVM_PASSES = (20, 100)
SSVM_TOL = 1e-2
#: On the Gene Ontology DAGs (3,000-4,000 labels) the protocol is cut to keep the run short: the
#: C search on at most 500 training points with 10 passes, the refit with at most 20.
SSVM_DAG_POINTS = 500
SSVM_DAG_PASSES = (10, 20)


def br_svm_row(rows, Xtr, Ytr, Xte, kernel, gammas, random_state) -> dict:
    """BR-SVM's row of the :class:`~._hmc_rows.TableRows` ``rows`` (``gammas``: its RBF
    grid)."""
    from ecrm.baselines import BRSVM

    model = BRSVM(rows.hierarchy, kernel=kernel, gammas=gammas if kernel == "rbf" else None,
                  Cs=(0.1, 1.0, 10.0) if kernel == "rbf" else (0.01, 0.1, 1.0, 10.0),
                  random_state=random_state)
    _, fit_s = timed(lambda: model.fit(Xtr, Ytr))
    P, pred_s = timed(lambda: model.predict(Xte))
    return rows.row("BR-SVM", "paper", None, P, model.decision_function(Xte),
                    fit_seconds=fit_s, predict_seconds=pred_s,
                    params={"kernel": kernel, **model.best_params_})


def ssvm_rows(rows, Xtr, Ytr, Xte, kernel, random_state):
    """The structured SVM's rows of the :class:`~._hmc_rows.TableRows` ``rows``, one per task
    loss, each yielded when fitted."""
    h = rows.hierarchy
    for trained_for, loss in rows.losses.items():
        model, params = tuned_ssvm(loss, h, Xtr, Ytr, kernel, random_state)
        _, fit_s = timed(lambda model=model: model.fit(Xtr, Ytr))
        P, pred_s = timed(lambda model=model: model.predict(Xte))
        params.update(passes=model.n_iter_, gap=model.duality_gap_ / model.primal_objective_)
        yield rows.row("SSVM", "paper", trained_for, P,
                       model.decision_function(Xte)[:, :h.n_labels],
                       fit_seconds=fit_s, predict_seconds=pred_s, params=params)


def tuned_ssvm(loss, h, X, Y, kernel: str, random_state):
    """A :class:`ecrm.StructuredSVM` with C chosen by 3-fold cross-validation of the task loss
    on at most 2,000 random training points (as BR-SVM's C), and its parameters; on a DAG
    the cut protocol of ``SSVM_DAG_POINTS`` / ``SSVM_DAG_PASSES``."""
    import warnings

    from scipy import sparse
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import GridSearchCV, KFold

    from ecrm import StructuredSVM

    dag = not h.is_tree
    rng = np.random.default_rng(random_state)
    cap = SSVM_DAG_POINTS if dag else 2000
    sub = np.sort(rng.choice(len(X), min(len(X), cap), replace=False))
    gamma = 1.0 / X.shape[1] if kernel == "rbf" else None
    Xs = X[sub]
    if kernel == "rbf":
        diag = np.ones(len(sub))
    elif sparse.issparse(Xs):
        diag = np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel()
    else:
        diag = np.einsum("ij,ij->i", Xs, Xs)
    diag = 2.0 * diag  # the intercept adds the mean diagonal to the kernel
    passes = SSVM_DAG_PASSES if dag else SSVM_PASSES
    Cs = [c / float(diag.mean()) for c in SSVM_CS]
    base = StructuredSVM(loss, h, kernel=kernel, gamma=gamma, tol=SSVM_TOL,
                         max_iter=passes[0], random_state=random_state)
    search = GridSearchCV(base, {"C": Cs}, refit=False,  # the caller refits, on all points
                          cv=KFold(3, shuffle=True, random_state=random_state))
    with warnings.catch_warnings():  # the search's pass budget is the protocol's, by design
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(X[sub], Y[sub])
    C = search.best_params_["C"]
    params = {"kernel": kernel, "C": C}
    return base.set_params(C=C, max_iter=passes[1]), params
