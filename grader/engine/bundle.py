"""Arrays plus JSON metadata in one `.npz` file, read without pickle.

This is the only channel between the grader and the processes that run submitted code: what a
child writes is data (numeric arrays and a JSON document), never objects, so reading it back
cannot run anything.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np

from grader.engine.spec import Case

META_KEY = "__meta__"
MAX_BUNDLE_BYTES = 256 * 1024 * 1024


class BundleError(ValueError):
    """A bundle that is missing, too large, or not made of plain numeric arrays and JSON."""


def save_bundle(path: str | os.PathLike, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write atomically, so a reader never sees half a file."""
    path = Path(path)
    encoded = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    temporary = path.with_name(path.name + ".partial")
    with open(temporary, "wb") as handle:
        np.savez(handle, **{META_KEY: encoded}, **arrays)
    os.replace(temporary, path)


def open_plain_file(path: str | os.PathLike):
    """Open a file a child may have written, for reading: never through a link it left (a
    symbolic link, or a hard link to a file elsewhere), never a FIFO that would hang the reader.
    Raises OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise OSError(f"{Path(path).name} is not a plain file")
    return os.fdopen(fd, "rb")


def load_bundle(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    path = Path(path)
    name = path.name  # messages may reach a student: no folders of the grader's in them
    try:
        handle = open_plain_file(path)
    except OSError as error:
        raise BundleError(f"{name} could not be read: {error.strerror or error}") from None
    with handle:
        if os.fstat(handle.fileno()).st_size > MAX_BUNDLE_BYTES:
            raise BundleError(f"{name} is larger than {MAX_BUNDLE_BYTES // 2**20} MiB")
        try:
            with np.load(handle, allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
        except Exception as error:  # a corrupt or hostile file: report, never trust
            raise BundleError(f"{name} is not a readable array bundle: {error}") from None
    if META_KEY not in arrays:
        raise BundleError(f"{name} has no metadata")
    try:
        meta = json.loads(arrays.pop(META_KEY).tobytes().decode("utf-8"))
    except (ValueError, RecursionError) as error:  # nested a million deep, say
        raise BundleError(f"{name} has unreadable metadata: {type(error).__name__}") from None
    if not isinstance(meta, dict):
        raise BundleError(f"{name} metadata is not a JSON object")
    for key, value in arrays.items():
        if value.dtype.kind not in "biuf":
            raise BundleError(f"{name}: array {key!r} has non-numeric dtype {value.dtype}")
    return meta, arrays


def cases_to_bundle(cases: list[Case]) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Split cases into JSON-able descriptions and named arrays."""
    described, arrays = [], {}
    for index, case in enumerate(cases):
        described.append(
            {
                "target": case.target,
                "kind": case.kind,
                "label": case.label,
                "inputs": list(case.inputs),
                "weights": list(case.weights),
                "params": case.params,
                "dtype": case.dtype,
                "has_upstream": case.upstream is not None,
                "rtol": case.rtol,
                "atol": case.atol,
                "hidden": case.hidden,
                "raises": case.raises,
                "promise": case.promise,
                "variant_of": case.variant_of,
                "relation": case.relation,
            }
        )
        for name, value in case.inputs.items():
            arrays[f"case{index}/input/{name}"] = value
        for name, value in case.weights.items():
            arrays[f"case{index}/weight/{name}"] = value
        if case.upstream is not None:
            arrays[f"case{index}/upstream"] = case.upstream
    return described, arrays


def cases_from_bundle(described: list[dict], arrays: dict[str, np.ndarray]) -> list[Case]:
    cases = []
    for index, info in enumerate(described):
        cases.append(
            Case(
                target=info["target"],
                kind=info["kind"],
                label=info["label"],
                inputs={name: arrays[f"case{index}/input/{name}"] for name in info["inputs"]},
                params=dict(info["params"]),
                weights={name: arrays[f"case{index}/weight/{name}"] for name in info["weights"]},
                upstream=arrays.get(f"case{index}/upstream") if info["has_upstream"] else None,
                dtype=info["dtype"],
                rtol=info.get("rtol"),
                atol=info.get("atol"),
                hidden=info.get("hidden", False),
                raises=info.get("raises", ""),
                promise=info.get("promise", ""),
                variant_of=info.get("variant_of", -1),
                relation=info.get("relation", ""),
            )
        )
    return cases
