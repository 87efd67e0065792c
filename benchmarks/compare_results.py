"""Compare two JSON results files of ``ecrm reproduce`` (or any JSON) apart from timings.

Usage::

    python benchmarks/compare_results.py BEFORE.json AFTER.json [--rtol 1e-9] [--ignore WORD]...

The two documents are walked together. A key is skipped when one of the parts of its name
(split at ``_``, ``-``, ``.``, spaces and lower-to-upper case changes) begins with one of the
ignored words, compared case-insensitively: timings (``time``, ``runtime``, ``walltime``,
``seconds``, ``duration``, ``elapsed``) and provenance (``commit``, ``date``, ``machine``,
``host``, ``version``, ``command``, ``provenance``, ``python``); so ``fit_seconds`` and
``ecrm_version`` are skipped, ``candidates`` is not. ``--ignore`` adds words. Two numbers
:math:`a, b` agree when

.. math:: |a - b| \\le \\mathrm{rtol} \\cdot \\max(|a|, |b|)

(so zero agrees only with zero, an infinity only with itself); two NaNs agree; booleans,
strings and ``null`` must be equal; lists must have the same length and agree item by item;
objects must have the same keys.
Every difference is printed as ``path: before != after``; the exit status is 0 when there is
none, 1 otherwise, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys

TIMING = ("time", "runtime", "walltime", "seconds", "duration", "elapsed")
PROVENANCE = ("commit", "date", "machine", "host", "version", "command", "provenance", "python")


def _ignored(key: str, words: tuple[str, ...]) -> bool:
    parts = re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", key)
    return any(p.lower().startswith(w) for p in parts if p for w in words)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def differences(before, after, *, rtol: float = 1e-9,
                ignore: tuple[str, ...] = TIMING + PROVENANCE, path: str = "$") -> list[str]:
    """The differences between two decoded JSON documents, one line each (``path: a != b``)."""
    if _number(before) and _number(after):
        a, b = float(before), float(after)
        if (math.isnan(a) and math.isnan(b)) or a == b:
            return []
        if math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rtol * max(abs(a), abs(b)):
            return []
        if not (math.isfinite(a) and math.isfinite(b)):
            return [f"{path}: {before!r} != {after!r}"]
        relative = abs(a - b) / max(abs(a), abs(b))
        return [f"{path}: {before!r} != {after!r} (relative {relative:.3g})"]
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after), key=str):
            if _ignored(str(key), ignore):
                continue
            where = f"{path}.{key}"
            if key not in after:
                out.append(f"{where}: only before ({before[key]!r})")
            elif key not in before:
                out.append(f"{where}: only after ({after[key]!r})")
            else:
                out += differences(before[key], after[key], rtol=rtol, ignore=ignore, path=where)
        return out
    if isinstance(before, list) and isinstance(after, list):
        out = []
        if len(before) != len(after):
            out.append(f"{path}: {len(before)} items before, {len(after)} after")
        for i, (a, b) in enumerate(zip(before, after, strict=False)):
            out += differences(a, b, rtol=rtol, ignore=ignore, path=f"{path}[{i}]")
        return out
    if type(before) is not type(after) or before != after:
        return [f"{path}: {before!r} != {after!r}"]
    return []


def skipped(doc, ignore: tuple[str, ...] = TIMING + PROVENANCE) -> set[str]:
    """The names of the keys of ``doc`` that :func:`differences` skips."""
    if isinstance(doc, dict):
        out = set()
        for key, value in doc.items():
            out |= {str(key)} if _ignored(str(key), ignore) else skipped(value, ignore)
        return out
    if isinstance(doc, list):
        return set().union(*(skipped(v, ignore) for v in doc))
    return set()


def _load(name: str):
    try:
        with open(name, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"compare_results: cannot read {name}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rtol", type=float, default=1e-9,
                        help="relative tolerance of numbers (default 1e-9)")
    parser.add_argument("--ignore", action="append", default=[], metavar="WORD",
                        help="one more word (repeatable): keys with a name part beginning "
                        "with it are skipped")
    args = parser.parse_args(argv)
    try:
        before, after = _load(args.before), _load(args.after)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    words = TIMING + PROVENANCE + tuple(w.lower() for w in args.ignore)
    found = differences(before, after, rtol=args.rtol, ignore=words)
    for line in found:
        print(line)
    names = sorted(skipped(before, words) | skipped(after, words))
    print("skipped keys: " + (", ".join(names) if names else "none"))
    print(f"{args.before} vs {args.after}: "
          + (f"{len(found)} difference(s)" if found else "identical apart from ignored fields"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
