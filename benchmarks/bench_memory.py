"""Each solver's stated memory need against its measured peak.

For every solver (the dual, the exact primal, Nystrom) and estimator (ECRM, ECRMCV) a fresh
process fits a problem whose solver memory dominates, and reports the growth of its peak
resident set size during ``fit`` next to :func:`ecrm.weights.kernel._solvers.choice.memory_need`
(the solver's own arrays plus its row blocks). The benchmark fails (exit status 1) when a measured
peak exceeds the stated need by more than ``SLACK_MIB`` (allocator noise).

Run: ``python benchmarks/bench_memory.py`` (about a minute, up to 1 GiB of memory).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SLACK_MIB = 16.0
#: (estimator, solver, m, p, n_components)
CASES = [("ECRM", "dual", 3000, 10, None), ("ECRMCV", "dual", 3000, 10, None),
         ("ECRM", "primal", 20000, 400, None), ("ECRMCV", "primal", 20000, 400, None),
         ("ECRM", "nystrom", 10000, 10, 1000), ("ECRMCV", "nystrom", 10000, 10, 1000)]

_PROBE = r"""
import json, resource, sys
import numpy as np
from ecrm import ECRM, ECRMCV, MultilabelSpace, NystromSolver
from ecrm.losses import HammingLoss
from ecrm.weights.kernel._solvers.choice import memory_need
from ecrm.weights.kernel._solvers.rows import RiskTargets

name, solver, m, p, M = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.normal(size=(m, p))
Y = (rng.normal(size=(m, 5)) > 0).astype(float)
space, loss = MultilabelSpace(5), HammingLoss()
kw = {"solver": solver, "kernel": "linear" if solver == "primal" else "rbf"}
if M is not None:
    kw["solver"] = NystromSolver(n_components=M)
cls = ECRM if name == "ECRM" else ECRMCV
extra = {} if name == "ECRM" else {"alphas": [1e-3, 1e-2]}
small = {**kw, "solver": NystromSolver(n_components=5)} if M is not None else kw
cls(loss, space, **small, **extra).fit(X[:50], Y[:50])  # libraries and code paths loaded


def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))


base = rss()
cls(loss, space, **kw, **extra).fit(X, Y)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
need = memory_need(solver, m=m, p=p, kernel=kw["kernel"], cv=name == "ECRMCV",
                   n_components=M, n_targets=RiskTargets(loss)(Y[:1]).shape[1])
print(json.dumps({"measured": peak - base, "matrices": need.matrices, "blocks": need.blocks}))
"""


def main() -> int:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    print(f"{'estimator':<8} {'solver':<8} {'m':>6} {'p':>4} {'M':>5} {'measured MiB':>13} "
          f"{'stated MiB':>11} {'ratio':>6}")
    failed = False
    for case in CASES:
        out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(case)], env=env,
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        measured, stated = r["measured"] / 2**20, (r["matrices"] + r["blocks"]) / 2**20
        ok = measured <= stated + SLACK_MIB
        failed |= not ok
        name, solver, m, p, M = case
        print(f"{name:<8} {solver:<8} {m:>6} {p:>4} {M or '-':>5} {measured:>13.1f} "
              f"{stated:>11.1f} {measured / stated:>6.2f}{'' if ok else '  OVER'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
