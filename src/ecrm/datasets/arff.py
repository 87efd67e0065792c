r"""Reader for Clus hierarchical multi-label ARFF files (``.arff`` and ``.arff.gz``).

The Clus HMC data sets (Vens et al., 2008) are ARFF files with one extra attribute type,
``hierarchical``, that declares the label hierarchy in the header and holds each
instance's labels, separated by ``@``, in the data::

    @relation toy
    @attribute x1 numeric
    @attribute colour {red, green}
    @attribute class hierarchical a,a/b,a/c,d
    @data
    1.5,red,a/b@d
    ?,green,a/c

**Tree or DAG.** The declaration is a comma-separated list read in one of two styles:

* *tree paths* (FunCat, enron, imclef): each entry ``a/b/c`` declares the node ``a/b/c`` and
  its ancestors ``a`` and ``a/b``; labels are named by their full path (unique), top-level
  labels hang under a virtual root;
* *DAG edges* (Gene Ontology): each entry ``parent/child`` is one edge between node names,
  ``root`` the virtual root (not a label).

With ``hierarchy_type="auto"`` a declaration is read as DAG edges exactly when **every
entry has two components and at least one entry starts with** ``root/``, else as tree paths:
right for every Clus HMC file (tree files have one-component or deeper entries and no
top-level ``root``; GO files are all ``parent/child`` edges from ``root``).

**Features.** One float column per numeric or nominal attribute, in header order: numbers as
they are (``nan``, ``inf`` and overflowing numbers are errors), nominal values as their
*category code* (their position in the ``{...}`` declaration), missing values ``?`` as NaN.
One float matrix keeps ``X`` small and sparse-friendly; :class:`ecrm.datasets.HMCPreprocessor`
one-hot encodes, imputes and standardises. Sparse lines ``{index value, ...}`` give a CSR
``X`` (an omitted value is 0: a nominal attribute's first category, as in the ARFF
specification). ``string``, ``date`` and Clus ``key`` attributes are skipped and listed in
``ignored_attributes``; ``relational`` attributes are an error.

Errors in a file raise :class:`ArffError`, a ``ValueError`` whose message starts with
``"<file>, line <n>:"`` and says what was expected and what was found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ecrm.datasets._arff_data import parse_data
from ecrm.datasets._arff_header import DAG_ROOT, HierarchySpec, ParsedFile, parse_header
from ecrm.datasets._arff_text import ArffError, read_text
from ecrm.datasets._files import _data_dir
from ecrm.spaces.hierarchy import Hierarchy

__all__ = ["DATA_HELP", "SPLITS", "ArffError", "list_hmc", "load_hmc", "load_hmc_arff"]

HierarchyType = Literal["auto", "tree", "dag"]

#: Split names recognised in file names ``<name>.<split>.arff[.gz]``.
SPLITS = ("trainvalid", "train", "valid", "test")


DATA_HELP = (
    "The Clus hierarchical multi-label classification data sets (the KU Leuven / Clus HMC "
    "data collection of Vens et al., 'Decision trees for hierarchical multi-label "
    "classification', Machine Learning 73, 2008; also redistributed with the C-HMCNN code of "
    "Giunchiglia & Lukasiewicz, NeurIPS 2020, https://github.com/EGiunchiglia/C-HMCNN) are "
    "files named <name>.<split>.arff or <name>.<split>.arff.gz with <split> one of train, "
    "valid, test, trainvalid. Put them in one directory and point the environment variable "
    "ECRM_DATA (or the --data-dir option of the ecrm command) to it."
)


def _parse_file(path, hierarchy_type: str) -> ParsedFile:
    """Read, check and convert one file: its header and data, not yet labels."""
    path = Path(path)
    lines = read_text(path).split("\n")
    relation, attributes, class_index, spec, start = parse_header(path, lines, hierarchy_type)
    p = ParsedFile(path, relation, attributes, class_index, spec)
    parse_data(p, lines, start)
    return p


def _build_hierarchy(spec: HierarchySpec, path):
    try:
        return Hierarchy(spec.edges, root=spec.root, labels=spec.labels)
    except ValueError as e:
        raise ArffError(path, spec.lineno, f"invalid class hierarchy ({spec.kind}): {e}") from e


def _label_matrix(p: ParsedFile, hierarchy) -> np.ndarray:
    index = hierarchy.index
    rows: list[int] = []
    cols: list[int] = []
    dag = p.spec.kind == "dag"
    for r, s in enumerate(p.class_fields):
        if s in ("", "?"):
            continue
        for lab in s.split("@"):
            lab = lab.strip()
            if not lab or (dag and lab == DAG_ROOT):
                continue
            j = index.get(lab)
            if j is None:
                raise ArffError(p.path, int(p.row_lines[r]), f"unknown label {lab!r}: not "
                                "declared in the hierarchical attribute "
                                f"{p.attributes[p.class_index].name!r} (line {p.spec.lineno})")
            rows.append(r)
            cols.append(j)
    Y = sp.csr_matrix((np.ones(len(rows)), (np.asarray(rows, dtype=np.intp),
                                            np.asarray(cols, dtype=np.intp))),
                      shape=(p.n_rows, hierarchy.n_labels))
    Y.sum_duplicates()
    Y.data[:] = 1.0
    Yc = hierarchy.close(Y)
    if sp.issparse(Yc):
        Yc = Yc.toarray()
    return np.asarray(Yc, dtype=np.float64)


def _bunch(p: ParsedFile, hierarchy) -> Bunch:
    feats = p.features
    return Bunch(X=p.X, Y=_label_matrix(p, hierarchy), hierarchy=hierarchy,
                 feature_names=tuple(a.name for a in feats),
                 label_names=tuple(hierarchy.labels),
                 categories=tuple(a.categories for a in feats),
                 nominal=np.array([a.kind == "nominal" for a in feats], dtype=bool),
                 relation=p.relation, class_attribute=p.attributes[p.class_index].name,
                 hierarchy_type=p.spec.kind,
                 ignored_attributes=tuple(a.name for a in p.attributes if a.kind == "skip"),
                 filename=str(p.path), row_lines=np.asarray(p.row_lines))


def load_hmc_arff(path: str | os.PathLike, *, hierarchy_type: HierarchyType = "auto") -> Bunch:
    """Load one Clus hierarchical multi-label ARFF file.

    Parameters
    ----------
    path : str or path-like
        An ``.arff`` file, or a gzip-compressed one (detected from its content, so
        ``.arff.gz`` and any other name work).
    hierarchy_type : {"auto", "tree", "dag"}, default="auto"
        How to read the ``hierarchical`` declaration: tree paths ``a/b/c`` or DAG edges
        ``parent/child`` with virtual root ``root``. ``"auto"`` picks DAG exactly when every
        entry has two components and some entry starts with ``root/`` (see the module
        docstring).

    Returns
    -------
    data : sklearn.utils.Bunch
        With fields

        X : ndarray of shape (n, p), or CSR matrix for sparse ARFF
            Numeric values, category codes of nominal attributes, NaN for ``?``.
        Y : ndarray of shape (n, d)
            Float 0/1 labels, closed under ancestors (``hierarchy.close``).
        hierarchy : ecrm.spaces.hierarchy.Hierarchy
            The label hierarchy declared in the header (virtual root dropped).
        feature_names : tuple of str, length p
            The feature attributes' names.
        label_names : tuple of str, length d
            Equal to ``hierarchy.labels``: full paths ``"a/b/c"`` for trees, node names for
            DAGs, in order of first declaration.
        categories : tuple, length p
            ``None`` for a numeric column, the tuple of category names of a nominal one.
        nominal : bool ndarray of shape (p,)
            Which columns are nominal.
        relation, class_attribute, hierarchy_type, filename : str
            The ``@relation`` name, the name of the ``hierarchical`` attribute, ``"tree"``
            or ``"dag"``, and the file read.
        ignored_attributes : tuple of str
            Skipped ``string``/``date``/``key`` attributes.

    Raises
    ------
    ArffError
        (a ``ValueError``) naming the file and line: wrong number of values on a line, a
        bad or non-finite number, a value outside a nominal's set, an unknown label, an invalid
        hierarchy (cycle, self-loop, ...), no ``hierarchical`` attribute, no ``@data``.
    FileNotFoundError
        If ``path`` does not exist.

    Examples
    --------
    >>> import tempfile, os
    >>> text = '''@relation toy
    ... @attribute x numeric
    ... @attribute class hierarchical a,a/b,c
    ... @data
    ... 1.5,a/b
    ... ?,c
    ... '''
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = os.path.join(tmp, "toy.arff")
    ...     with open(f, "w") as fh:
    ...         _ = fh.write(text)
    ...     data = load_hmc_arff(f)
    >>> data.label_names
    ('a', 'a/b', 'c')
    >>> data.Y
    array([[1., 1., 0.],
           [0., 0., 1.]])
    >>> data.X
    array([[1.5],
           [nan]])
    """
    p = _parse_file(path, hierarchy_type)
    return _bunch(p, _build_hierarchy(p.spec, p.path))


# --------------------------------------------------------------------------- data sets
_FILE_RE = re.compile(r"^(?P<name>.+)\.(?P<split>trainvalid|train|valid|test)\.arff(?:\.gz)?$")


def _find_split(d: Path, name: str, split: str) -> Path | None:
    return next((f for f in (d / f"{name}.{split}.arff", d / f"{name}.{split}.arff.gz")
                 if f.is_file()), None)


def list_hmc(data_dir: str | os.PathLike | None = None) -> list[str]:
    """Names of the data sets in ``data_dir`` that :func:`load_hmc` can load.

    A data set ``<name>`` is listed when the directory holds ``<name>.test.arff[.gz]`` and
    ``<name>.trainvalid.arff[.gz]`` or ``<name>.train.arff[.gz]``.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Default: the environment variable ``ECRM_DATA``.

    Returns
    -------
    names : list of str, sorted
    """
    d = _data_dir(data_dir, "ECRM_DATA", "HMC", DATA_HELP)
    splits: dict[str, set[str]] = {}
    for f in d.iterdir():
        m = _FILE_RE.match(f.name)
        if m and f.is_file():
            splits.setdefault(m["name"], set()).add(m["split"])
    return sorted(n for n, s in splits.items() if "test" in s and ({"trainvalid", "train"} & s))


def _check_same(ref: ParsedFile, other: ParsedFile) -> None:
    if ref.spec.signature() != other.spec.signature():
        a, b = ref.spec, other.spec
        diff_l = sorted(set(a.labels) ^ set(b.labels))[:5]
        diff_e = sorted(set(a.edges) ^ set(b.edges))[:5]
        raise ValueError(f"the class hierarchies of {str(ref.path)!r} and {str(other.path)!r} "
                         f"differ ({a.kind}, {len(a.labels)} labels vs {b.kind}, "
                         f"{len(b.labels)} labels; labels in only one: {diff_l}; edges in only "
                         f"one: {diff_e}); expected every split of a data set to declare the "
                         "same hierarchy")
    fa, fb = ref.feature_signature(), other.feature_signature()
    if fa != fb:
        pairs = enumerate(zip(fa, fb, strict=False))
        k = next((i for i, (x, y) in pairs if x != y), min(len(fa), len(fb)))
        raise ValueError(f"the attributes of {str(ref.path)!r} ({len(fa)} features) and "
                         f"{str(other.path)!r} ({len(fb)} features) differ at feature {k}: "
                         f"{fa[k] if k < len(fa) else None} vs "
                         f"{fb[k] if k < len(fb) else None}; expected identical headers in "
                         "every split")


def _concat(parts: Sequence[ParsedFile]) -> ParsedFile:
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    Xs = [q.X for q in parts]
    X = sp.vstack(Xs, format="csr") if any(sp.issparse(x) for x in Xs) else np.vstack(Xs)
    out = ParsedFile(first.path, first.relation, first.attributes, first.class_index, first.spec)
    out.X = X
    out.n_rows = sum(q.n_rows for q in parts)
    out.row_lines = np.concatenate([q.row_lines for q in parts])
    out.class_fields = [s for q in parts for s in q.class_fields]
    return out


def load_hmc(name: str, data_dir: str | os.PathLike | None = None, *,
             hierarchy_type: HierarchyType = "auto") -> Bunch:
    """Load the train and test parts of a Clus HMC data set.

    The files are ``<data_dir>/<name>.<split>.arff`` or ``.arff.gz``. The training part is
    ``trainvalid`` when that file exists, else ``train`` followed by ``valid`` (when it
    exists); the test part is ``test``. No data set name is treated specially.

    Parameters
    ----------
    name : str
        Data set name, e.g. ``"spo_FUN"`` (see :func:`list_hmc`).
    data_dir : str or path-like, optional
        Directory holding the files. Default: the environment variable ``ECRM_DATA``.
    hierarchy_type : {"auto", "tree", "dag"}, default="auto"
        As in :func:`load_hmc_arff`.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``train`` and ``test`` (Bunches as returned by :func:`load_hmc_arff`, sharing one
        ``hierarchy`` object, so their ``Y`` columns agree), ``hierarchy``, ``label_names``,
        ``feature_names``, ``categories``, ``nominal``, ``name`` and ``files`` (the paths
        read, by part: ``{"train": [...], "test": [...]}``). When the training part is
        ``train`` + ``valid``, ``train.filename`` is the list of both paths.

    Raises
    ------
    FileNotFoundError
        When no directory is given or set in ``ECRM_DATA``, or the files are missing; the
        message lists the files looked for and where to get the data.
    ValueError
        When the splits declare different hierarchies or attributes, or a file is
        malformed (:class:`ArffError`).
    """
    d = _data_dir(data_dir, "ECRM_DATA", "HMC", DATA_HELP)
    found = {s: _find_split(d, name, s) for s in SPLITS}
    parts = ["trainvalid"] if found["trainvalid"] else ["train", "valid"] if found["train"] else []
    train_files = [f for f in (found[s] for s in parts) if f is not None]
    test_file = found["test"]
    if not train_files or test_file is None:
        wanted = (f"{name}.trainvalid.arff[.gz] (or {name}.train.arff[.gz] with optional "
                  f"{name}.valid.arff[.gz]) and {name}.test.arff[.gz]")
        try:
            avail = list_hmc(d)
        except OSError:
            avail = []
        raise FileNotFoundError(f"data set {name!r} not found in {str(d)!r}: looked for "
                                f"{wanted}. Data sets available there: {avail or 'none'}. "
                                + DATA_HELP)
    parsed_train = [_parse_file(f, hierarchy_type) for f in train_files]
    parsed_test = _parse_file(test_file, hierarchy_type)
    ref = parsed_train[0]
    for q in [*parsed_train[1:], parsed_test]:
        _check_same(ref, q)
    hierarchy = _build_hierarchy(ref.spec, ref.path)
    train = _bunch(_concat(parsed_train), hierarchy)
    train.filename = [str(f) for f in train_files] if len(train_files) > 1 else str(train_files[0])
    return Bunch(train=train, test=_bunch(parsed_test, hierarchy), hierarchy=hierarchy,
                 label_names=train.label_names, feature_names=train.feature_names,
                 categories=train.categories, nominal=train.nominal, name=name,
                 files={"train": [str(f) for f in train_files], "test": [str(test_file)]})
