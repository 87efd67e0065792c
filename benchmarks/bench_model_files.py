"""Model files (ecrm.save / ecrm.load) against pickle and skops.io, side by side.

1. Size and time against pickle: a pickle of a fitted ECRM keeps the m x m Cholesky factor; a
   model file holds O(m (p + e)) arrays and rebuilds the factor only when a prediction needs it.
2. Against ``skops.io`` (safe persistence of scikit-learn objects by a trusted-types list),
   where it is installed (it is not a dependency: ``pip install skops``): a pipeline of
   preprocessing steps before ECRMCV, saved by both; size, save and load time, lines of code,
   and hostile files: a careful tamperer's consistent-looking edit (a step's width), and
   random bit flips (what each load does: a clean error, a load, or a raw exception).

Run: ``python benchmarks/bench_model_files.py``.
"""

import hashlib
import io
import json
import os
import pickle
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time  # noqa: E402

import ecrm  # noqa: E402
from ecrm import ECRM, ECRMCV, load, save  # noqa: E402
from ecrm.datasets import make_hmc  # noqa: E402
from ecrm.losses import HierarchicalLoss  # noqa: E402
from ecrm.model_files.io import ModelFileError  # noqa: E402


def against_pickle(folder: str) -> None:
    print(f"{'m':>6}{'.ecrm MB':>10}{'pickle MB':>11}{'size ratio':>12}{'save s':>8}"
          f"{'load s':>8}{'unpickle s':>12}")
    for m in (500, 1500, 3000):
        X, Y, h = make_hmc(m, n_labels=40, random_state=0)
        model = ECRM(HierarchicalLoss(h), h, gamma=0.1).fit(X, Y)
        path = os.path.join(folder, "m.ecrm")
        t_save = median_time(lambda: save(model, path), 3)  # noqa: B023
        t_load = median_time(lambda: load(path), 3)  # noqa: B023
        blob = pickle.dumps(model)
        t_unpickle = median_time(lambda: pickle.loads(blob), 3)  # noqa: B023
        size = os.path.getsize(path)
        print(f"{m:>6}{size / 1e6:>10.2f}{len(blob) / 1e6:>11.2f}{len(blob) / size:>11.1f}x"
              f"{t_save:>8.2f}{t_load:>8.2f}{t_unpickle:>12.2f}")


def _lines(paths) -> int:
    return sum(len(Path(p).read_text().splitlines()) for p in paths)


