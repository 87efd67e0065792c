"""Reading ``ecrm fit``'s training files: one file or several of the same columns, label
sets (in row chunks on a Dask cluster with ``--scheduler``), rankings or classes
(:mod:`ecrm.commands._task_files`), each file checked on its own so that an error names its file
and line.
"""

from __future__ import annotations

__all__ = ["read_training", "remember_reading_options", "store_reading_options"]

#: The reading options a model file stores (``reading_options_``) and their defaults:
#: ``ecrm predict`` and ``ecrm evaluate`` read their files as ``ecrm fit`` read its own
#: unless a flag says otherwise.
READING_DEFAULTS = {"delimiter": None, "label_column": "labels", "label_sep": ";",
                    "path_sep": None}


def store_reading_options(model, args) -> None:
    """Set ``model.reading_options_`` to the reading options of ``args`` that are not the
    defaults (``--delimiter``, ``--label-column``, ``--label-sep``, ``--path-sep``; the
    level columns are ``level_columns_``, and an ``--id-column`` is never stored)."""
    options = {key: getattr(args, key) for key, default in READING_DEFAULTS.items()
               if getattr(args, key, None) not in (default, None)}
    if options:
        model.reading_options_ = options


def remember_reading_options(args, model) -> dict:
    """Fill the reading options ``args`` leaves unset (``None``) with those ``model`` (an
    estimator or a pipeline) was fitted with, else the defaults; return those taken from
    the model (also ``args.remembered``)."""
    from ecrm.commands import estimator_of

    stored = getattr(estimator_of(model), "reading_options_", None) or {}
    taken = {}
    for key, default in READING_DEFAULTS.items():
        if getattr(args, key, None) is None:
            if key in stored:
                taken[key] = stored[key]
            setattr(args, key, stored.get(key, default))
    args.remembered = taken
    return taken


def read_training(args, stack):
    """The training rows of every TRAIN file and whether missing features are imputed:
    ``(data, impute)``, ``data`` a Bunch with ``X``, ``Y``, ``space`` (the output space:
    for label sets the file's hierarchy, also ``hierarchy``), ``feature_names``,
    ``filename``. A Dask client opened for ``--scheduler`` is closed by ``stack``."""
    from ecrm.commands import _task_files
    from ecrm.datasets.formats import load_hierarchy
    from ecrm.tasks import LABEL_SETS, TASKS

    if TASKS[args.task].labels != LABEL_SETS:  # rankings, classes
        impute = _imputes(args)
        return _task_files.read_training(args, impute), impute
    hierarchy = None if args.hierarchy is None else load_hierarchy(args.hierarchy)
    if args.scheduler is not None:
        stack.callback(_connect(args).close)
        data, impute = _load_dask(args, hierarchy), False
    else:
        impute = _imputes(args)
        data = _read_training(args, hierarchy, impute)
    data.space = data.hierarchy
    return data, impute


#: A sparse file may have this many feature columns, or ten per non-zero value, whichever is
#: more. X stays sparse, but a fit keeps a few arrays as long as the number of columns
#: (about 4 bytes per column: 0.4 GiB at this limit).
MAX_EMPTY_COLUMNS = 100_000_000


def _check_sparse_width(data) -> None:
    """Refuse a sparse file whose largest feature index is far above its non-zeros."""
    import numpy as np
    import scipy.sparse as sp

    from ecrm.datasets.formats import DataFileError

    X = data.X
    if not sp.issparse(X) or X.shape[1] <= max(MAX_EMPTY_COLUMNS, 10 * X.nnz):
        return
    X = sp.csr_matrix(X)
    k = int(np.flatnonzero(X.indices == X.indices.max())[0]) if X.nnz else 0
    r = int(np.searchsorted(X.indptr, k, side="right") - 1)
    lines = data.get("row_lines")
    raise DataFileError(data.filename, int(lines[r]) if lines is not None else None,
                        f"the largest feature index makes {X.shape[1]:,} feature columns "
                        f"for {X.nnz:,} non-zero values (at most "
                        f"{max(MAX_EMPTY_COLUMNS, 10 * X.nnz):,} here: a fit keeps arrays as "
                        "long as the number of columns); number the features compactly")


def _connect(args):
    """A :class:`distributed.Client` of the scheduler at ``--scheduler`` (``local``: of a
    :class:`distributed.LocalCluster` it starts), made the default for the fit's Dask
    computations."""
    try:
        from distributed import Client
    except ImportError:
        raise ValueError("--scheduler needs Dask's distributed scheduler: pip install "
                         "'dask[distributed]'") from None
    if args.scheduler == "local":  # one single-thread worker process per core
        from distributed import LocalCluster

        return Client(LocalCluster(threads_per_worker=1, dashboard_address=None),
                      set_as_default=True)
    try:
        return Client(args.scheduler, timeout="20s", set_as_default=True)
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"--scheduler {args.scheduler}: cannot connect: {exc}") from None


