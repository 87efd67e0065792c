"""Labels and classes of a test file that the model never saw in training
(``ecrm evaluate --unseen error|ignore``).

A model scores only the outputs it can predict. With ``--unseen error`` (the default) a test
file naming a label (or class, or ranked label) unseen in training is refused, naming the
first and counting them all, with a hint at ``--unseen ignore`` (and at ``--label-sep``
when the unseen names are known labels joined by another separator). With ``ignore``:

* label sets keep every row, without its unseen labels (the known ancestors of an unseen
  label path, ``science`` of ``science/chemistry``, stay);
* classes and rankings leave out the rows that name an unseen one.

What was left out is counted (:func:`describe`; ``unseen`` in the JSON), never dropped
silently.
"""

from __future__ import annotations

from collections import Counter

from ecrm.commands._outputs import location

__all__ = ["describe", "read_label_sets", "unseen_rows"]

#: Separators a label cell may have been written with.
_SEPARATORS = (";", "|", ",")


def is_unseen_error(exc: Exception) -> bool:
    """Whether a data reader's error is about labels its model does not have."""
    reason = getattr(exc, "reason", "")
    return (reason.startswith("label ") and "is not in the hierarchy" in reason) \
        or reason.startswith(("the label attributes do not match the hierarchy",
                              "the file's class hierarchy differs"))


def read_label_sets(loaded, args, read):
    """``read()`` (the test file in the model's hierarchy) and ``None``, or, when it names
    labels the model does not have, the file with those labels left out and their counts
    (``--unseen ignore``), else a ``ValueError`` naming them (``--unseen error``)."""
    import numpy as np

    from ecrm.commands import estimator_of, load_for_model

    try:
        return read(), None
    except ValueError as exc:
        if not is_unseen_error(exc):
            raise
        first = exc
    try:
        data = load_for_model(loaded, args, require_labels=True, own_labels=True)
    except ValueError:
        raise ValueError(f"{first}; to leave out the labels unseen in training, give "
                         "--unseen ignore") from None
    h = estimator_of(loaded).output_space
    own = [str(v) for v in data.hierarchy.labels]
    index = {str(v): j for j, v in enumerate(h.labels)}
    Y_own = np.asarray(data.Y.toarray() if hasattr(data.Y, "toarray") else data.Y) > 0
    known = [j for j, v in enumerate(own) if v in index]
    # the labels as the file gives them (not the prefixes of a path), else its columns
    given = data.get("label_lists") or [[own[j] for j in np.flatnonzero(row)] for row in Y_own]
    new = [dict.fromkeys(str(v) for v in row if str(v) not in index) for row in given]
    unseen = dict(Counter(v for row in new for v in row))  # in the order first seen
    rows = np.array([bool(row) for row in new], dtype=bool)
    if not unseen:  # another mismatch (an ARFF file without some of the model's labels)
        raise first
    if args.unseen == "error":
        name = next(iter(unseen))
        i = next(i for i, row in enumerate(given) if name in map(str, row))
        raise ValueError(f"{location(args.data, data.get('row_lines'), i)}: label {name!r} "
                         f"is not one the model knows ({_plural(len(unseen), 'label')} unseen "
                         f"in training, in {_plural(int(rows.sum()), 'row')})"
                         f"{_separator_hint(unseen, index, args)}; to score the known labels "
                         "and count these, give --unseen ignore")
    Y = np.zeros((len(Y_own), h.n_labels))
    Y[:, [index[own[j]] for j in known]] = Y_own[:, known]
    data.Y, data.hierarchy = h.close(Y), h
    return data, {"labels": unseen, "rows": int(rows.sum())}


def _separator_hint(unseen: dict, index: dict, args) -> str:
    """A hint at ``--label-sep`` when the unseen names split into known labels by another
    separator."""
    for sep in _SEPARATORS:
        if sep != args.label_sep and any(
                sep in v and all(p.strip() in index for p in v.split(sep)) for v in unseen):
            return (f"; the labels look separated by {sep!r}, not {args.label_sep!r}: give "
                    f"--label-sep '{sep}'")
    return ""


def unseen_rows(outputs, cells: list[str], lines, filename, unseen: str):
    """The rows of ``cells`` (class or ranking cells) that name no output unknown to the
    model (a boolean mask, or ``None`` when all are known) and the counts of the unknown
    ones; with ``unseen="error"`` the first is a ``ValueError`` (its file and line)."""
    import numpy as np

    new = [dict.fromkeys(v for v in outputs.labels_in(cell) if v and v not in outputs.index)
           for cell in cells]
    counts = dict(Counter(v for row in new for v in row))  # in the order first seen
    keep = np.array([not row for row in new], dtype=bool)
    if keep.all():
        return None, None
    what = "class" if outputs.task == "multiclass" else "label"
    if unseen == "error":
        i = int(np.flatnonzero(~keep)[0])
        raise ValueError(f"{location(filename, lines, i)}: {what} {next(iter(counts))!r} is "
                         f"not one the model knows ({_plural(len(counts), what)} unseen in "
                         f"training, in {_plural(int((~keep).sum()), 'row')}); to score the "
                         "other rows and count these, give --unseen ignore")
    return keep, {"classes" if what == "class" else "labels": counts,
                  "rows": int((~keep).sum())}


def describe(unseen: dict | None, *, rows_left_out: bool) -> str | None:
    """One line on what ``--unseen ignore`` left out (``None`` when nothing)."""
    if not unseen or not unseen["rows"]:
        return None
    key = "classes" if "classes" in unseen else "labels"
    what = "class" if key == "classes" else "label"
    names = ", ".join(f"{v!r} ({_plural(n, 'row')})" for v, n in list(unseen[key].items())[:5])
    more = f" and {len(unseen[key]) - 5} more" if len(unseen[key]) > 5 else ""
    left = (f"{_plural(unseen['rows'], 'row')} left out of the scores" if rows_left_out else
            f"left out of the labels of {_plural(unseen['rows'], 'row')}")
    return (f"unseen in training (--unseen ignore): {_plural(len(unseen[key]), what)}, {left}: "
            f"{names}{more}")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith("s") else "s")
