"""The ``ecrm`` commands for your own data: ``fit``, ``predict``, ``evaluate`` and ``info``.

Each module defines ``add_parser(subparsers)`` (registered in :data:`ecrm.cli.COMMANDS`).
Options are checked at parse time (argparse ``type=`` functions from
:mod:`ecrm.commands._options`); data files are read and checked before any fitting; errors go to
standard error with exit status 2. The helpers below are shared by the four commands.
"""

from __future__ import annotations

import sys

from ecrm.commands._options import add_data_options, existing_file_option, in_flags

__all__ = ["add_data_options", "describe_step", "estimator_of", "existing_file_option", "fail",
           "hierarchy_of", "iter_for_model", "label_names", "level_columns_of", "load_for_model",
           "preprocessing_of", "print_out", "printable", "row_labels", "scores_note",
           "warn_id_like"]


def printable(value) -> str:
    """``str(value)`` with every non-printable character escaped (``\\x1b``, ``\\n``): label
    names and versions come from model files, and a terminal must not obey their escape
    sequences."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def fail(message: str) -> int:
    """Print ``ecrm: error: message`` on standard error (the data readers' parameters named
    as the flags, :func:`~ecrm.commands._options.in_flags`); return the exit status 2."""
    print(f"ecrm: error: {in_flags(message)}", file=sys.stderr)
    return 2


def print_out(text: str) -> int:
    """Write ``text`` on standard output; 0, or :func:`fail`'s 2 when it is closed (``>&-``)
    or refuses the text (a full disk); ``BrokenPipeError`` (``| head``) is raised."""
    if sys.stdout is None:
        return fail("standard output is closed: nothing can be printed")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        return fail(f"cannot write to standard output: {exc.strerror or exc}")
    return 0


def estimator_of(model):
    """The estimator of a model file's model: itself, or a pipeline's last step."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


def label_names(model) -> list:
    """The names of a model's output coordinates: its ``label_names_`` (ECRM's estimators),
    else its output space's names (a :class:`ecrm.StructuredSVM` stores none of its own)."""
    names = getattr(model, "label_names_", None)
    return list(model.output_space.output_names if names is None else names)


def scores_note(model) -> str | None:
    """Why ``model`` gives no label scores, or ``None`` when it has ``predict_scores``."""
    if hasattr(model, "predict_scores"):
        return None
    return (f"label scores are not available for a {type(model).__name__} model (it "
            "predicts label sets, not the label marginals)")


def preprocessing_of(model) -> list:
    """The preprocessing steps of a model file's model (none for a bare estimator)."""
    return [step for _, step in model.steps[:-1]] if hasattr(model, "steps") else []


def describe_step(step) -> str:
    """One line on a preprocessing step (``None``: the features as they are)."""
    if step is None:
        return "none (the features as they are)"
    name = type(step).__name__
    if name != "HMCPreprocessor":
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in step.get_params().items())})"
    nominal = sum(c is not None for c in step.categories or ())
    what = {"numeric": "standardise the numeric columns", "all": "standardise every column",
            "none": "no scaling"}[step.scale]
    return (what + ("; mean-impute missing values" if step.impute else "")
            + (f"; one-hot {nominal} nominal columns" if nominal else "")
            + f" ({step.n_features_in_} -> {step.n_features_out_} columns)")


def load_for_model(model, args, *, require_labels: bool, own_labels: bool = False):
    """Read ``args.data`` in the columns of ``model`` (an estimator, or a pipeline of
    preprocessing steps before one): its hierarchy and its feature names; the features are
    returned preprocessed, ready for the estimator.

    With ``require_labels=False`` (predictions) a label column, if any, is not read: labels never
    seen in training do not matter. ``own_labels``: the file's labels are read as it gives them, not
    in the model's hierarchy. Infinite features are refused, naming the file, line and column, and
    missing ones too unless the model imputes them.
    """
    from ecrm.datasets.formats import load_data

    space = estimator_of(model).output_space
    data = load_data(args.data, format=args.format,
                     hierarchy=None if own_labels else hierarchy_of(space),
                     label_column=args.label_column, label_sep=args.label_sep,
                     path_sep=args.path_sep, level_columns=level_columns_of(model, args),
                     require_labels=require_labels, ignore_labels=not require_labels,
                     n_features=getattr(_first_step(model), "n_features_in_", None),
                     sep=args.delimiter, id_column=args.id_column)
    return _ready_for(model, data, args.data)


