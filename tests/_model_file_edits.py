"""Edits of saved model files for the tests of the loader's checks: members read and written
back, the metadata signed again so that only the content checks can catch an edit."""

from __future__ import annotations

import hashlib
import io
import json
import warnings
import zipfile

import numpy as np

from ecrm.model_files import _archive

META, DIGEST = "ecrm-model.json", "ecrm-model.sha256"


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _write(path, members, compression=zipfile.ZIP_DEFLATED):
    """A zip of ``members`` (a dict, or (name, bytes) pairs to allow duplicates)."""
    items = members.items() if isinstance(members, dict) else members
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns on duplicate names
        with zipfile.ZipFile(path, "w", compression=compression) as zf:
            for name, data in items:
                zf.writestr(name, data)
    return path


def _resign(members: dict[str, bytes]) -> dict[str, bytes]:
    """Record every array's digest in the metadata and sign the metadata, as a careful forger
    would, so that the container checks are what refuses the file."""
    meta = json.loads(members[META])
    for name, data in members.items():
        if name.startswith("arrays/"):
            key = name[len("arrays/"):-len(".npy")]
            meta["arrays"][key]["sha256"] = hashlib.sha256(data).hexdigest()
    members[META] = json.dumps(meta).encode()
    return _sign(members)


def _sign(members: dict[str, bytes]) -> dict[str, bytes]:
    members[DIGEST] = hashlib.sha256(members[META]).hexdigest().encode()
    return members


def _tampered(path, out, edit):
    """``path`` with ``edit(meta, arrays)`` applied (``arrays``: name -> ndarray, edited or
    replaced in place), every array's digest, shape and dtype recorded and the metadata
    signed again."""
    members = _members(path)
    meta = json.loads(members[META])
    arrays = {name[len("arrays/"):-len(".npy")]: np.load(io.BytesIO(blob))
              for name, blob in members.items() if name.startswith("arrays/")}
    edit(meta, arrays)
    for name, a in arrays.items():
        blob = _archive.npy_bytes(np.asarray(a))
        members[f"arrays/{name}.npy"] = blob
        meta["arrays"][name] = {"sha256": hashlib.sha256(blob).hexdigest(),
                                "shape": list(np.shape(a)), "dtype": np.asarray(a).dtype.str}
    members[META] = json.dumps(meta).encode()
    return _write(out, _sign(members))
