"""``ecrm predict`` on 1,000 rows: wall time, most of it imports, for one or more source trees.

The command's time on a small file is its start-up: the imports of NumPy, SciPy, scikit-learn
and ecrm's modules, then reading the model and predicting. Each ``--src`` (a ``src`` folder:
this tree's, or an older checkout's) runs the same command on the same model and data, the
trees interleaved run by run so that a busy machine weighs on each alike; the medians of the
wall and CPU times are printed side by side, with ``ecrm predict --help`` and a bare
``import sklearn.base`` (the floor: ecrm's estimators are scikit-learn estimators). One BLAS
thread throughout. Run:
``python benchmarks/bench_predict_startup.py [--runs 5] [--src OLD/src --src src]``.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], src: str) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of ``python ARGS`` on ``src``."""
    env = dict(os.environ, PYTHONPATH=src, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--src", action="append", help="a src folder (default: this tree's)")
    args = parser.parse_args()
    srcs = args.src or [str(ROOT / "src")]
    data = ROOT / "examples" / "data"
    with tempfile.TemporaryDirectory() as tmp:
        lines = (data / "documents-test.csv").read_text().splitlines()
        body = lines[1:]
        rows = [body[i % len(body)] for i in range(args.rows)]
        test = Path(tmp, "test.csv")
        test.write_text("\n".join([lines[0], *rows]) + "\n")
        model = Path(tmp, "model.ecrm")  # the README's model, fitted once by the first tree
        _run(["-m", "ecrm", "fit", str(data / "documents-train.csv"), "--path-sep", "/",
              "--loss", "hierarchical", "--cv", "--gammas", "0.03,0.1,0.3", "-o", str(model),
              "--quiet"], srcs[0])
        commands = {
            "import sklearn.base": ["-c", "import sklearn.base"],
            "ecrm predict --help": ["-m", "ecrm", "predict", "--help"],
            f"ecrm predict ({args.rows:,} rows)": [
                "-m", "ecrm", "predict", str(model), str(test), "-o", str(Path(tmp, "p.csv")),
                "--quiet"],
        }
        times: dict = {(c, s): [] for c in commands for s in srcs}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                for src in srcs:
                    times[name, src].append(_run(cmd, src))
    print(f"median of {args.runs} runs, wall / CPU seconds, one BLAS thread; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'':28}" + "".join(f"{Path(s).parent.name + '/' + Path(s).name:>24}" for s in srcs))
    for name in commands:
        print(f"{name:28}" + "".join(
            f"{statistics.median(t[0] for t in times[name, s]):16.2f} /"
            f"{statistics.median(t[1] for t in times[name, s]):6.2f}" for s in srcs))
    # ecrm's own share: each run's predict less the same round's bare scikit-learn import
    predict, floor = list(commands)[2], list(commands)[0]

    def share(src: str, k: int) -> float:
        return statistics.median(p[k] - f[k] for p, f in zip(times[predict, src],
                                                             times[floor, src], strict=True))

    print(f"{'predict - sklearn.base':28}" + "".join(
        f"{share(s, 0):16.2f} /{share(s, 1):6.2f}" for s in srcs))


if __name__ == "__main__":
    main()
