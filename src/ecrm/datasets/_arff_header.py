"""The header of a Clus hierarchical ARFF file: its attributes, the ``hierarchical``
declaration of the label hierarchy (tree paths or DAG edges), and the record of a parsed
file (:class:`ParsedFile`) that :mod:`ecrm.datasets._arff_data` fills with the data section.
Every error is an :class:`~ecrm.datasets._arff_text.ArffError` naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ecrm.datasets._arff_text import ArffError, read_name, split_fields

__all__ = ["DAG_ROOT", "Attribute", "HierarchySpec", "ParsedFile", "parse_header"]

#: The virtual root of a DAG declaration (not a label).
DAG_ROOT = "root"
_SKIPPED_TYPES = ("string", "date", "key")
_NUMERIC_TYPES = ("numeric", "real", "integer")


@dataclass
class Attribute:
    name: str
    kind: str  # "numeric", "nominal", "skip", "hierarchical"
    lineno: int
    categories: tuple[str, ...] | None = None


@dataclass
class HierarchySpec:
    kind: str  # "tree" or "dag"
    edges: list[tuple[str, str]]
    labels: list[str]
    root: str | None
    lineno: int

    def signature(self):
        return (self.kind, self.root, frozenset(self.labels), frozenset(self.edges))


@dataclass
class ParsedFile:
    path: Path
    relation: str
    attributes: list[Attribute]
    class_index: int
    spec: HierarchySpec
    # data
    n_rows: int = 0
    row_lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    X: np.ndarray | sp.csr_matrix = field(default_factory=lambda: np.zeros((0, 0)))
    class_fields: list[str] = field(default_factory=list)

    @property
    def features(self) -> list[Attribute]:
        return [a for a in self.attributes if a.kind in ("numeric", "nominal")]

    def feature_signature(self):
        return [(a.name, a.kind, a.categories) for a in self.features]


def _parse_hierarchy(entries_text: str, path, lineno: int, hierarchy_type: str) -> HierarchySpec:
    entries = [e for e in (x.strip() for x in entries_text.split(",")) if e]
    if not entries:
        raise ArffError(path, lineno, "expected a comma-separated list of classes after "
                        "'hierarchical'; found none")
    parts = [e.split("/") for e in entries]
    if hierarchy_type == "auto":
        is_dag = all(len(p) == 2 for p in parts) and any(p[0] == DAG_ROOT for p in parts)
        kind = "dag" if is_dag else "tree"
    elif hierarchy_type in ("tree", "dag"):
        kind = hierarchy_type
    else:
        raise ValueError(f"hierarchy_type must be 'auto', 'tree' or 'dag'; got {hierarchy_type!r}")
    edges: dict[tuple[str, str], None] = {}
    labels: dict[str, None] = {}
    for entry, comps in zip(entries, parts, strict=True):
        stripped = [c.strip() for c in comps]
        if any(not c for c in stripped):
            raise ArffError(path, lineno, f"empty component in hierarchy entry {entry!r}; expected "
                            "names separated by '/'")
        if kind == "dag":
            if len(stripped) != 2:
                raise ArffError(path, lineno, "expected DAG edges 'parent/child' in the "
                                f"hierarchical attribute; found {entry!r}")
            p, c = stripped
            edges[(p, c)] = None
            for v in (p, c):
                if v != DAG_ROOT:
                    labels[v] = None
        else:
            prev = None
            for k in range(1, len(stripped) + 1):
                node = "/".join(stripped[:k])
                labels[node] = None
                if prev is not None:
                    edges[(prev, node)] = None
                prev = node
    root = DAG_ROOT if kind == "dag" and any(DAG_ROOT in e for e in edges) else None
    return HierarchySpec(kind, list(edges), list(labels), root, lineno)


def _checked(path, lineno: int, read, text: str):
    """``read(text)``, its ``ValueError`` (an unterminated quote) an :class:`ArffError`."""
    try:
        return read(text)
    except ValueError as e:
        raise ArffError(path, lineno, str(e)) from None


def parse_header(path: Path, lines: list[str], hierarchy_type: str, *,
                  require_class: bool = True):
    relation = ""
    attributes: list[Attribute] = []
    class_index = None
    spec = None
    data_start = None
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        lineno = i + 1
        low = line.lower()
        if low.startswith("@relation"):
            relation, _ = _checked(path, lineno, read_name, line[len("@relation") :])
        elif low.startswith("@attribute"):
            name, rest = _checked(path, lineno, read_name, line[len("@attribute") :])
            if not name or not rest:
                raise ArffError(path, lineno, "expected '@attribute <name> <type>'; found "
                                f"{line[:80]!r}")
            word = rest.lower().split(None, 1)[0]
            if rest.startswith("{"):
                if not rest.endswith("}"):
                    raise ArffError(path, lineno, "expected a nominal list '{a,b,...}' for "
                                    f"{name!r}; found {rest[:80]!r}")
                cats = _checked(path, lineno, split_fields, rest[1:-1])
                if any(not c for c in cats) or len(set(cats)) != len(cats):
                    raise ArffError(path, lineno, f"nominal attribute {name!r} has empty or "
                                    f"repeated values: {rest[:80]!r}")
                attributes.append(Attribute(name, "nominal", lineno, tuple(cats)))
            elif word in _NUMERIC_TYPES:
                attributes.append(Attribute(name, "numeric", lineno))
            elif word in _SKIPPED_TYPES:
                attributes.append(Attribute(name, "skip", lineno))
            elif word == "hierarchical":
                if class_index is not None:
                    raise ArffError(path, lineno, f"second hierarchical attribute {name!r}; "
                                    "expected exactly one (the first, "
                                    f"{attributes[class_index].name!r}, is on line "
                                    f"{attributes[class_index].lineno})")
                spec = _parse_hierarchy(rest[len("hierarchical") :], path, lineno, hierarchy_type)
                class_index = len(attributes)
                attributes.append(Attribute(name, "hierarchical", lineno))
            elif word == "relational":
                raise ArffError(path, lineno, f"relational attribute {name!r} is not supported")
            else:
                raise ArffError(path, lineno, f"unknown type {rest.split(None, 1)[0]!r} for "
                                f"attribute {name!r}; expected numeric, real, integer, "
                                "{nominal values}, string, date or hierarchical")
        elif low.startswith("@data"):
            data_start = i + 1
            if class_index is None and require_class:
                raise ArffError(path, lineno, "no hierarchical attribute declared before @data; "
                                "expected a Clus class attribute such as '@attribute class "
                                "hierarchical a,a/b,c'")
            break
        else:
            raise ArffError(path, lineno, "expected @relation, @attribute or @data in the header; "
                            f"found {line[:80]!r}")
    if data_start is None:
        raise ArffError(path, len(lines), "expected an @data line after the header; reached the "
                        "end of the file")
    return relation, attributes, class_index, spec, data_start
