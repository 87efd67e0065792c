"""The estimator of each weight family that the options of ``ecrm fit`` describe.

The kernel's (:class:`ecrm.ECRM`, or :class:`ecrm.ECRMCV` with ``--cv``), the forest's
(:class:`ecrm.ForestECRMCV`), the nearest neighbours' (:class:`ecrm.NeighboursECRM` of
``--neighbours`` k, or :class:`ecrm.NeighboursECRMCV` searching ``--neighbours-grid`` with
``--cv``), the mixture's (:class:`ecrm.MixedRiskECRM`) and a registered family's, with the
solver ``--solver`` names (``auto``: the primal for a linear kernel on more rows than
features), the refusal of a forest that cannot fit ``--memory-budget`` and that of
neighbours the training file cannot give. Nothing heavy is imported until a command runs.
"""

from __future__ import annotations

__all__ = ["AUTO", "auto_solver", "check_neighbours", "dest", "family_estimators",
           "solver_object", "solvers", "trees_over_budget"]

#: ``--family auto``: with ``--cv`` the kernel and the forest, then their mixture, the share
#: chosen on their honest outputs (a choice of this command); the other choices are the
#: library's table's (:data:`ecrm.weights.FAMILIES`).
AUTO = ("kernel", "forest")


def family_estimators(args, loss, h, common: dict) -> dict:
    """The estimator factory of each weight family ``--family`` asks for: ``auto`` is both
    with ``--cv`` (each judged honestly: exact leave-one-out, out of bag) and the kernel
    without it (a fixed ``--alpha`` has no honest criterion)."""
    families = {"kernel": lambda: _kernel(args, loss, h, common),
                "forest": lambda: _forest(args, loss, h),
                "neighbours": lambda: _neighbours(args, loss, h),
                "mixed": lambda: _mixed(args, loss, h, common)}
    if args.family == "auto":
        return {f: families[f] for f in (AUTO if args.cv else AUTO[:1])}
    if args.family not in families:  # a registered family
        return {args.family: lambda: _registered(args, loss, h)}
    return {args.family: families[args.family]}


def _registered(args, loss, h):
    """A registered family's estimator (its search with ``--cv``, if it has one): the seed,
    ``--scoring`` with ``--cv`` and each of its options set on the parameters of the same
    names it has."""
    from ecrm.weights import FAMILIES

    family = FAMILIES[args.family]
    model = family.estimator_class(cv=args.cv)(loss, h)
    params = model.get_params(deep=False)
    values = {"random_state": 0 if args.seed is None else args.seed,
              **({"scoring": args.scoring} if args.cv else {}),
              **{dest(flag): getattr(args, dest(flag)) for flag in family.options}}
    return model.set_params(**{k: v for k, v in values.items() if k in params})


def dest(flag: str) -> str:
    """The attribute of the parsed arguments that holds option ``flag`` (``--max-depth``:
    ``max_depth``)."""
    return flag[2:].replace("-", "_")


#: The bytes a forest holds at least per training row and tree: the bootstrap counts (uint16)
#: and the training points' leaves (int32), whatever the trees' shapes.
_FOREST_ROW_BYTES = 6


