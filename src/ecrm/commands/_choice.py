"""How ``ecrm fit`` reports its choices: each weight family's honest criterion and cost,
the preprocessing and why, and the checks of the chosen model in the command's words (the
features' scales against the trivial baselines, the grid's edges)."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Fit", "check_scales", "criterion_text", "families_line", "grid_note",
           "preprocessing_note", "say", "scales"]

#: How each weight family is judged honestly.
_HONEST = {"kernel": "exact leave-one-out", "forest": "out-of-bag",
           "mixed": "mixed leave-one-out and out-of-bag"}


class Fit(NamedTuple):
    """One fit of :func:`_fit`: a family on one preprocessing candidate (the mixture: its
    choice of the share, ``honest`` its rows and honest predictions)."""

    family: str
    step: object
    model: Any
    seconds: float
    honest: Any = None


def criterion_text(args, score: float) -> str:
    """An honest score in words: the loss (lower is better) or the metric."""
    return (f"{args.loss} loss {-score:.4f}" if args.scoring == "loss"
            else f"{args.scoring} {score:.4f}")


def families_line(args, data, chosen: str, fits: list) -> str:
    """What each family's honest criterion was and what its fits cost (the mixture: its
    kernel share, and the time of its choice, nothing refitted), and which was chosen;
    whether the difference between the chosen and the best other family is within noise
    (two standard errors of the per-row differences of the honest losses, where both give
    them)."""
    best: dict[str, Fit] = {}
    seconds: dict[str, float] = {}
    for fit in fits:
        seconds[fit.family] = seconds.get(fit.family, 0.0) + fit.seconds
        if (fit.family not in best
                or fit.model.honest_score_ > best[fit.family].model.honest_score_):
            best[fit.family] = fit
    parts = [f"{family}{_share(fit.model)}: {_HONEST.get(family, 'honest')} "
             f"{criterion_text(args, fit.model.honest_score_)} in {_duration(seconds[family])}"
             + (", no refit" if family == "mixed" else "")
             for family, fit in best.items()]
    line = f"weights: {'; '.join(parts)}; chose {chosen}"
    others = [fit for family, fit in best.items() if family not in (chosen, "mixed")]
    pair = ([best[chosen], max(others, key=lambda fit: fit.model.honest_score_)]
            if chosen in best and others else list(best.values()))
    noise = _noise(args, data, pair)
    if noise is not None:
        gap, error = noise
        line += (f" (the difference, {gap:.4f}, is within noise: two standard errors of the "
                 f"per-row differences are {2 * error:.4f})" if gap <= 2 * error else
                 f" (the difference, {gap:.4f}, is more than two standard errors, "
                 f"{2 * error:.4f})")
    return line


def _share(model) -> str:
    """The kernel's share of a mixture, in words (nothing for a pure family)."""
    share = getattr(model, "mixture_", None)
    return "" if share is None else f" (kernel share {share:g})"


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _honest_rows(fit: Fit):
    """The rows and predictions of a fit's honest criterion: exact leave-one-out (a kernel
    search), out of bag (a forest), the mixture's as its choice gave them
    (:class:`ecrm.weights.mixture.MixingChoice`); ``None`` for others."""
    import numpy as np

    model = fit.model
    if fit.honest is not None:
        return fit.honest
    if getattr(model, "loo_predictions_", None) is not None:
        return np.asarray(model.loo_rows_), model.loo_predictions_
    if getattr(model, "oob_predictions_", None) is not None:
        return np.arange(len(model.oob_predictions_)), model.oob_predictions_
    return None


def _noise(args, data, fits: list):
    """``(gap, standard error)`` of the mean per-row difference of two fits' honest losses
    on the rows both judge, or ``None`` (not two fits, or a metric criterion)."""
    import numpy as np

    if len(fits) != 2 or args.scoring != "loss":
        return None
    models = [fit.model for fit in fits]
    honest = [_honest_rows(fit) for fit in fits]
    if any(h is None for h in honest):
        return None
    common = np.intersect1d(honest[0][0], honest[1][0])
    losses = []
    for model, (rows, predictions) in zip(models, honest, strict=True):
        P = np.asarray(predictions)[np.searchsorted(rows, common)]
        losses.append(np.asarray(model.loss(P, np.asarray(data.Y)[common]),
                                 dtype=float).reshape(-1))
    d = losses[0] - losses[1]
    d = d[np.isfinite(d)]  # out of bag: a point every tree drew has no prediction
    if d.size < 2:
        return None
    return abs(float(d.mean())), float(d.std(ddof=1) / np.sqrt(d.size))


def say(line: str) -> None:
    """A line on standard error that a progress bar there does not write over."""
    import sys

    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stderr)


def scales(step) -> bool:
    """Whether a preprocessing candidate standardises the features."""
    return step is not None and getattr(step, "scale", "none") != "none"


def check_scales(args, data, model, step, X, steps: list) -> bool:
    """Warn when a kernel model on features that were not standardised does no better than
    its trivial baselines and standardised features would do better
    (:func:`ecrm.estimators._validation.honest_scale_check`); whether it warned. Nothing to check
    when the leave-one-out choice saw the standardised features too, or for trees."""
    from ecrm.estimators._validation import honest_scale_check
    from ecrm.weights.kernel.estimator import ECRM, ECRMCV

    if (not isinstance(model, (ECRM, ECRMCV)) or scales(step) or any(map(scales, steps))
            or args.scheduler is not None):
        return False
    names = list(data.feature_names) if step is None and data.feature_names is not None \
        else None
    how = ("--standardize yes" + (", or --standardize auto to choose by leave-one-out"
                                  if args.cv else ", or --cv to choose by leave-one-out"))
    result = honest_scale_check(model, X, data.Y, names=names, how=how, loss_name=args.loss)
    return bool(result and result["warned"])


def grid_note(message: str, scales_warned: bool) -> str:
    """A :class:`~ecrm.exceptions.GridEdgeWarning` in the command's words: the flags that
    widen the grid (``--alphas``, ``--gammas``, ``--extend-grid``), or, beside a warning on
    the features' scales, that those come first (a grid edge there says little)."""
    import re

    text = message.removeprefix("ECRMCV: ")

    def flags(match) -> str:
        if scales_warned:
            return "; standardise the features first (see the warning on their scales)"
        option = "--alphas" if "alpha=" in text.split(";")[0] else "--gammas"
        return f"; add {match.group(1)} values to {option}, or give --extend-grid"

    return re.sub(r"; add (larger|smaller) values$", flags, text)


def preprocessing_note(args, family: str, fits: list) -> str:
    """Why the preprocessing is what it is (after its description): chosen between the
    features as they are and standardised by the chosen family's honest criterion (each
    one's given), a forest's (trees need no scaling), or the mixture's (its kernel reads the
    forest's features; the kernel alone's criteria given); nothing when it is as asked."""
    trees = "a forest's splits do not depend on the features' scales"
    if family == "forest":
        return f"; {trees}"
    shared = family == "mixed" and any(fit.family == "kernel" for fit in fits)  # auto's
    judged = [fit for fit in fits if fit.family == ("kernel" if shared else family)]
    if len(judged) < 2:
        return ""
    scores = " against ".join(f"{criterion_text(args, fit.model.honest_score_)} "
                              f"{'standardised' if scales(fit.step) else 'as they are'}"
                              for fit in judged)
    if not shared:
        return f"; chosen by {_HONEST.get(family, 'honest')} ({scores})"
    return (f"; the forest's features, which the mixture's kernel reads too ({trees}; the "
            f"kernel alone: {scores})")
