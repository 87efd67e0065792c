"""The summary ``ecrm fit`` prints once the model is written: the chosen weight family's
settings and honest criterion, the preprocessing and where the model went."""

from __future__ import annotations

from ecrm.commands._choice import criterion_text, preprocessing_note
from ecrm.commands._files import STDOUT
from ecrm.commands._fit_estimators import solvers

__all__ = ["family_name", "print_summary"]


def family_name(model) -> str:
    """The weight family of a fitted estimator (its line of the table of families)."""
    from ecrm.weights.families import family_of

    family = family_of(model)
    return "unknown" if family is None else family.name


def print_summary(args, data, model, step, solver: str, report, fits: list) -> None:
    from ecrm.commands import describe_step

    h = data.get("hierarchy")
    outputs = (data.outputs.describe() if h is None else f"{h.n_labels} labels "
               f"({'tree' if h.is_tree else 'DAG'}, {len(h.edges)} edges)")
    shape = f"{data.X.shape[0]} rows, {data.X.shape[1]} features, {outputs}"
    if family_name(model) == "mixed":
        criterion = criterion_text(args, model.best_score_)
        kernel, forest = model.kernel_estimator_, model.forest_estimator_
        print(f"fitted ECRM on the mixed risk ({args.loss} loss) on {shape}: kernel share "
              f"{model.mixture_:g} (honest {criterion}); kernel {kernel.kernel_params_['kernel']}"
              f" alpha={kernel.alpha_:g}, {_gamma(kernel)}intercept={kernel.fit_intercept_}; "
              "forest " + ", ".join(f"{k}={v}" for k, v in forest.best_params_.items()),
              file=report)
    elif family_name(model) == "forest":
        criterion = (f"{args.loss} loss {model.oob_loss_:.4f}" if args.scoring == "loss"
                     else f"{args.scoring} {model.best_score_:.4f}")
        settings = ", ".join(f"{k}={v}" for k, v in model.best_params_.items())
        print(f"fitted ECRM with forest weights ({args.loss} loss, {model.n_estimators} "
              f"trees) on {shape}: {settings} (out-of-bag {criterion})", file=report)
    elif family_name(model) == "kernel":
        _print_kernel(args, model, solver, shape, report)
    elif family_name(model) == "neighbours":
        chosen = (f" (exact leave-one-out {criterion_text(args, model.best_score_)})"
                  if hasattr(model, "best_score_") else "")
        print(f"fitted ECRM with neighbours weights ({args.loss} loss, {model.metric} "
              f"distance) on {shape}: k={getattr(model, 'n_neighbors_', model.n_neighbors)}"
              f"{chosen}", file=report)
    else:
        score = getattr(model, "honest_score_", None)
        print(f"fitted ECRM with {family_name(model)} weights ({args.loss} loss) on {shape}"
              + ("" if score is None else f" (honest score {score:.4f})"), file=report)
    note = preprocessing_note(args, family_name(model), fits)
    print(f"preprocessing: {describe_step(step)}{note}", file=report)
    print(f"model written to "
          f"{'standard output' if args.output == STDOUT else args.output}", file=report)


def _gamma(model) -> str:
    """A fitted kernel model's width in words, then a comma (nothing for a kernel without
    one)."""
    params = model.kernel_params_
    return ("" if params["kernel"] in ("linear", "cosine", "precomputed") else
            f"gamma={params['gamma']:g}, " if params["gamma"] is not None else
            f"gamma={1.0 / model.n_features_in_:g} (1/features), ")


def _print_kernel(args, model, solver: str, shape: str, report) -> None:
    gamma = _gamma(model)
    if args.cv:
        criterion = criterion_text(args, model.best_score_)
        chosen = (f"alpha={model.alpha_:g} (exact leave-one-out {criterion}), "
                  f"{gamma}intercept={model.fit_intercept_}"
                  + (f", calibration={model.calibration_}" if model.calibration_ else ""))
    else:
        chosen = f"alpha={args.alpha:g}, {gamma}intercept={model.fit_intercept}"
    how = f"{model.kernel_params_['kernel']} kernel"
    if args.solver != "auto":
        how += f", {args.solver} solver" + (f" with {args.n_components} centres"
                                            if args.n_components is not None else "")
    elif solver == solvers().PrimalSolver.name:
        how += ", primal solver (auto: linear kernel, more rows than features)"
    print(f"fitted ECRM ({args.loss} loss, {how}) on {shape}: {chosen}", file=report)
