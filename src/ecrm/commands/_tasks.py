"""The kinds of output the commands read, write and evaluate -- label sets (``multilabel``),
rankings of named labels (``ranking``), one class per row (``multiclass``) and bucket orders
(``partial-ranking``) -- their ``--loss`` and metric vocabularies, and which one a model has.

``ecrm fit --task`` chooses the kind; ``predict``, ``evaluate`` and ``info`` find it from the
model's output space (the library's table :data:`ecrm.tasks.TASKS`), also for a model saved in
Python. Label sets keep their own code in the command modules; the other outputs are in
:mod:`ecrm.commands._outputs` (rankings, classes) and :mod:`ecrm.commands._bucket_orders`, their
data files read by :mod:`ecrm.commands._task_files`.
"""

from __future__ import annotations

from ecrm import tasks as _library
from ecrm.commands import estimator_of
from ecrm.commands._bucket_orders import BucketOrders
from ecrm.commands._outputs import RANKING_SEP, Classes, Outputs, Ranking

__all__ = ["LOSSES", "METRIC_NAMES", "RANKING_SEP", "TASKS", "label_set_only", "outputs_class",
           "outputs_of", "task_of"]

#: The kinds of output ``ecrm fit --task`` fits (the first is the default): the tasks of
#: :data:`ecrm.tasks.TASKS` whose label column the command line reads.
TASKS = tuple(name for name, task in _library.TASKS.items() if task.labels is not None)
#: The ``--loss`` choices of each task (the first is its default).
LOSSES = {name: _library.TASKS[name].loss_names for name in TASKS}
#: The metrics of rankings and classes (beside :data:`ecrm.reporting.report.METRIC_NAMES`).
METRIC_NAMES = {"kendall_tau": "Kendall tau (mean)",
                "kendall": "Kendall distance (discordant pairs, mean)",
                "spearman_rho": "Spearman rho (mean)", "footrule": "footrule loss (mean)",
                "squared": "squared rank loss (mean)", "accuracy": "accuracy",
                "zero_one": "0-1 loss (error rate)", "tau_x": "tau_x (mean)",
                "tau_x_distance": "tau_x distance (mean)",
                "kendall_ties": "Kendall distance with ties (mean)"}

#: Options only label sets have: (attribute, flag, value when not given).
_LABEL_SET_OPTIONS = (("hierarchy", "--hierarchy", None), ("path_sep", "--path-sep", None),
                      ("level_columns", "--level-columns", None),
                      ("label_sep", "--label-sep", ";"), ("scoring", "--scoring", "loss"),
                      ("calibration", "--calibration", "none"),
                      ("scheduler", "--scheduler", None), ("scores", "--scores", False),
                      ("leaves_only", "--leaves-only", False),
                      ("per_level", "--per-level", False), ("plot", "--plot", None),
                      ("report", "--report", None), ("baseline", "--baseline", None))


def task_of(model) -> str:
    """The task of a model (an estimator or a pipeline): from its output space
    (:func:`ecrm.tasks.task_of_space`).

    Raises ``ValueError`` for an output space no task declares, or whose task's labels the
    command line neither reads nor writes.
    """
    task = _library.task_of_space(estimator_of(model).output_space)
    if task.labels is None:
        raise ValueError(f"the command line reads and writes no labels of the task "
                         f"{task.name!r} ({task.what or type(model).__name__}): use this "
                         "model in Python")
    return task.name


def label_set_only(args, task: str) -> str | None:
    """Why ``args`` do not suit ``task``: the first option given that only label sets
    have (``None`` for label sets, or when there is none)."""
    if _library.TASKS[task].labels == _library.LABEL_SETS:
        return None
    for attr, flag, unset in _LABEL_SET_OPTIONS:
        if getattr(args, attr, unset) != unset:
            return (f"{flag} is for label sets (--task multilabel), not for "
                    f"{_library.TASKS[task].what or task}")
    return None


def outputs_class(task: str) -> type[Outputs]:
    """The class of the outputs of ``task`` (other than label sets)."""
    return {"ranking": Ranking, "partial-ranking": BucketOrders}.get(task, Classes)


def outputs_of(model) -> Outputs:
    """The :class:`Ranking`, :class:`Classes` or bucket orders of a model (by its task)."""
    space = estimator_of(model).output_space
    return outputs_class(_library.task_of_space(space).name)(space)
