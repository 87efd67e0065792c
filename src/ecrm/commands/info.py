"""``ecrm info``: what a model file holds.

The task (``multilabel``, ``ranking``, ``multiclass``, or one registered in
:data:`ecrm.tasks.TASKS`: from the output space), the preprocessing steps stored with the
estimator; the estimator, loss and output space, the
kernel, the regularisation (a structured SVM's ``C``, passes and duality gap) and intercept,
the solver (with its Nystrom centres), the selection (criterion, calibration) of an
``ECRMCV``, the sizes, and the labels (a ranking's labels, a classifier's classes): all of them in
``--json``; in the text, the first 20 followed by "... (N in all)" when there are more
(``--all-labels`` prints every one).
"""

from __future__ import annotations

import json
import os
import sys

from ecrm.commands import _tasks, existing_file_option, fail, print_out, printable
from ecrm.tasks import CLASS, RANKING, TASKS, task_of_space

__all__ = ["add_parser", "run", "summary"]


def summary(path: str, loaded=None) -> dict:
    """A JSON-able summary of the model file at ``path`` (``loaded``: its model, if read)."""
    from ecrm.commands import describe_step, estimator_of, label_names, preprocessing_of
    from ecrm.model_files.io import load, read_metadata

    meta = read_metadata(path)
    loaded = load(path) if loaded is None else loaded
    model = estimator_of(loaded)
    space = model.output_space
    try:  # the library's table knows the task of every registered output space
        task = task_of_space(space).name
    except ValueError:  # an output space no task declares (e.g. flows)
        task = "other"
    out = {"file": path, "bytes": os.path.getsize(path), "format_version": meta["format_version"],
           "ecrm_version": meta["ecrm_version"], "task": task,
           "estimator": type(model).__name__,
           "preprocessing": [{"step": type(step).__name__, "what": describe_step(step),
                              "n_features_in": int(step.n_features_in_)}
                             for step in preprocessing_of(loaded)],
           "loss": type(model.loss).__name__, "output_space": type(space).__name__,
           "n_outputs": space.n_outputs, **_weights(model),
           "n_train": int(getattr(model, "_n_fit", None) or model.X_fit_.shape[0]),
           "n_features": int(model.n_features_in_)}
    if hasattr(model, "alpha_"):  # chosen by leave-one-out
        from ecrm.weights.kernel.estimator import ECRMCV

        scoring = model.search_settings().scoring if isinstance(model, ECRMCV) else \
            model.scoring
        out["selection"] = {"scoring": scoring if isinstance(scoring, str)
                            else "callable", "best_score": float(model.best_score_),
                            "n_candidates": len(model.cv_results_["params"]),
                            "calibration": model.calibration_ or "none"}
    if getattr(model, "level_columns_", None) is not None:  # what predict reads unasked
        out["level_columns"] = list(model.level_columns_)
    if getattr(model, "reading_options_", None):  # how fit read its file; predict's defaults
        out["read_with"] = dict(model.reading_options_)
    if hasattr(space, "edges"):
        out.update(n_edges=int(len(space.edges)), is_tree=bool(space.is_tree))
    # a ranking's labels, a classifier's classes; else the output coordinates' names
    layout = TASKS[task].labels if task in TASKS else None
    names = (_tasks.outputs_of(model).names if layout in (RANKING, CLASS)
             else label_names(model))
    out.update(n_labels=len(names), labels=[str(v) for v in names])
    return out


def _weights(model) -> dict:
    """The family of risk weights and its settings (:func:`ecrm.weights.families.describe`)."""
    from ecrm.weights.families import describe

    return describe(model)


def run(args) -> int:
    """Run ``ecrm info`` from parsed arguments."""
    if sys.stdout is None:  # closed: print_out says so, before the model is read
        return print_out("")
    try:
        info = summary(args.model)
    except ValueError as exc:
        return fail(str(exc))
    if args.json:
        return print_out(json.dumps(info, indent=2) + "\n")
    labels = info.pop("labels")
    steps = info.pop("preprocessing", [])
    if "read_with" in info:  # as the options of ecrm fit that read the file
        info["read_with"] = " ".join(f"--{k.replace('_', '-')} {v}"
                                     for k, v in info["read_with"].items())
    for key in ("members", "stacked"):  # a mixture's or a stack's families in words
        if key in info:
            from ecrm.reporting.report import weights_line

            info[key] = weights_line(info)
    # one column of keys, as wide as the longest, then two spaces: a key never runs into
    # its value (min_samples_split)
    width = max(len(key) for key in [*info, "preprocessing", "labels"]) + 2
    lines = [f"{key:<{width}}{printable(value)}"  # values from the file: escaped
             for key, value in info.items()]
    lines += [f"{'preprocessing' if i == 0 else '':<{width}}"
              f"{'none' if step is None else printable(step['step'] + ': ' + step['what'])}"
              for i, step in enumerate(steps or [None])]
    shown = labels if args.all_labels else labels[:_SHOWN]
    more = "" if len(shown) == len(labels) else f", ... ({len(labels)} in all)"
    lines.append(f"{'labels':<{width}}{', '.join(map(printable, shown))}{more}")
    return print_out("\n".join(lines) + "\n")


#: Labels printed by the text output without ``--all-labels``.
_SHOWN = 20


def add_parser(subparsers) -> None:
    """Add the ``info`` sub-command."""
    p = subparsers.add_parser("info", help="describe a model file", description=__doc__)
    p.add_argument("model", type=existing_file_option("MODEL"), metavar="MODEL")
    p.add_argument("--json", action="store_true", help="print JSON (every label)")
    p.add_argument("--all-labels", action="store_true",
                   help="print every label (the text shows the first 20 and the count)")
    p.set_defaults(func=run)