def _flips(blob: bytes, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for k in rng.choice(len(blob) * 8, size=n, replace=False):
        flipped = bytearray(blob)
        flipped[k // 8] ^= 1 << (k % 8)
        yield bytes(flipped)


def _outcomes(load_bytes, blob: bytes, clean: tuple, n: int) -> dict:
    counts = {"clean error": 0, "loaded": 0, "raw exception": 0}
    raw: dict[str, int] = {}
    for bad in _flips(blob, n):
        try:
            load_bytes(bad)
            counts["loaded"] += 1
        except clean:
            counts["clean error"] += 1
        except Exception as exc:  # noqa: BLE001 - what we count
            counts["raw exception"] += 1
            raw[type(exc).__name__] = raw.get(type(exc).__name__, 0) + 1
    return {**counts, "raw types": raw}


def against_skops(folder: str, flips: int) -> None:
    try:
        import skops.io as sio
    except ImportError:
        print("skops is not installed: skipped (pip install skops)")
        return
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, Y, h = make_hmc(1000, n_labels=40, random_state=0)
    X[::13, 2] = np.nan
    pipe = make_pipeline(SimpleImputer(), StandardScaler(),
                         ECRMCV(HierarchicalLoss(h), h)).fit(X, Y)
    ours = os.path.join(folder, "p.ecrm")
    save(pipe, ours)
    blob = sio.dumps(pipe)
    trusted = sio.get_untrusted_types(data=blob)  # what a user must agree to trust
    t = {"ecrm save": median_time(lambda: save(pipe, ours), 3),
         "ecrm load": median_time(lambda: load(ours), 3),
         "skops dump": median_time(lambda: sio.dumps(pipe), 3),
         "skops load": median_time(lambda: sio.loads(blob, trusted=trusted), 3)}
    same = np.array_equal(load(ours).predict(X), pipe.predict(X)) and np.array_equal(
        sio.loads(blob, trusted=trusted).predict(X), pipe.predict(X))
    package = Path(ecrm.__file__).parent
    skops_dir = Path(sio.__file__).parent
    print(f"pipeline SimpleImputer + StandardScaler + ECRMCV, m=1000, 40 labels; both "
          f"predict as saved: {same}")
    print(f"{'':<28}{'ecrm':>12}{'skops':>12}")
    print(f"{'file KB':<28}{os.path.getsize(ours) / 1e3:>12.0f}{len(blob) / 1e3:>12.0f}")
    print(f"{'save s (median of 3)':<28}{t['ecrm save']:>12.3f}{t['skops dump']:>12.3f}")
    print(f"{'load s (median of 3)':<28}{t['ecrm load']:>12.3f}{t['skops load']:>12.3f}")
    ours_files = [package / n for n in ("io.py", "_archive.py", "_state.py", "_steps.py")]
    print(f"{'lines of code':<28}{_lines(ours_files):>12}"
          f"{_lines(skops_dir.rglob('*.py')):>12}")
    print(f"types a user must trust: ecrm none (a fixed registry); skops {len(trusted)}: "
          f"{', '.join(trusted)}")

    # a careful tamperer: the scaler's scale_ replaced by zeros of the same shape (re-signed)
    def npy(a) -> bytes:
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        return buf.getvalue()

    zeros = npy(np.zeros(X.shape[1]))
    zin = zipfile.ZipFile(io.BytesIO(blob))
    schema = json.loads(zin.read("schema.json"))
    scaler = schema["content"]["content"]["steps"]["content"][1]["content"][1]
    member = scaler["content"]["content"]["scale_"]["file"]
    edited = io.BytesIO()
    with zipfile.ZipFile(edited, "w") as z:
        for name in zin.namelist():
            z.writestr(name, zeros if name == member else zin.read(name))
    try:
        model = sio.loads(edited.getvalue(), trusted=trusted)
        try:
            P = model.predict(X)
            verdict = f"loads, and predicts ({int(P.sum())} labels on)"
        except ValueError as exc:
            verdict = f"loads; predict then fails: {str(exc).splitlines()[0][:60]}"
    except Exception as exc:  # noqa: BLE001
        verdict = f"refused: {type(exc).__name__}"
    print(f"scaler scale_ set to zeros: skops {verdict}")
    with zipfile.ZipFile(ours) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(members["ecrm-model.json"])
    name = meta["params"]["steps"][1]["items"][1]["state"]["scale_"]["name"]
    members[f"arrays/{name}.npy"] = zeros
    meta["arrays"][name]["sha256"] = hashlib.sha256(zeros).hexdigest()
    members["ecrm-model.json"] = json.dumps(meta).encode()
    members["ecrm-model.sha256"] = hashlib.sha256(members["ecrm-model.json"]).hexdigest().encode()
    edited_path = os.path.join(folder, "edited.ecrm")
    with zipfile.ZipFile(edited_path, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    try:
        load(edited_path)
        print("scaler scale_ set to zeros (re-signed): ecrm loads it")
    except ModelFileError as exc:
        print(f"scaler scale_ set to zeros (re-signed): ecrm refuses: {str(exc)[-60:]}")

    # random bit flips
    with open(ours, "rb") as f:
        ours_blob = f.read()
    bad_path = os.path.join(folder, "flipped.ecrm")

    def load_ours(data: bytes):
        with open(bad_path, "wb") as f:
            f.write(data)
        return load(bad_path)

    ours_out = _outcomes(load_ours, ours_blob, (ModelFileError,), flips)
    clean = (ValueError, zipfile.BadZipFile, sio.exceptions.UntrustedTypesFoundException)
    skops_out = _outcomes(lambda d: sio.loads(d, trusted=trusted), blob, clean, flips)
    print(f"{flips} random bit flips:  ecrm {ours_out}")
    print(f"{'':<22}skops {skops_out}")


def main() -> None:
    print(describe())
    folder = tempfile.mkdtemp()
    against_pickle(folder)
    print()
    against_skops(folder, flips=int(os.environ.get("ECRM_BENCH_FLIPS", "300")))


if __name__ == "__main__":
    main()