def trees_over_budget(args, m: int) -> str | None:
    """The message refusing ``--trees``, before any work, when the forest's arrays on ``m``
    training rows cannot fit ``--memory-budget`` (a lower bound: the nodes come on top);
    ``None`` when they can."""
    from ecrm.weights.kernel._solvers.budget import GIB, check_budget

    budget = check_budget(args.memory_budget)
    need = _FOREST_ROW_BYTES * m * args.trees
    if need <= budget * GIB:
        return None
    most = int(budget * GIB // (_FOREST_ROW_BYTES * m))
    way_out = (f"give --trees {most} or fewer, or raise --memory-budget" if most
               else "raise --memory-budget")
    return (f"--trees {args.trees} on {m} training rows needs at least {need / GIB:,.1f} GiB "
            f"(the bootstrap counts and leaves of every row in every tree, "
            f"{_FOREST_ROW_BYTES} bytes each), over --memory-budget {budget:g} GiB: {way_out}")


def _forest(args, loss, h):
    """The forest's search of ``--trees`` trees, seeded (0 without ``--seed``)."""
    from ecrm.weights.forest.estimator import ForestECRMCV

    return ForestECRMCV(loss, h, scoring=args.scoring, n_estimators=args.trees,
                        random_state=0 if args.seed is None else args.seed)  # reproducible


def _neighbours(args, loss, h):
    """The nearest neighbours' estimator: with ``--cv`` :class:`ecrm.NeighboursECRMCV`
    searching ``--neighbours-grid`` (default: its own grid) by ``--scoring``, else
    :class:`ecrm.NeighboursECRM` of ``--neighbours`` k (default: its own); ``--metric``
    the distance."""
    from ecrm.weights.neighbours.estimator import NeighboursECRM, NeighboursECRMCV

    if args.cv:
        grid = {} if args.neighbours_grid is None else {"n_neighbors": tuple(
            args.neighbours_grid)}
        return NeighboursECRMCV(loss, h, metric=args.metric, scoring=args.scoring, **grid)
    k = {} if args.neighbours is None else {"n_neighbors": args.neighbours}
    return NeighboursECRM(loss, h, metric=args.metric, **k)


def check_neighbours(args, X) -> str | None:
    """The message refusing ``--family neighbours``, before any work, when the ``m``
    training rows of ``X`` cannot give its k (``--neighbours`` over ``m``; with ``--cv``
    no k of the grid below ``m``, as leave-one-out needs ``k < m``) or ``--metric`` cannot
    measure sparse rows (an svmlight file); ``None`` when it can fit (any other family
    too). The k of a given ``--neighbours-grid`` that are not below ``m`` are left out
    with a warning naming them."""
    if args.family != "neighbours":
        return None
    import scipy.sparse as sp

    from ecrm.weights.neighbours.estimator import (
        SPARSE_METRICS,
        NeighboursECRM,
        NeighboursECRMCV,
    )

    m = X.shape[0]
    if sp.issparse(X) and args.metric not in SPARSE_METRICS:
        return (f"--metric {args.metric} needs dense features; the training rows are sparse "
                f"(svmlight): give --metric {', '.join(SPARSE_METRICS[:-1])} or "
                f"{SPARSE_METRICS[-1]}")
    if not args.cv:
        if args.neighbours is None:
            k = NeighboursECRM(loss=None, output_space=None).n_neighbors
            if k > m:
                return (f"--family neighbours takes k={k} neighbours by default, more than "
                        f"the {m} training rows: give --neighbours {m} or fewer")
        elif args.neighbours > m:
            return (f"--neighbours {args.neighbours} exceeds the {m} training rows: give "
                    f"--neighbours {m} or fewer")
        return None
    given = args.neighbours_grid is not None
    grid = (args.neighbours_grid if given
            else NeighboursECRMCV(loss=None, output_space=None).n_neighbors)
    if min(grid) >= m:
        what = ("every k of --neighbours-grid " + ",".join(map(str, grid)) if given
                else "every k of the default grid " + ",".join(map(str, grid)))
        return (f"{what} is at least the {m} training rows: leave-one-out needs k < {m}; "
                f"give --neighbours-grid with values below {m}")
    left_out = [k for k in grid if k >= m]
    if given and left_out:
        import warnings

        warnings.warn(f"--neighbours-grid: k={','.join(map(str, left_out))} left out, not "
                      f"below the {m} training rows (leave-one-out needs k < {m})",
                      UserWarning, stacklevel=2)
    return None


def _mixed(args, loss, h, common: dict):
    """The kernel's and the forest's risks mixed (:class:`ecrm.MixedRiskECRM`): the kernel
    search ``--cv`` describes, the forest of ``--trees``."""
    from ecrm.weights.mixture import MixedRiskECRM

    kernel = _kernel(args, loss, h, common).get_params(deep=False)
    options = {k: v for k, v in kernel.items()
               if k not in ("loss", "output_space", "scoring", "random_state")}
    if options.get("search") is not None:  # the mixture judges the scores uncalibrated
        options["search"].set_params(calibration=None)
    return MixedRiskECRM(loss, h, kernel_options=options,
                         forest_options={"n_estimators": args.trees}, scoring=args.scoring,
                         random_state=0 if args.seed is None else args.seed)


def _kernel(args, loss, h, common: dict):
    """The kernel's estimator: :class:`ecrm.ECRMCV` with the search ``--cv`` describes, else
    :class:`ecrm.ECRM` with ``--alpha``; ``common``: the settings every kernel takes."""
    from ecrm.selection import LeaveOneOutSearch
    from ecrm.weights.kernel.estimator import ECRM, ECRMCV

    if args.cv:
        kernels = args.kernels or [args.kernel]
        grid = None if args.gammas is None and args.kernels is None else [
            {"kernel": [k], "gamma": args.gammas or [args.gamma]} if k != "linear"
            else {"kernel": [k]} for k in kernels]
        calibration = None if args.calibration == "none" else args.calibration
        search = LeaveOneOutSearch(kernel_grid=grid, fit_intercept="auto",
                                   calibration=calibration, loo_samples=args.loo_samples,
                                   extend_grid=args.extend_grid, verbose=0 if args.quiet else 1)
        return ECRMCV(loss, h, alphas=args.alphas, scoring=args.scoring, search=search,
                      **common)
    return ECRM(loss, h, alpha=args.alpha, **common)


def solvers():
    """The solvers' module (imported when a command runs: it needs NumPy)."""
    from ecrm.weights.kernel._solvers import solver

    return solver


def auto_solver(args, shape: tuple[int, int]) -> str:
    """The solver ``--solver auto`` means on the command line.

    A linear kernel with more rows than features is fitted, stored and predicted in the
    primal (weights p x d, exact): the dual's m x m work and its m-row coefficients buy
    nothing there. The Python API's ``"auto"`` is left as it is (the dual while it fits the
    memory budget). Metrics of the leave-one-out scores and their calibration need the dual.
    """
    if args.solver != "auto" or (args.cv and (args.scoring != "loss"
                                              or args.calibration not in (None, "none"))):
        return args.solver
    kernels = (args.kernels or [args.kernel]) if args.cv else [args.kernel]
    m, p = shape
    return solvers().PrimalSolver.name if set(kernels) == {"linear"} and m > p else "auto"


def solver_object(args, name: str):
    """The estimators' ``solver``: a name, or the Nystrom solver with its centres' settings
    (``--n-components``, ``--center-selection``)."""
    NystromSolver = solvers().NystromSolver
    if name != NystromSolver.name:
        return name
    return NystromSolver(n_components=args.n_components, center_selection=args.center_selection)
