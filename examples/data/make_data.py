"""Write the example data of the README's "Use your own data": documents-{train,test}.csv.

Each row is one document: six numeric features (already on a common scale) and a ``labels``
column of label paths separated by ``;``, e.g. ``science/physics;arts/music``. The topics form
a two-level tree; a document's topics come from its position in feature space, so that the
structure matters (sibling topics are close, the parent is on whenever a child is).

Run from anywhere: ``python examples/data/make_data.py`` (deterministic, seed 0).
"""

import csv
from pathlib import Path

import numpy as np

TOPICS = ["science/physics", "science/biology", "science/maths", "sport/football",
          "sport/tennis", "arts/music", "arts/film"]


def make(n: int, rng: np.random.Generator):
    parents = sorted({t.split("/")[0] for t in TOPICS})
    parent_centre = {p: rng.normal(scale=2.0, size=6) for p in parents}
    centre = {t: parent_centre[t.split("/")[0]] + rng.normal(scale=0.9, size=6) for t in TOPICS}
    rows = []
    for _ in range(n):
        first = TOPICS[rng.integers(len(TOPICS))]
        topics = [first]
        if rng.random() < 0.3:  # a second topic, often a sibling
            pool = [t for t in TOPICS if t != first and (rng.random() < 0.6) ==
                    (t.split("/")[0] == first.split("/")[0])] or [t for t in TOPICS if t != first]
            topics.append(pool[rng.integers(len(pool))])
        x = np.mean([centre[t] for t in topics], axis=0) + rng.normal(scale=0.8, size=6)
        if rng.random() < 0.15:  # some documents only known at the top level
            topics = [topics[0].split("/")[0]]
        rows.append((x, topics))
    return rows


def main() -> None:
    rng = np.random.default_rng(0)
    rows = make(400, rng)
    here = Path(__file__).resolve().parent
    for name, part in [("documents-train.csv", rows[:300]), ("documents-test.csv", rows[300:])]:
        with open(here / name, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow([f"f{k}" for k in range(6)] + ["labels"])
            for x, topics in part:
                w.writerow([f"{v:.4f}" for v in x] + [";".join(topics)])
        print(f"wrote {here / name} ({len(part)} rows)")


if __name__ == "__main__":
    main()
