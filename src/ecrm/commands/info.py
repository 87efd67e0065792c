"""``ecrm info``: what a model file holds (estimator, loss, output space, kernel, sizes)."""

from __future__ import annotations

from ecrm.commands import existing_file_option, fail

__all__ = ["add_parser", "run", "summary"]


def summary(path: str) -> dict:
    """A JSON-able summary of the model file at ``path``."""
    import os

    from ecrm.io import load, read_metadata

    meta = read_metadata(path)
    model = load(path)
    space = model.output_space
    out = {"file": path, "bytes": os.path.getsize(path), "format_version": meta["format_version"],
           "ecrm_version": meta["ecrm_version"], "estimator": meta["estimator"],
           "loss": type(model.loss).__name__, "output_space": type(space).__name__,
           "n_outputs": space.n_outputs, "kernel": dict(model.kernel_params_),
           "alpha": float(getattr(model, "alpha_", getattr(model, "alpha", float("nan")))),
           "fit_intercept": bool(getattr(model, "fit_intercept_", model.fit_intercept)),
           "n_train": int(model.X_fit_.shape[0]), "n_features": int(model.n_features_in_),
           "labels": [str(v) for v in model.label_names_[:10]]}
    if hasattr(space, "edges"):
        out.update(n_edges=int(len(space.edges)), is_tree=bool(space.is_tree))
    return out


def run(args) -> int:
    """Run ``ecrm info`` from parsed arguments."""
    import json

    try:
        info = summary(args.model)
    except ValueError as exc:
        return fail(str(exc))
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    for key, value in info.items():
        print(f"{key:<16}{value}")
    return 0


def add_parser(subparsers) -> None:
    """Add the ``info`` sub-command."""
    p = subparsers.add_parser("info", help="describe a model file", description=__doc__)
    p.add_argument("model", type=existing_file_option("MODEL"), metavar="MODEL")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)
