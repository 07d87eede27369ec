"""Arrays plus JSON metadata in one `.npz` file, read without pickle.

This is the only channel between the grader and the processes that run submitted code: what a
child writes is data (numeric arrays and a JSON document), never objects, so reading it back
cannot run anything.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from grader.spec import Case

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


def load_bundle(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    path = Path(path)
    if not path.is_file():
        raise BundleError(f"{path} does not exist")
    if path.stat().st_size > MAX_BUNDLE_BYTES:
        raise BundleError(f"{path} is larger than {MAX_BUNDLE_BYTES // 2**20} MiB")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except Exception as error:  # a corrupt or hostile file: report, never trust
        raise BundleError(f"{path} is not a readable array bundle: {error}") from error
    if META_KEY not in arrays:
        raise BundleError(f"{path} has no metadata")
    try:
        meta = json.loads(arrays.pop(META_KEY).tobytes().decode("utf-8"))
    except ValueError as error:
        raise BundleError(f"{path} has unreadable metadata: {error}") from error
    if not isinstance(meta, dict):
        raise BundleError(f"{path} metadata is not a JSON object")
    for key, value in arrays.items():
        if value.dtype.kind not in "biuf":
            raise BundleError(f"{path}: array {key!r} has non-numeric dtype {value.dtype}")
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
            )
        )
    return cases