def hierarchy_of(space):
    """The hierarchy a label-set model reads a file's labels with: its output space when that
    has a structure (edges: a :class:`~ecrm.Hierarchy`), else ``None`` (the file's labels)."""
    return space if getattr(space, "edges", None) is not None else None


def warn_id_like(args, feature_names) -> None:
    """Warn about feature columns named like a row ID (``doc_id``) without ``--id-column``:
    they are used as features, never dropped on a guess from their name."""
    import warnings

    from ecrm.datasets._csv import looks_like_id

    if args.id_column is not None or feature_names is None:
        return
    named = [n for n in feature_names if looks_like_id(str(n))]
    if named:
        warnings.warn(f"the feature column{'s' if len(named) > 1 else ''} "
                      f"{', '.join(map(repr, named))} look{'' if len(named) > 1 else 's'} like "
                      f"a row ID but {'are' if len(named) > 1 else 'is'} used as a feature; "
                      f"to leave it out, give --id-column {named[0]}", UserWarning,
                      stacklevel=2)


def level_columns_of(model, args) -> list | None:
    """``--level-columns`` as given, else those the model was fitted with (``ecrm fit``
    stores them as ``level_columns_``): a file of the training layout needs no flag."""
    if args.level_columns is not None:
        return args.level_columns
    return getattr(estimator_of(model), "level_columns_", None)


def iter_for_model(model, args, *, chunk_rows: int | None = None):
    """:func:`load_for_model` without labels (for predictions), as a stream of its Bunches:
    a CSV/TSV file ``chunk_rows`` rows at a time (default
    :data:`ecrm.datasets.formats.CHUNK_ROWS`: memory bounded by a chunk), any other format
    whole."""
    from ecrm.datasets import _csv
    from ecrm.datasets.formats import _check_path, _format_of, csv_sep, iter_csv
    from ecrm.estimators._parameters import check_parameter

    check_parameter("format", args.format)
    fmt = _format_of(_check_path(args.data)) if args.format == "auto" else args.format
    if fmt not in ("csv", "tsv"):
        yield load_for_model(model, args, require_labels=False)
        return
    for chunk in iter_csv(args.data, sep=csv_sep(fmt, args.delimiter),
                          label_column=args.label_column,
                          level_columns=level_columns_of(model, args),
                          id_column=args.id_column, chunk_rows=chunk_rows or _csv.CHUNK_ROWS):
        yield _ready_for(model, chunk, args.data)


def _first_step(model):
    """The first step of a model file's model: its first preprocessing step, else itself."""
    steps = preprocessing_of(model)
    return steps[0] if steps else estimator_of(model)


def _ready_for(model, data, filename):
    """``data`` checked (finite features, unless the model imputes; the model's columns, by
    name) and preprocessed by the model's steps, ready for its estimator."""
    import numpy as np

    from ecrm.datasets.formats import check_finite_features

    steps, first = preprocessing_of(model), _first_step(model)
    # a missing value is refused unless the model imputes: fitted with --impute (its
    # HMCPreprocessor says so), or a pipeline with an imputer
    imputes = any(type(s).__name__ == "SimpleImputer" or (
        type(s).__name__ == "HMCPreprocessor" and s.impute) for s in steps)
    check_finite_features(data, allow_missing=imputes)
    # the columns the model was fitted on: those of the file ``ecrm fit`` read, else the
    # DataFrame's a model fitted in Python saw (a bare StructuredSVM or ECRM, a pipeline)
    names = next((getattr(first, a) for a in ("feature_columns_", "feature_names_in_")
                  if getattr(first, a, None) is not None), None)
    if names is not None and data.feature_names is not None and not data.filename.endswith(
            (".svm", ".svmlight", ".libsvm")):
        given = list(data.feature_names)
        missing = [n for n in names if n not in given]
        if missing:
            raise ValueError(f"{filename}: missing the feature columns {missing} the model "
                             "was fitted on")
        order = [given.index(n) for n in names]
        if order != list(range(len(given))):
            data.X = data.X[:, order]  # reorder by name
    if data.X.shape[1] != first.n_features_in_:
        raise ValueError(f"{filename}: {data.X.shape[1]} features, but the model was fitted "
                         f"on {first.n_features_in_}")
    data.X = np.asarray(data.X) if not hasattr(data.X, "tocsr") else data.X
    for step in steps:
        data.X = step.transform(data.X)
    return data


def row_labels(model, Y) -> list[list]:
    """The label names switched on in each row of a 0/1 prediction ``Y``."""
    import numpy as np

    names = label_names(model)
    return [[names[j] for j in np.flatnonzero(row > 0.5)] for row in np.asarray(Y)]
