"""The tasks: each kind of output, its output spaces and its losses, declared once.

A :class:`Task` names the output spaces of its models, the losses ``ecrm fit --loss`` offers
for it (each built on the output space by :meth:`ecrm.losses.Loss.for_space`) and the layout
of its label column on the command line (``labels``: label sets, a ranking, a class; ``None``:
a task fitted in Python only). The command line reads its ``--task`` and ``--loss`` choices
here and finds the task of a model file by its output space (:func:`task_of_space`), so a new
output space is one class and one :func:`register_task` call: the registration also lets model
files (:func:`ecrm.save`, :func:`ecrm.load`) hold the space, rebuilt from the constructor
parameters it keeps as attributes of the same names (scikit-learn's convention).

Only the standard library is imported here: the command-line parsers read the table without
loading NumPy. Classes are named by their dotted path (imported when first used) or given as
the class itself.

>>> [task.name for task in TASKS.values()][:3]
['multilabel', 'ranking', 'multiclass']
>>> TASKS["ranking"].loss_names
('kendall', 'footrule', 'squared')
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["CLASS", "LABEL_SETS", "RANKING", "TASKS", "Task", "register_task", "resolve",
           "space_classes", "task_of_space"]

#: The layouts of a label column the command line reads and writes.
LABEL_SETS, RANKING, CLASS = "label sets", "ranking", "class"


@dataclass(frozen=True)
class Task:
    """One kind of output.

    Attributes
    ----------
    name : str
        The task's name (``ecrm fit --task``, ``ecrm info``).
    spaces : tuple of str or type
        Its output spaces: dotted paths (``"ecrm.spaces.base.MultilabelSpace"``, the module
        that defines the class) or classes. A model belongs to the first task one of whose
        spaces its output space is an instance of.
    losses : mapping of str to str or type
        ``--loss`` name -> the loss class (a dotted path or the class), the first the
        default. Each is built on the output space by its ``for_space``.
    labels : str or None
        The layout of the label column the command line reads and writes
        (:data:`LABEL_SETS`, :data:`RANKING` or :data:`CLASS`); ``None``: the command line
        describes such models but neither fits nor reads them.
    what : str
        The outputs, in words (plural: ``"label sets"``).
    """

    name: str
    spaces: tuple
    losses: Mapping = field(default_factory=dict)
    labels: str | None = None
    what: str = ""

    @property
    def loss_names(self) -> tuple[str, ...]:
        """The ``--loss`` choices, the default first."""
        return tuple(self.losses)

    def make_loss(self, name: str, space):
        """The loss ``--loss name`` means on ``space``."""
        if name not in self.losses:
            raise ValueError(f"{name!r} is not a loss of the task {self.name!r} (choose "
                             f"{', '.join(self.losses)})")
        return resolve(self.losses[name]).for_space(space)

    def holds(self, space) -> bool:
        """Whether ``space`` is one of this task's output spaces (by dotted path, so that
        a model's task is found without importing the other tasks' spaces)."""
        found = {f"{c.__module__}.{c.__qualname__}" for c in type(space).__mro__}
        return any((s in found) if isinstance(s, str) else isinstance(space, s)
                   for s in self.spaces)


def resolve(target):
    """A class given by its dotted path (``"package.module.Name"``), imported; a class as is."""
    if not isinstance(target, str):
        return target
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


_TASKS: dict[str, Task] = {}
#: Every task, by name: the built-in ones, then those registered.
TASKS: Mapping[str, Task] = MappingProxyType(_TASKS)


def register_task(task: Task) -> Task:
    """Add ``task`` to :data:`TASKS` and let model files hold its output spaces given as
    classes (:func:`ecrm.model_files._registry.register`: written as their constructor's parameters,
    read back from the attributes of the same names). Returns ``task``."""
    if not isinstance(task, Task):
        raise TypeError(f"register_task takes a Task; got {type(task).__name__}")
    if task.name in _TASKS:
        raise ValueError(f"a task {task.name!r} is already registered")
    if not task.spaces:
        raise ValueError(f"task {task.name!r} names no output space")
    taken = space_classes()
    for space in task.spaces:  # a model file names a class by its name alone
        if not isinstance(space, str) and taken.get(space.__name__, space) is not space:
            raise ValueError(f"another task's output space is called {space.__name__!r}: "
                             "model files could not tell them apart (rename the class)")
    classes = [s for s in task.spaces if not isinstance(s, str)]
    if classes:  # a class comes with NumPy already loaded: the registry costs nothing more
        from ecrm.model_files._registry import constructor_params, register

        for space in classes:
            register(space, constructor_params)
    _TASKS[task.name] = task
    return task


def space_classes() -> dict[str, type]:
    """The output-space classes the registered tasks give as classes, by class name."""
    return {s.__name__: s for task in _TASKS.values() for s in task.spaces
            if not isinstance(s, str)}


def task_of_space(space) -> Task:
    """The task whose output spaces ``space`` is one of.

    Raises ``ValueError`` for a space no task declares.
    """
    for task in _TASKS.values():
        if task.holds(space):
            return task
    known = [t.what or t.name for t in _TASKS.values() if t.labels is not None]
    raise ValueError(f"the command line reads models of {', '.join(known[:-1])} and "
                     f"{known[-1]}; this model's outputs are a {type(space).__name__} (use it "
                     "in Python)")


for _task in (
    Task("multilabel", ("ecrm.spaces.hierarchy._space.Hierarchy",
                        "ecrm.spaces.base.MultilabelSpace"),
         {"hamming": "ecrm.losses.multilabel.HammingLoss",
          "hierarchical": "ecrm.losses.multilabel.HierarchicalLoss"},
         labels=LABEL_SETS, what="label sets"),
    Task("ranking", ("ecrm.spaces.permutations.PermutationSpace",),
         {"kendall": "ecrm.losses.kendall.KendallLoss",
          "footrule": "ecrm.losses.ranking.FootruleLoss",
          "squared": "ecrm.losses.ranking.SquaredRankLoss"},
         labels=RANKING, what="rankings"),
    Task("multiclass", ("ecrm.spaces.candidates.CandidateSpace",),
         {"zero-one": "ecrm.losses.classification.ZeroOneLoss"},
         labels=CLASS, what="classes"),
    Task("partial-ranking", ("ecrm.spaces.bucket_orders.BucketOrderSpace",),
         {"tau-x": "ecrm.losses.bucket.TauXLoss",
          "kendall-ties": "ecrm.losses.bucket.KendallTiesLoss"},
         labels=RANKING, what="bucket orders"),
):
    register_task(_task)
