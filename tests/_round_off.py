r"""How far two computations of the same floating result may lie apart.

A loaded model's arrays can come back in another memory layout (C or F order, a read-only
buffer, another alignment), and a BLAS kernel may then add the same terms in another order.
Any order of a sum of ``n`` terms lies within :math:`\gamma_n \sum |t_i|`,
:math:`\gamma_n \approx n\,\varepsilon`, of the exact sum, so two orders differ by at most
twice that. The tests allow :data:`ROOM` times :math:`\sum |t_i|`: a margin of about 100 over
:math:`2 n \varepsilon` for the few dozen terms of their small models, while any real change
(a coefficient edited by 1e-6) still fails them.
"""

from __future__ import annotations

import numpy as np

#: The tolerance, relative to the size of the summed terms.
ROOM = 1e-12


def term_scale(model, X) -> float:
    r"""The largest size :math:`\max_{k,l} (|V| |A| + |b|)_{kl}` of the terms summed into
    one of a risk estimator's costs or label scores: ``V`` the block map of ``X`` (kernel
    columns, features or forest weights), ``A`` and ``b`` the fit's coefficients and
    intercepts (risk and marginal columns alike)."""
    fit = model._fit
    V = model._kernel_block(X)
    return float((abs(V) @ np.abs(fit.coef) + np.abs(fit.intercept)).max())


def calibration_slope(calibration) -> float:
    r"""The steepest slope :math:`L` of a score calibration's maps: scores that differ by
    :math:`\delta` come out at most :math:`L \delta` apart (plus the map's own round-off, a few
    ulps of scores in [0, 1]). Platt's :math:`\sigma(a s + b)` has :math:`L = \max |a| / 4`;
    an isotonic map, piecewise linear, its steepest segment."""
    if hasattr(calibration, "a_"):
        return float(np.abs(calibration.a_).max()) / 4
    ptr, x, y = calibration.indptr_, calibration.breakpoints_, calibration.values_
    slopes = [np.diff(y[a:b]) / np.diff(x[a:b])
              for a, b in zip(ptr[:-1], ptr[1:], strict=True) if b - a > 1]
    return float(max((s.max() for s in slopes), default=0.0))
