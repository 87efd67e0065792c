r"""The structured SVM on ECRM's exact oracles: the max-margin column beside ECRM.

A structured SVM with margin rescaling (Taskar et al. 2003; Tsochantaridis et al. 2005)
scores an output by :math:`\langle w, \Phi(x, y)\rangle` with the joint feature
:math:`\Phi(x, y) = \varphi(x) \otimes \phi(y)`, where :math:`\phi` is the prediction-side
embedding of the loss's linear form :math:`\ell(y, y') = \langle\phi(y), \psi(y')\rangle +
\mathrm{const}(y')` (the 0/1 label vector, the pairwise orders of a ranking, ...), and solves

.. math:: \min_w\ \frac12 \|w\|^2 + C \sum_{i=1}^n \max_{y \in \mathcal Y}
          \Big[\ell(y, y_i) - \langle w, \Phi(x_i, y_i) - \Phi(x_i, y)\rangle\Big] .

Since :math:`\ell(\cdot, y_i)` is linear in :math:`\phi(y)`, the loss-augmented inference
:math:`\arg\max_y \ell(y, y_i) + \langle f(x_i), \phi(y)\rangle` is the output space's exact
linear oracle on the costs :math:`-(\psi(y_i) + f(x_i))`: exact on trees, DAGs, permutations
and totally unimodular polytopes, with no new code per space.

**Solver.** Block-coordinate Frank-Wolfe on the dual (Lacoste-Julien et al., ICML 2013),
kernelised: with :math:`\lambda = 1 / (C n)`, the iterate is
:math:`w = \sum_i \varphi(x_i) \otimes B_i` where :math:`B_i = (\phi(y_i) - \mu_i) /
(\lambda n)` and :math:`\mu_i` is the mean embedding under example :math:`i`'s dual
distribution, so the scores of any input are :math:`f(x) = \sum_i k(x, x_i) B_i` (one kernel
block times ``dual_coef_``). A step on block :math:`i` calls the oracle once and moves
:math:`B_i` towards :math:`(\phi(y_i) - \phi(y^*))/(\lambda n)` with the optimal step size.
After every ``gap_every``-th pass (and the last) the exact duality gap is computed from one
batched oracle call over all examples (the Frank-Wolfe gap equals the primal-dual gap here),
and fitting stops when it is at most ``tol`` times the primal objective. The reported gap
bounds the primal suboptimality: ``primal_objective_ - min_w P(w) <= duality_gap_``.

**Cached oracle** (``cached_oracle=True``; the multi-plane block Frank-Wolfe of Shah,
Kolmogorov and Lampert, CVPR 2015). Where the oracle is costly (the DAG hierarchical loss's
MILP) each example keeps the outputs already found for it, up to ``_CACHE`` of them, active
or not. A visit steps between the cached output of highest loss-augmented value and the
active one of lowest value (a few inner products), and calls the exact oracle only when that
cached gap has fallen below ``_RHO`` times the block's last exact gap, or on every
``_ORACLE_EVERY``-th visit. The outputs of the full-gap oracle call join the caches too. A
cached output is a vertex of the block's simplex and every step size is exact for the
current scores, so the dual still never decreases; only the stopping rule needs the exact
oracle, and it always has it.

References
----------
S. Lacoste-Julien, M. Jaggi, M. Schmidt and P. Pletscher. Block-coordinate Frank-Wolfe
optimization for structural SVMs. ICML 2013.
J. Rousu, C. Saunders, S. Szedmak and J. Shawe-Taylor. Kernel-based learning of
hierarchical multilabel classification models. JMLR 7, 2006 (HM^3N).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ecrm.estimators._parameters import KERNEL_PARAMS, RANDOM_STATE, Flag, table
from ecrm.estimators._ssvm_blocks import DualBlock
from ecrm.estimators._template import StructuredEstimator
from ecrm.losses.base import LinearLoss
from ecrm.model_files._state import check_ssvm_summaries
from ecrm.spaces.base import OutputSpace
from ecrm.weights.kernel._kernels import (
    check_kernel_input,
    kernel_diagonal_mean,
    kernel_matrix,
)

__all__ = ["StructuredSVM", "loss_augmented_argmax"]


def loss_augmented_argmax(loss: LinearLoss, space: OutputSpace, F, Psi) -> np.ndarray:
    r"""Rows of :math:`\arg\max_y\ \ell(y, y_i) + \langle f_i, \phi(y)\rangle` over ``space``.

    With :math:`\ell(y, y_i) = \langle\phi(y), \psi(y_i)\rangle + \mathrm{const}(y_i)` this is
    the space's exact linear oracle on the costs :math:`-(\psi(y_i) + f_i)` (the constant does
    not move the argmax).

    Parameters
    ----------
    loss : ecrm.losses.LinearLoss
    space : ecrm.spaces.base.OutputSpace
    F : ndarray of shape (n, e)
        Scores :math:`f(x_i)` of the embedding coordinates.
    Psi : ndarray of shape (n, e)
        :math:`\psi(y_i)` of the reference outputs.

    Returns
    -------
    Y : ndarray of shape (n, d)
    """
    return space.minimize(-(np.asarray(Psi, dtype=float) + F), loss.cost_form)


#: Blocks visited together (one kernel product and one batched oracle call per round),
#: rounds of pairwise steps per visit, and the relative block gap below which a block rests.
_BATCH = 32
_INNER_STEPS = 5
_BLOCK_TOL = 1e-9
#: The cached oracle: outputs kept per example, the fraction of the last exact block gap
#: below which the cached gap no longer vouches for progress, and the visits after which the
#: exact oracle is called anyway (so a stale cache cannot stall a block for long).
_CACHE = 16
_RHO = 0.25
_ORACLE_EVERY = 10


class StructuredSVM(StructuredEstimator):
    r"""Kernel structured SVM (margin rescaling) trained by block-coordinate Frank-Wolfe.

    See the module docstring for the objective and the solver. The loss must have a linear
    form (:class:`ecrm.losses.LinearLoss`); its embedding :math:`\phi` gives the joint
    feature, so every output space with an exact oracle works as it is.

    Parameters
    ----------
    loss : ecrm.losses.LinearLoss
    output_space : ecrm.spaces.base.OutputSpace
    kernel : str or callable, default="rbf"
        As in :class:`ecrm.ECRM` (``"precomputed"``: ``X`` is the Gram matrix).
    gamma, degree, coef0 : as in :class:`ecrm.ECRM`.
    C : float in (0, inf), default=1.0
        Weight of the summed structured hinge losses (:math:`\lambda = 1/(Cn)`).
    fit_intercept : bool, default=True
        A (regularised) bias per embedding coordinate: the kernel gets the constant
        :math:`b^2` = the mean of its training diagonal added (1 for RBF), so the bias
        feature has the size of a typical input's and is not penalised out of use when the
        inputs' norms are large (liblinear's ``intercept_scaling`` chosen from the data).
    max_iter : int >= 1, default=100
        Passes over the training examples; stopping there with the duality gap above its
        target (``tol``) warns (:class:`~sklearn.exceptions.ConvergenceWarning`).
    tol : float in [0, inf), default=1e-3
        Stop when the duality gap is at most ``tol`` times the primal objective.
    warm_start : bool, default=False
        Start from the previous fit's dual variables (same training set size and outputs).
    cached_oracle : bool, default=True
        Keep each example's outputs found so far and step against the best of them, calling
        the exact oracle only when that step's gap is small (module docstring). The same
        optimum; far fewer oracle calls where the oracle is costly. ``False``: the exact
        oracle on every block step.
    gap_every : int >= 1, default=1
        Passes between two computations of the exact duality gap (one oracle call per
        example each); the last pass always computes it, and ``tol`` is checked only then.
    random_state : int, RandomState instance or None, default=None
        The order of the blocks in each pass.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n, e)
        :math:`B`: the scores are ``(K(X, X_fit_) + intercept_scale_) @ dual_coef_``.
    intercept_scale_ : float
        :math:`b^2` added to the kernel (0 without an intercept).
    support_ : ndarray of int
        Training examples whose dual variables left their own output (rows of ``B`` not 0).
    primal_objective_, dual_objective_, duality_gap_ : float
        At the last pass, in the units of the objective above (``C`` times the summed
        hinge plus half the squared norm).
    gap_history_ : ndarray
        The exact duality gap after each pass that computed it (every ``gap_every``-th, and
        the last).
    n_iter_ : int
        Passes run.
    X_fit_, Y_fit_ : the training inputs and outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import Hierarchy, StructuredSVM
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]])
    >>> Y = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]])
    >>> svm = StructuredSVM(HammingLoss(), h, gamma=2.0, C=10.0, random_state=0).fit(X, Y)
    >>> svm.predict([[0.05], [1.05]]).tolist()
    [[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    >>> bool(svm.duality_gap_ <= 1e-3 * svm.primal_objective_)
    True
    """

    #: What a fit sets and a model file holds (the dual's active sets, needed only by
    #: ``warm_start``, are not saved: a loaded model warm-starts from its own outputs).
    _fitted_attributes: tuple[str, ...] = (
        "X_fit_", "Y_fit_", "n_features_in_", "feature_names_in_", "kernel_params_",
        "_y_ndim", "dual_coef_", "support_", "primal_objective_", "dual_objective_",
        "duality_gap_", "gap_history_", "n_iter_", "intercept_scale_")

    _parameter_constraints = table(
        "kernel", "gamma", "degree", "coef0", "C", "max_iter", "tol", "gap_every",
        fit_intercept=Flag(), warm_start=Flag(), cached_oracle=Flag(),
        random_state=RANDOM_STATE)
    _parameter_rules = (KERNEL_PARAMS,)
    _linear_loss = True

    def __init__(self, loss, output_space, *, kernel="rbf", gamma=None, degree=3, coef0=1,
                 C=1.0, fit_intercept=True, max_iter=100, tol=1e-3, warm_start=False,
                 cached_oracle=True, gap_every=1, random_state=None):
        self.loss = loss
        self.output_space = output_space
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.C = C
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.cached_oracle = cached_oracle
        self.gap_every = gap_every
        self.random_state = random_state

    # -- fit ------------------------------------------------------------------------------
    def fit(self, X, Y):
        """Train by block-coordinate Frank-Wolfe until the duality gap meets ``tol``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
            Training inputs (the Gram matrix, (n, n), if ``kernel="precomputed"``).
        Y : array-like of shape (n, d), or (n,) for one output coordinate

        Returns
        -------
        self : StructuredSVM

        Raises
        ------
        ValueError
            Bad parameters or data, or a fit whose support is empty (no scores to predict
            from); nothing is set then.

        Warns
        -----
        sklearn.exceptions.ConvergenceWarning
            When ``max_iter`` passes end with the duality gap above ``tol`` times the
            objective.
        """
        params = self._check_params()["kernel_params"]
        X, Y, seen = self._check_training_data(X, Y, params["kernel"])
        n = X.shape[0]
        K = kernel_matrix(X, X, **params, copy=True)
        bias = float(np.mean(np.diag(K))) if self.fit_intercept else 0.0
        if not (np.isfinite(bias) and bias >= 0):
            raise ValueError(f"the kernel's diagonal has mean {bias!r}: a kernel's diagonal "
                             "must be finite and non-negative")
        K += bias
        E, Psi = self.loss.phi(Y), self.loss.psi(Y)
        const = self.loss.const(Y)
        lam = 1.0 / (float(self.C) * n)
        blocks = self._start(E, np.einsum("ij,ij->i", E, Psi) + const)
        B = np.stack([(E[i] - blk.weights @ blk.embeddings) / (lam * n)
                      for i, blk in enumerate(blocks)])
        ell = np.array([blk.weights @ blk.losses for blk in blocks]) / n
        rng = check_random_state(self.random_state)
        # the cached oracle's bookkeeping: each block's exact gap at its last oracle call
        # (inf: never called) and its visits since
        cache = (np.full(n, np.inf), np.zeros(n, dtype=int)) if self.cached_oracle else None
        history, max_iter, every = [], int(self.max_iter), int(self.gap_every)
        for it in range(max_iter):
            order = rng.permutation(n)
            for start in range(0, n, _BATCH):
                self._visit(order[start:start + _BATCH], K, B, ell, blocks, E, Psi, const,
                            lam, cache)
            if (it + 1) % every and it + 1 < max_iter:
                continue
            primal, dual = self._objectives(K, B, ell, blocks, E, Psi, const, lam, cache)
            history.append(primal - dual)
            if primal - dual <= float(self.tol) * abs(primal):
                break
        scale = float(self.C) * n  # P_C(w) = C n P_lambda(w)
        support = np.flatnonzero(np.any(B != 0, axis=1))
        if not support.size:
            raise ValueError(
                f"StructuredSVM with C={self.C!r} ended with an empty support: no training "
                "example's dual variables left its own output, so the model would have no "
                "scores to predict from; choose a C nearer 1 (with an extreme C the "
                "solver's steps are lost to floating-point rounding)")
        if primal - dual > float(self.tol) * abs(primal):
            warnings.warn(
                f"StructuredSVM stopped at max_iter={max_iter} passes with a duality gap of "
                f"{scale * (primal - dual):.4g}, above its target {float(self.tol)!r} x the "
                f"objective {scale * abs(primal):.4g} = "
                f"{float(self.tol) * scale * abs(primal):.4g}; increase max_iter (or tol)",
                ConvergenceWarning, stacklevel=2)
        self._blocks = blocks  # the active sets a warm start resumes from (not saved)
        self._set_fitted(X, Y, seen, kernel_params_=params, dual_coef_=B, support_=support,
                         primal_objective_=scale * primal, dual_objective_=scale * dual,
                         duality_gap_=scale * (primal - dual),
                         gap_history_=scale * np.array(history), n_iter_=it + 1,
                         intercept_scale_=bias)
        return self

    def _start(self, E, own_loss) -> list[DualBlock]:
        """Each example's dual distribution: its own output, or the last fit's."""
        old = getattr(self, "_blocks", None) if self.warm_start else None
        if old is not None and len(old) == len(E) and old[0].embeddings.shape[1] == E.shape[1]:
            return [blk.copy() for blk in old]
        return [DualBlock.own(e, loss) for e, loss in zip(E, own_loss, strict=True)]

    def _visit(self, batch, K, B, ell, blocks, E, Psi, const, lam, cache) -> None:
        r"""Pairwise Frank-Wolfe steps on the blocks of ``batch``, in place.

        For block :math:`i` the Frank-Wolfe atom is a loss-augmented output :math:`y^*`, the
        away atom the active output of lowest loss-augmented value :math:`h(y) = \ell(y, y_i)
        + \langle f_i, \phi(y)\rangle`. Moving mass :math:`\delta` from the away atom
        :math:`v` to :math:`y^*` changes the dual by a concave quadratic in :math:`\delta`,
        maximised at :math:`\delta = \lambda n (h(y^*) - h(v)) / (k_{ii} \|\phi(y^*) -
        \phi(v)\|^2)`, clipped to the away atom's mass (Osokin et al., ICML 2016: linear
        convergence where plain block Frank-Wolfe zig-zags).

        The scores of the batch come from one kernel product and follow every step exactly
        (:math:`f_j \mathrel{+}= k_{ji} \Delta B_i`), ``_INNER_STEPS`` rounds. Without the
        cache the oracle runs on the whole batch once per round; with it (``cache`` not
        None) once per visit, on the blocks whose cached gap is small or stale, and the
        rounds step towards each block's best cached output (module docstring).
        """
        F = K[batch] @ B  # the batch's scores under the current w, kept exact below
        Kb = K[np.ix_(batch, batch)]
        if cache is None:
            for _ in range(_INNER_STEPS):
                Y_star = loss_augmented_argmax(self.loss, self.output_space, F, Psi[batch])
                E_star = self.loss.phi(Y_star)
                moved = False
                for k, i in enumerate(batch):
                    blk, e_star = blocks[i], E_star[k]
                    loss_star = e_star @ Psi[i] + const[i]
                    h = blk.losses + blk.embeddings @ F[k]
                    moved |= self._pairwise(k, i, None, (e_star, loss_star,
                                                         loss_star + e_star @ F[k]),
                                            h, F, Kb, K, B, E, ell, blocks, lam)
                if not moved:
                    break
            return
        last_gap, since = cache
        since[batch] += 1
        for r in range(_INNER_STEPS):
            # ask the oracle where the cached gap fell below _RHO times the last exact one
            # (the cache has given what it had: right after a step towards a fresh output
            # that output's gap is closed, so a block with nothing better cached asks again,
            # as without the cache), or on the _ORACLE_EVERY-th visit. Strictly below: a
            # block exactly optimal at its last call (gap 0) waits for that visit.
            H = [blocks[i].losses + blocks[i].embeddings @ F[k] for k, i in enumerate(batch)]
            ask = [k for k, i in enumerate(batch)
                   if (r == 0 and since[i] >= _ORACLE_EVERY)
                   or H[k].max() - blocks[i].weights @ H[k] < _RHO * last_gap[i]]
            if ask:
                Y_star = loss_augmented_argmax(self.loss, self.output_space, F[ask],
                                               Psi[batch[ask]])
                self._add_to_caches(batch[ask], F[ask], self.loss.phi(Y_star), blocks, Psi,
                                    const, cache)
            moved = False
            for k, i in enumerate(batch):
                h = blocks[i].losses + blocks[i].embeddings @ F[k]
                moved |= self._pairwise(k, i, int(np.argmax(h)), None, h, F, Kb, K, B, E,
                                        ell, blocks, lam)
            if not moved:
                break
        for k, i in enumerate(batch):
            blocks[i].trim(blocks[i].losses + blocks[i].embeddings @ F[k], _CACHE)

    @staticmethod
    def _add_to_caches(rows, F, E_star, blocks, Psi, const, cache) -> None:
        """Cache the exact oracle's outputs ``E_star`` of ``rows`` (scores ``F``) and record
        each block's exact Frank-Wolfe gap."""
        last_gap, since = cache
        for k, i in enumerate(rows):
            blk = blocks[i]
            t = blk.index(E_star[k], E_star[k] @ Psi[i] + const[i])
            h = blk.losses + blk.embeddings @ F[k]
            last_gap[i], since[i] = max(h[t] - blk.weights @ h, 0.0), 0
            blk.trim(h, _CACHE)

    @staticmethod
    def _pairwise(k, i, t, new, h, F, Kb, K, B, E, ell, blocks, lam) -> bool:
        """One pairwise step on block ``i`` (row ``k`` of the batch) towards its cached
        output ``t``, or towards ``new = (embedding, loss, value)`` (cached only if the step
        is taken); ``h`` holds the values of the cached outputs. Returns whether it moved."""
        blk, n = blocks[i], len(ell)
        active = np.flatnonzero(blk.weights > 0)
        away = int(active[np.argmin(h[active])])
        e_t, h_t = (blk.embeddings[t], h[t]) if new is None else (new[0], new[2])
        diff = np.asarray(e_t, dtype=float) - blk.embeddings[away]  # no int8 overflow
        curvature = K[i, i] * (diff @ diff)
        if blk.weights @ (h_t - h) <= _BLOCK_TOL * abs(h_t) or curvature <= 0:
            return False  # this block's Frank-Wolfe gap (times n) is closed
        delta = min(blk.weights[away], lam * n * (h_t - h[away]) / curvature)
        if new is not None:
            t = blk.index(new[0], new[1])
        blk.move(away, t, delta, keep=new is None)
        moved = (E[i] - blk.weights @ blk.embeddings) / (lam * n)
        F += np.outer(Kb[:, k], moved - B[i])
        B[i] = moved
        ell[i] = (blk.weights @ blk.losses) / n
        return True

    def _objectives(self, K, B, ell, blocks, E, Psi, const, lam, cache) -> tuple[float, float]:
        """Primal and dual objectives (the lambda form), from one batched oracle call over
        every example; with the cache, its outputs join the caches."""
        n = len(ell)
        F = K @ B
        Y_star = loss_augmented_argmax(self.loss, self.output_space, F, Psi)
        E_star = self.loss.phi(Y_star)
        hinge = (np.einsum("ij,ij->i", E_star, Psi) + const
                 - np.einsum("ij,ij->i", F, E - E_star))
        norm2 = float(np.einsum("ij,ij->", B, F))
        primal = 0.5 * lam * norm2 + float(np.maximum(hinge, 0.0).sum()) / n
        if cache is not None:
            self._add_to_caches(np.arange(n), F, E_star, blocks, Psi, const, cache)
        return primal, -0.5 * lam * norm2 + float(ell.sum())

    def _check_own_state(self, plan: Mapping, training) -> None:
        """The dual variables, support, objectives and intercept scale as fit leaves them."""
        X, Y, n = training.X, training.Y, training.m
        params = plan["kernel_params"]
        check_ssvm_summaries(self)
        if self.kernel_params_ != params:
            raise ValueError("kernel_params_ do not match the parameters")
        e = self.loss.phi(np.asarray(Y[:1], dtype=float)).shape[1]
        B = self.dual_coef_
        if not isinstance(B, np.ndarray) or B.dtype != np.float64 or B.shape != (n, e) or \
                not np.isfinite(B).all():
            raise ValueError(f"dual_coef_ must be a finite float64 array of shape {(n, e)}")
        support = self.support_
        if not isinstance(support, np.ndarray) or support.dtype.kind != "i" or \
                not np.array_equal(support, np.flatnonzero(np.any(B != 0, axis=1))):
            raise ValueError("support_ must be the rows of dual_coef_ that are not 0")
        b = self.intercept_scale_
        if not isinstance(b, float) or not (np.isfinite(b) and b >= 0) or \
                (not self.fit_intercept and b != 0):
            raise ValueError(f"intercept_scale_ must be a finite float >= 0, and 0 without "
                             f"an intercept; found {b!r}")
        if self.fit_intercept:  # the kernel diagonal's mean, to round-off (blocks, not all)
            mean = kernel_diagonal_mean(X, params)
            if not abs(b - mean) <= 1e-9 * abs(mean):
                raise ValueError(f"intercept_scale_={b!r} must be the mean of the kernel's "
                                 f"diagonal on X_fit_, {mean!r}")

    # -- prediction -----------------------------------------------------------------------
    def decision_function(self, X) -> np.ndarray:
        r"""Scores :math:`f(x)` of the embedding coordinates: the model's score of an output
        :math:`y` is :math:`\langle f(x), \phi(y)\rangle`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)

        Returns
        -------
        F : ndarray of shape (n, e)
        """
        check_is_fitted(self, "dual_coef_")
        checked = check_kernel_input(X, self.kernel_params_["kernel"],
                                     n_train=self.X_fit_.shape[0])
        validate_data(self, X, reset=False, skip_check_array=True)  # X's names, if any
        X = checked
        s = self.support_
        if self.kernel_params_["kernel"] == "precomputed":
            V = np.asarray(X[:, s].toarray() if hasattr(X, "toarray") else X[:, s],
                           dtype=float) + self.intercept_scale_
        else:
            V = kernel_matrix(X, self.X_fit_[s], **self.kernel_params_, copy=True) \
                + self.intercept_scale_
        return V @ self.dual_coef_[s]

    def predict(self, X) -> np.ndarray:
        r"""The highest-scoring outputs :math:`\arg\max_y \langle f(x), \phi(y)\rangle`, by the
        space's exact oracle.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)

        Returns
        -------
        Y : ndarray of shape (n, d), or (n,) if fitted on a 1-D ``y``
        """
        Y = self.output_space.minimize(-self.decision_function(X), self.loss.cost_form)
        return Y.ravel() if self._y_ndim == 1 else Y
