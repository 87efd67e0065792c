"""``ecrm evaluate``: the multi-label metrics of a model's predictions on a labelled file.

Hamming loss (mean number of wrong labels, and as a fraction), hierarchical loss, exact
match, micro and macro F1, hierarchical precision/recall/F1 (hP/hR/hF) and micro AU(PRC) of
the label scores (:func:`ecrm.metrics.multilabel_report`); a table on standard output, or
JSON with ``--json``. With ``--predictions FILE`` (as written by ``ecrm predict``) the model
is not run: the labels are read from the file (AU(PRC) needs its score columns).
"""

from __future__ import annotations

from ecrm.commands import add_data_options, existing_file_option, fail, load_for_model

__all__ = ["add_parser", "read_predictions", "run"]


def read_predictions(path: str, hierarchy, n_rows: int, label_sep: str = ";"):
    """Label matrix (and scores, if present) from a file written by ``ecrm predict``."""
    import csv
    import json

    import numpy as np

    names = [str(n) for n in hierarchy.labels]
    lists, scores = [], []
    with open(path, encoding="utf-8") as fh:
        if path.lower().endswith((".jsonl", ".json")):
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    lists.append(rec["labels"])
                    if "scores" in rec:
                        scores.append([float(rec["scores"][n]) for n in names])
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}, line {lineno}: not a prediction record "
                                     f"({exc})") from None
        else:
            reader = csv.reader(fh, delimiter="\t" if path.lower().endswith(".tsv") else ",")
            header = next(reader, [])
            score_cols = [header.index(f"score:{n}") if f"score:{n}" in header else None
                          for n in names]
            if "labels" not in header:
                raise ValueError(f"{path}, line 1: no 'labels' column")
            li = header.index("labels")
            for row in reader:
                lists.append([v for v in row[li].split(label_sep) if v])
                if all(c is not None for c in score_cols):
                    scores.append([float(row[c]) for c in score_cols])  # type: ignore[index]
    if len(lists) != n_rows:
        raise ValueError(f"{path}: {len(lists)} predictions for {n_rows} data rows")
    by_name = {str(v): v for v in hierarchy.labels}
    try:
        Y = hierarchy.to_matrix([[by_name[str(v)] for v in row] for row in lists], close=False)
    except KeyError as exc:
        raise ValueError(f"{path}: label {exc.args[0]!r} is not in the model's hierarchy") \
            from None
    return Y, (np.array(scores) if len(scores) == n_rows else None)


def run(args) -> int:
    """Run ``ecrm evaluate`` from parsed arguments."""
    import json

    from ecrm.commands._options import progress_bar
    from ecrm.io import load
    from ecrm.metrics import multilabel_report
    from ecrm.spaces.hierarchy import Hierarchy

    with progress_bar(2, "ecrm evaluate", enabled=not args.quiet) as bar:
        try:
            model = load(args.model)
            if not isinstance(model.output_space, Hierarchy):
                return fail(f"{args.model}: evaluate needs a model of label sets (a Hierarchy "
                            f"output space); this one has {model.output_space!r}")
            data = load_for_model(model, args, require_labels=True)
            bar.update()
            h = model.output_space
            if args.predictions is not None:
                Y, S = read_predictions(args.predictions, h, len(data.Y), args.label_sep)
            else:
                Y, S = model.predict(data.X), model.predict_scores(data.X)
        except ValueError as exc:
            return fail(str(exc))
        bar.update()
    report = multilabel_report(data.Y, Y, S, hierarchy=h if h.edges.size else None)
    if args.json:
        print(json.dumps({"n_rows": len(Y), "n_labels": h.n_labels, **report}, indent=2))
        return 0
    print(f"{args.data}: {len(Y)} rows, {h.n_labels} labels")
    names = {"hamming": "Hamming loss (labels wrong per row)",
             "hamming_fraction": "Hamming loss (fraction of labels)",
             "hierarchical": "hierarchical loss", "exact_match": "exact match",
             "micro_f1": "micro F1", "macro_f1": "macro F1", "hP": "hierarchical precision",
             "hR": "hierarchical recall", "hF": "hierarchical F1",
             "micro_auprc": "micro AU(PRC)"}
    for key, value in report.items():
        print(f"  {names[key]:<38}{value:>10.4f}")
    return 0


def add_parser(subparsers) -> None:
    """Add the ``evaluate`` sub-command."""
    p = subparsers.add_parser("evaluate", help="evaluate a model on a labelled data file",
                              description=__doc__.splitlines()[0])
    p.add_argument("model", type=existing_file_option("MODEL"), metavar="MODEL")
    p.add_argument("data", type=existing_file_option("DATA"), metavar="DATA")
    p.add_argument("--predictions", type=existing_file_option("--predictions"), default=None,
                   metavar="FILE", help="evaluate these predictions instead of running the model")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_data_options(p)
    p.set_defaults(func=run)
