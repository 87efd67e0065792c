r"""The surrogate loss and the generalisation bound of the paper's Section 4.

For a fitted ECRM predictor with estimated risk :math:`\hat R(y|x)` and prediction
:math:`\hat h(x) \in \arg\min_y \hat R(y|x)`, the surrogate loss with parameter
:math:`\rho > 0` is

.. math:: L^\rho(x, y) = \Phi\Big(\max_{y' \in \mathcal Y}\Big\{\ell(y', y)
          + \tfrac1\rho \Delta(y', x)\Big\}\Big), \qquad
          \Delta(y', x) = \min_{y''} \hat R(y''|x) - \hat R(y'|x) \le 0,

with :math:`\Phi(a) = \min\{a, L\}` and :math:`L \ge \sup \ell`. For a loss linear in an
embedding, :math:`\ell(y', y) = \langle\phi(y'), \psi(y)\rangle + \mathrm{const}(y)` and
:math:`\hat R(y'|x) = \langle \phi(y'), c(x)\rangle + \mathrm{const}`, so the inner maximum is
*loss-augmented inference* through the same exact oracle:

.. math:: \max_{y'} \{\dots\} = \mathrm{const}(y) + \tfrac1\rho \langle\phi(\hat h(x)),
          c(x)\rangle - \min_{y'} \big\langle \phi(y'),\, c(x)/\rho - \psi(y) \big\rangle .

Properties (paper, Proposition 4.1): :math:`L^\rho \ge \ell(\hat h(x), y)` (surrogacy),
non-decreasing in :math:`\rho`, and on a finite space equal to the loss of the worst
minimiser of :math:`\hat R` for all small enough :math:`\rho`.

Theorem 4.2: if :math:`\ell \le L` and :math:`k(x, x) \le \kappa`, then with probability at
least :math:`1 - \delta`

.. math:: \mathfrak R(\hat h) \le \hat{\mathfrak R}^\rho(\hat h) + \frac{4L\nu}{\rho m}
          + L\Big(\frac{8\nu}{\rho} + 1\Big)\sqrt{\frac{\ln(1/\delta)}{2m}}, \qquad
          \nu = \frac\kappa\lambda + \Big(\frac\kappa\lambda\Big)^{3/2},

with :math:`\hat{\mathfrak R}^\rho` the mean surrogate loss on the :math:`m` training points.
The theorem is stated for ECRM without intercept.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._validation import check_int, check_real, check_same_rows
from ecrm.losses.base import LinearLoss

__all__ = ["GeneralizationBound", "SurrogateResult", "generalization_bound", "surrogate_loss",
           "theorem_bound"]

#: Kernels bounded by 1 on the diagonal: k(x, x) = 1 for every x.
_UNIT_DIAGONAL = {"rbf": 1.0, "laplacian": 1.0, "cosine": 1.0}


@dataclass
class SurrogateResult:
    """The surrogate loss :math:`L^\\rho(x_k, y_k)` of each pair, with what attained it.

    Attributes
    ----------
    value : ndarray of shape (n,)
        :math:`L^\\rho(x_k, y_k)` (clipped at ``loss_bound`` when one is given).
    maximiser : ndarray of shape (n, d)
        The :math:`y'` attaining the inner maximum (loss-augmented inference).
    prediction : ndarray of shape (n, d)
        :math:`\\hat h(x_k)`.
    prediction_loss : ndarray of shape (n,)
        :math:`\\ell(\\hat h(x_k), y_k)`; ``value >= prediction_loss``.
    rho : float
    loss_bound : float or None
    """

    value: np.ndarray
    maximiser: np.ndarray
    prediction: np.ndarray
    prediction_loss: np.ndarray
    rho: float
    loss_bound: float | None

    @property
    def mean(self) -> float:
        """The empirical surrogate risk :math:`\\hat{\\mathfrak R}^\\rho`."""
        return float(np.mean(self.value))


def surrogate_loss(estimator, X, Y, rho: float, *, loss_bound: float | None = None
                   ) -> SurrogateResult:
    r"""The surrogate loss :math:`L^\rho(x, y)` of a fitted ECRM estimator on ``(X, Y)``.

    Parameters
    ----------
    estimator : fitted ecrm.ECRM or ecrm.ECRMCV with a linear loss
    X : array-like of shape (n, p)
    Y : array-like of shape (n, d)
        Outputs in the estimator's output space.
    rho : float
        :math:`\rho > 0`.
    loss_bound : float, optional
        :math:`L` of :math:`\Phi(a) = \min\{a, L\}`; no clipping when omitted.

    Returns
    -------
    SurrogateResult

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import ECRM, MultilabelSpace
    >>> from ecrm.losses import HammingLoss
    >>> X = np.array([[0.0], [0.2], [1.0], [1.2]])
    >>> Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1]])
    >>> est = ECRM(HammingLoss(), MultilabelSpace(2), gamma=2.0, fit_intercept=False).fit(X, Y)
    >>> res = surrogate_loss(est, X, Y, rho=1e-3, loss_bound=2.0)
    >>> res.value, res.prediction_loss
    (array([0., 0., 0., 0.]), array([0., 0., 0., 0.]))
    """
    rho = check_real(rho, "rho")
    if loss_bound is not None:
        loss_bound = check_real(loss_bound, "loss_bound")
    check_is_fitted(estimator, "X_fit_")
    loss, space = estimator.loss, estimator.output_space
    if not isinstance(loss, LinearLoss):
        raise TypeError(f"the surrogate loss needs a loss with a linear form; "
                        f"{type(loss).__name__} has none")
    Y = space.validate(Y)
    C = estimator.predict_costs(X)
    check_same_rows(C, Y)
    Y_hat = space.minimize(C, loss.cost_form)
    r_min = np.einsum("ij,ij->i", loss.phi(Y_hat), C)
    P, off = loss.psi(Y), loss.const(Y)
    Y_adv = space.minimize(C / rho - P, loss.cost_form)
    Phi_adv = loss.phi(Y_adv)
    gap = np.minimum(r_min - np.einsum("ij,ij->i", Phi_adv, C), 0.0)  # Delta <= 0
    raw = np.einsum("ij,ij->i", Phi_adv, P) + off + gap / rho
    pred_loss = loss(Y_hat, Y)
    # The maximum is at least the value at y' = h(x) (Delta = 0): guard against round-off.
    raw = np.maximum(raw, pred_loss)
    value = raw if loss_bound is None else np.minimum(raw, loss_bound)
    return SurrogateResult(value, Y_adv, Y_hat, pred_loss, rho, loss_bound)


@dataclass
class GeneralizationBound:
    """Theorem 4.2: ``bound = empirical_risk + stability_term + confidence_term``.

    Attributes
    ----------
    bound, empirical_risk, stability_term, confidence_term, nu : float
        :math:`\\nu = \\kappa/\\lambda + (\\kappa/\\lambda)^{3/2}`; ``stability_term`` is
        :math:`4L\\nu/(\\rho m)`; ``confidence_term`` is
        :math:`L(8\\nu/\\rho + 1)\\sqrt{\\ln(1/\\delta)/(2m)}`.
    rho, delta, kappa, lam, loss_bound : float
    n_samples : int
    """

    bound: float
    empirical_risk: float
    stability_term: float
    confidence_term: float
    nu: float
    rho: float
    delta: float
    kappa: float
    lam: float
    loss_bound: float
    n_samples: int


def theorem_bound(empirical_risk: float, *, n_samples: int, rho: float, delta: float,
                  kappa: float, lam: float, loss_bound: float) -> GeneralizationBound:
    r"""Theorem 4.2's right-hand side from its ingredients.

    >>> b = theorem_bound(0.1, n_samples=10_000, rho=10.0, delta=0.05, kappa=1.0, lam=1.0,
    ...                   loss_bound=1.0)
    >>> round(b.nu, 3), round(b.bound, 4)
    (2.0, 0.1319)
    """
    rho = check_real(rho, "rho")
    delta = check_real(delta, "delta", high=1.0, high_open=True)
    kappa, lam = check_real(kappa, "kappa"), check_real(lam, "lam")
    L = check_real(loss_bound, "loss_bound")
    m = check_int(n_samples, "n_samples")
    ratio = kappa / lam
    nu = ratio + ratio**1.5
    stability = 4.0 * L * nu / (rho * m)
    confidence = L * (8.0 * nu / rho + 1.0) * np.sqrt(np.log(1.0 / delta) / (2.0 * m))
    return GeneralizationBound(float(empirical_risk + stability + confidence),
                               float(empirical_risk), float(stability), float(confidence),
                               float(nu), rho, delta, kappa, lam, L, m)


def generalization_bound(estimator, *, rho: float, delta: float, loss_bound: float,
                         kappa: float | None = None, X=None, Y=None) -> GeneralizationBound:
    r"""Theorem 4.2 for a fitted ECRM estimator, with the surrogate risk on its training set.

    Parameters
    ----------
    estimator : fitted ecrm.ECRM (or ECRMCV) with a linear loss
        :math:`\lambda` is its ``alpha`` (``alpha_`` for ECRMCV).
    rho : float
        :math:`\rho > 0`.
    delta : float
        Confidence level, in (0, 1).
    loss_bound : float
        :math:`L \ge \sup_{y, y'} \ell(y, y')` (e.g. ``d`` for the Hamming loss on ``d``
        labels, 1 for the 0-1 loss).
    kappa : float, optional
        :math:`\sup_x k(x, x)`; defaults to 1 when the fitted kernel
        (``estimator.kernel_params_["kernel"]``) is rbf, laplacian or cosine, and must be
        given for others.
    X, Y : array-like, optional
        The training set (default: the estimator's ``X_fit_`` and ``Y_fit_``; give them when
        the kernel is precomputed, ``X`` then being the training Gram matrix).

    Returns
    -------
    GeneralizationBound
    """
    check_is_fitted(estimator, "X_fit_")
    kernel = estimator.kernel_params_["kernel"]  # the fitted kernel (ECRMCV may pick another)
    if kappa is None:
        if not isinstance(kernel, str) or kernel not in _UNIT_DIAGONAL:
            raise ValueError(f"give kappa = sup_x k(x, x) for kernel {kernel!r} (it is 1 only "
                             f"for {sorted(_UNIT_DIAGONAL)})")
        kappa = _UNIT_DIAGONAL[kernel]
    lam = getattr(estimator, "alpha_", None) or estimator.alpha
    intercept = (estimator.fit_intercept_ if hasattr(estimator, "fit_intercept_")
                 else estimator.fit_intercept)
    if intercept:
        warnings.warn("Theorem 4.2 is stated for ECRM without intercept; the bound is "
                      "computed for this fit as it is", UserWarning, stacklevel=2)
    if X is None or Y is None:
        if kernel == "precomputed":
            raise ValueError("with kernel='precomputed' give X (the training Gram matrix) "
                             "and Y")
        X, Y = estimator.X_fit_, estimator.Y_fit_
    surrogate = surrogate_loss(estimator, X, Y, rho, loss_bound=loss_bound)
    return theorem_bound(surrogate.mean, n_samples=len(surrogate.value), rho=rho,
                         delta=delta, kappa=kappa, lam=lam, loss_bound=loss_bound)
