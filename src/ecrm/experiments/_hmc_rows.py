"""The rows of ``ecrm reproduce hmc``'s table: one fitted model's test losses, micro AU(PRC)s,
times and chosen parameters, in the order the JSON holds them."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["TableRows", "timed"]


def timed(fn):
    """``fn()`` and the wall seconds it took."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


class TableRows:
    """The rows of Table 1 of one data set, each scored on its test part.

    Parameters
    ----------
    name : str
        The data set.
    hierarchy : ecrm.Hierarchy
    Yte : ndarray of shape (n, d)
        The test label sets.
    losses : dict
        Task losses by row key (``"hamming"``, ``"hierarchical"``).
    exclude : tuple of str
        Labels the first micro AU(PRC) leaves out (``"auprc"``; ``"auprc_all"`` keeps all).
    """

    def __init__(self, name, hierarchy, Yte, losses, exclude):
        self.name, self.hierarchy, self.Yte = name, hierarchy, Yte
        self.losses, self.exclude = losses, exclude

    def scores(self, P, S) -> dict:
        """The mean test loss of the predictions ``P`` per loss, and the micro AU(PRC) of the
        label scores ``S``."""
        from ecrm.reporting.metrics import micro_auprc

        row = {key: float(np.mean(loss(P, self.Yte))) for key, loss in self.losses.items()}
        row["auprc"] = micro_auprc(self.Yte, S, labels=self.hierarchy.labels,
                                   exclude=self.exclude)
        row["auprc_all"] = micro_auprc(self.Yte, S)
        return row

    def row(self, method, protocol, trained_for, P, S, *, fit_seconds, predict_seconds,
            params) -> dict:
        """One model's row (``predict_seconds``: for the whole test part)."""
        return {"dataset": self.name, "method": method, "protocol": protocol,
                "trained_for": trained_for, **self.scores(P, S), "fit_seconds": fit_seconds,
                "predict_seconds_per_instance": predict_seconds / len(self.Yte),
                "params": params}
