"""The ``ecrm`` commands for your own data: ``fit``, ``predict``, ``evaluate`` and ``info``.

Each module defines ``add_parser(subparsers)`` (registered in :data:`ecrm.cli.COMMANDS`).
Options are checked at parse time (argparse ``type=`` functions from
:mod:`ecrm.commands._options`); data files are read and checked before any fitting; errors go to
standard error with exit status 2. The helpers below are shared by the four commands.
"""

from __future__ import annotations

import sys

from ecrm.commands._options import add_data_options, existing_file_option

__all__ = ["add_data_options", "existing_file_option", "fail", "load_for_model", "row_labels"]


def fail(message: str) -> int:
    """Print ``ecrm: error: message`` on standard error; return the exit status 2."""
    print(f"ecrm: error: {message}", file=sys.stderr)
    return 2


def load_for_model(model, args, *, require_labels: bool):
    """Read ``args.data`` in the columns of ``model``: its hierarchy and its feature names.

    With ``require_labels=False`` (predictions) a label column, if any, is not read: labels
    never seen in training do not matter. Missing or infinite features are refused, naming
    the file, line and column.
    """
    import numpy as np

    from ecrm.datasets.formats import check_finite_features, load_data
    from ecrm.spaces.hierarchy import Hierarchy

    space = model.output_space
    data = load_data(args.data, format=args.format,
                     hierarchy=space if isinstance(space, Hierarchy) else None,
                     label_column=args.label_column, label_sep=args.label_sep,
                     path_sep=args.path_sep, require_labels=require_labels,
                     ignore_labels=not require_labels,
                     n_features=getattr(model, "n_features_in_", None))
    check_finite_features(data)
    names = getattr(model, "feature_columns_", None)  # set by ecrm fit
    if names is not None and data.feature_names is not None and not data.filename.endswith(
            (".svm", ".svmlight", ".libsvm")):
        given = list(data.feature_names)
        missing = [n for n in names if n not in given]
        if missing:
            raise ValueError(f"{args.data}: missing the feature columns {missing} the model was "
                             "fitted on")
        data.X = data.X[:, [given.index(n) for n in names]]  # reorder by name
    if data.X.shape[1] != model.n_features_in_:
        raise ValueError(f"{args.data}: {data.X.shape[1]} features, but the model was fitted "
                         f"on {model.n_features_in_}")
    data.X = np.asarray(data.X) if not hasattr(data.X, "tocsr") else data.X
    return data


def row_labels(model, Y) -> list[list]:
    """The label names switched on in each row of a 0/1 prediction ``Y``."""
    import numpy as np

    names = model.label_names_
    return [[names[j] for j in np.flatnonzero(row > 0.5)] for row in np.asarray(Y)]
