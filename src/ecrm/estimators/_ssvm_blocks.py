"""The structured SVM's dual blocks: one example's distribution over its cached outputs."""

from __future__ import annotations

import numpy as np

__all__ = ["DualBlock"]


def _compact(embeddings: np.ndarray) -> np.ndarray:
    """``embeddings`` as int8 when that is exact (0/1 or small integer embeddings): the caches
    of a few thousand examples x 16 outputs x thousands of coordinates then fit in memory."""
    small = embeddings.astype(np.int8)
    return small if np.array_equal(small, embeddings) else embeddings


class DualBlock:
    """One example's dual distribution over its cached outputs: their embeddings (the outputs
    themselves are never needed), losses and weights (0 for a cached output not active)."""

    def __init__(self, embeddings, losses, weights):
        self.embeddings, self.losses, self.weights = embeddings, losses, weights

    @classmethod
    def own(cls, embedding, loss: float) -> DualBlock:
        # the training output itself (its loss ~ 0)
        return cls(_compact(embedding[None]), np.array([loss]), np.ones(1))

    def copy(self) -> DualBlock:
        return DualBlock(self.embeddings.copy(), self.losses.copy(), self.weights.copy())

    def index(self, embedding, loss: float) -> int:
        """Where the output of ``embedding`` is cached, added with weight 0 if it is new."""
        same = np.flatnonzero((self.embeddings == embedding).all(axis=1))
        if same.size:
            return int(same[0])
        # vstack keeps int8 only if the new row is int8-exact too (else all go float)
        self.embeddings = np.vstack([self.embeddings, _compact(embedding[None])])
        self.losses = np.append(self.losses, loss)
        self.weights = np.append(self.weights, 0.0)
        return len(self.weights) - 1

    def move(self, away: int, k: int, delta: float, keep: bool) -> None:
        """Move ``delta`` of the weight from output ``away`` to output ``k``; an emptied
        ``away`` stays cached with weight 0 if ``keep``, else it leaves (a drop step)."""
        self.weights[k] += delta
        self.weights[away] -= delta
        if self.weights[away] <= 0:
            self.weights[away] = 0.0
            if not keep:
                self._keep(np.arange(len(self.weights)) != away)

    def trim(self, h, size: int) -> None:
        """Keep at most ``size`` outputs: drop the inactive ones of lowest value ``h``."""
        extra = len(self.weights) - size
        if extra > 0:
            idle = np.flatnonzero(self.weights <= 0)
            keep = np.ones(len(self.weights), dtype=bool)
            keep[idle[np.argsort(h[idle], kind="stable")[:extra]]] = False
            self._keep(keep)

    def _keep(self, mask) -> None:
        self.embeddings, self.losses = self.embeddings[mask], self.losses[mask]
        self.weights = self.weights[mask]