def _load_dask(args, hierarchy):
    """The training CSV/TSV read by Dask's own reader, in row chunks on the cluster."""
    from ecrm.datasets.formats import _check_path, _format_of, csv_sep, load_csv_dask

    fmt = _format_of(_check_path(args.train[0])) if args.format == "auto" else args.format
    other = (f"{fmt} files" if fmt not in ("csv", "tsv") else "--level-columns"
             if args.level_columns is not None else "--id-column" if args.id_column else None)
    if other is not None:
        raise ValueError(f"--scheduler reads CSV/TSV files with a label column (not {other})")
    return load_csv_dask(args.train[0], label_column=args.label_column,
                         sep=csv_sep(fmt, args.delimiter), label_sep=args.label_sep,
                         path_sep=args.path_sep, hierarchy=hierarchy)


def _read_training(args, hierarchy, impute: bool):
    """The rows of every TRAIN file, in order (the Clus protocol trains on train + valid)."""
    from ecrm.datasets.formats import check_finite_features, load_data

    parts = []
    for path in args.train:
        data = load_data(path, format=args.format, hierarchy=hierarchy,
                         label_column=args.label_column, label_sep=args.label_sep,
                         path_sep=args.path_sep, level_columns=args.level_columns,
                         compact_labels=True, sep=args.delimiter, id_column=args.id_column)
        check_finite_features(data, allow_missing=impute)
        _check_sparse_width(data)
        parts.append(data)
    return parts[0] if len(parts) == 1 else _concatenate(parts)


def _concatenate(parts):
    """One training set from several files of the same columns: their rows stacked.

    The files must agree on the features (count, names, nominal categories). Their label
    hierarchies must be the same when a file declares one (Clus ARFF); labels read from the
    rows (CSV/TSV, svmlight) are united, each file's columns placed by label name.
    """
    import numpy as np
    import scipy.sparse as sp
    from sklearn.utils import Bunch

    from ecrm.spaces.hierarchy import Hierarchy

    first = parts[0]
    # svmlight files name features by index and omit zeros: files of one feature space
    # differ in their largest index, so their columns are united
    svmlight = all(d.feature_names is None and sp.issparse(d.X) for d in parts)
    for data in parts[1:]:
        pair = f"{first.filename} and {data.filename}"
        if data.X.shape[1] != first.X.shape[1] and not svmlight:
            raise ValueError(f"{pair} have different numbers of features "
                             f"({first.X.shape[1]} and {data.X.shape[1]})")
        if (data.feature_names is None) != (first.feature_names is None):
            raise ValueError(f"{pair} are not of the same format")
        if first.feature_names is not None and tuple(data.feature_names) != tuple(
                first.feature_names):
            differ = next(f"{a!r} and {b!r}" for a, b in zip(
                first.feature_names, data.feature_names, strict=True) if a != b)
            raise ValueError(f"{pair} have different feature columns (first difference: "
                             f"{differ})")
        if data.get("categories") != first.get("categories"):
            raise ValueError(f"{pair} declare different categories for their nominal "
                             f"attributes")
        if "categories" in data and data.hierarchy != first.hierarchy:
            raise ValueError(f"{pair} declare different label hierarchies")
    dense = [d.Y.toarray() if sp.issparse(d.Y) else d.Y for d in parts]
    if all(d.hierarchy == first.hierarchy for d in parts):
        hierarchy, Y = first.hierarchy, np.vstack(dense)
    else:  # the union of the labels, each file's columns placed by name
        hierarchy = Hierarchy(
            list(dict.fromkeys((d.hierarchy.labels[a], d.hierarchy.labels[b])
                               for d in parts for a, b in d.hierarchy.edges)),
            labels=list(dict.fromkeys(lab for d in parts for lab in d.hierarchy.labels)))
        Y = np.zeros((sum(len(y) for y in dense), hierarchy.n_labels), dtype=first.Y.dtype)
        start = 0
        for data, y in zip(parts, dense, strict=True):
            Y[start:start + len(y), [hierarchy.index[lab] for lab in data.hierarchy.labels]] = y
            start += len(y)
    if svmlight:
        width = max(d.X.shape[1] for d in parts)
        X = sp.vstack([sp.csr_matrix((d.X.data, d.X.indices, d.X.indptr),
                                     shape=(d.X.shape[0], width)) for d in parts], format="csr")
    else:
        X = (sp.vstack([d.X for d in parts], format="csr")
             if any(sp.issparse(d.X) for d in parts) else np.vstack([d.X for d in parts]))
    return Bunch(X=X, Y=Y, hierarchy=hierarchy, feature_names=first.feature_names,
                 categories=first.get("categories"),
                 filename=" + ".join(d.filename for d in parts))


def _imputes(args) -> bool:
    """``--impute`` as given, else on for ARFF files (whose format declares missing values)."""
    if args.impute is not None:
        return args.impute
    name = args.train[0].lower()
    return args.format == "arff" or (args.format == "auto" and name.endswith((".arff",
                                                                              ".arff.gz")))
