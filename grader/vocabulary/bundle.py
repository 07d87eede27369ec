"""Arrays plus JSON metadata in one `.npz` file, read without pickle.

This is the only channel between the grader and the processes that run submitted code: what a
child writes is data (numeric arrays and a JSON document), never objects, so reading it back
cannot run anything. Reading is also bounded by construction, because a child controls every
byte of the file: members are stored (never inflated), each header's sizes are checked before
a byte is read, and each array's dtype and shape are checked before it is made. A file that
breaks any of this is a BundleError (the child's crash, never the grader's).
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import zipfile
from pathlib import Path

import numpy as np
from numpy.lib import format as npy

from grader.vocabulary.spec import Case

META_KEY = "__meta__"
MAX_BUNDLE_BYTES = 256 * 1024 * 1024
# Bounds on what one bundle may hold, each checked before anything is read or allocated.
MAX_MEMBERS = 20_000
MAX_MEMBER_BYTES = 128 * 1024 * 1024
MAX_META_BYTES = 32 * 1024 * 1024
MAX_META_DEPTH = 64
MAX_DIMS = 16
# Numeric and boolean arrays only: no objects (pickle), strings, void or structured records.
NUMERIC_KINDS = "biuf"


class BundleError(ValueError):
    """A bundle that is missing, too large, or not made of plain numeric arrays and JSON."""


def save_bundle(path: str | os.PathLike, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write atomically, so a reader never sees half a file; uncompressed (np.savez stores),
    because load_bundle refuses to inflate anything."""
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
    """The metadata and arrays of a bundle; BundleError if it is anything but the plain file
    save_bundle writes, within the bounds above."""
    path = Path(path)
    name = path.name  # messages may reach a student: no folders of the grader's in them
    try:
        handle = open_plain_file(path)
    except OSError as error:
        raise BundleError(f"{name} could not be read: {error.strerror or error}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_BUNDLE_BYTES:
            raise BundleError(f"{name} is larger than {MAX_BUNDLE_BYTES // 2**20} MiB")
        try:
            arrays = _read_members(handle, size, name)
        except BundleError:
            raise
        except Exception as error:  # a corrupt or hostile file: report, never trust
            raise BundleError(f"{name} is not a readable array bundle: {error}") from None
    if META_KEY not in arrays:
        raise BundleError(f"{name} has no metadata")
    encoded = arrays.pop(META_KEY)
    if encoded.dtype != np.uint8 or encoded.ndim != 1 or encoded.size > MAX_META_BYTES:
        raise BundleError(f"{name} metadata is not a JSON text of at most {MAX_META_BYTES} bytes")
    try:
        meta = json.loads(encoded.tobytes().decode("utf-8"))
    except (ValueError, RecursionError) as error:  # nested a million deep, say
        raise BundleError(f"{name} has unreadable metadata: {type(error).__name__}") from None
    if not isinstance(meta, dict):
        raise BundleError(f"{name} metadata is not a JSON object")
    if _depth(meta) > MAX_META_DEPTH:
        raise BundleError(f"{name} metadata is nested deeper than {MAX_META_DEPTH}")
    return meta, arrays


def _read_members(handle, size: int, name: str) -> dict[str, np.ndarray]:
    """Every `.npy` member, each checked from its zip and array headers before it is read."""
    # One read of the size the file had when it was checked (never more, were it to grow), then
    # slices. Exactly that size: a read allocates what it is asked for first, and a child reads
    # its cases under a memory cap.
    whole = handle.read(size)
    with zipfile.ZipFile(io.BytesIO(whole)) as archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise BundleError(f"{name} holds {len(members)} arrays (at most {MAX_MEMBERS})")
        total, arrays = 0, {}
        for member in members:
            key = member.filename.removesuffix(".npy")
            if member.compress_type != zipfile.ZIP_STORED:
                raise BundleError(f"{name}: {key!r} is compressed; bundles are stored as is")
            if member.file_size != member.compress_size or member.file_size > MAX_MEMBER_BYTES:
                raise BundleError(
                    f"{name}: {key!r} declares {member.file_size} bytes (stored: at most "
                    f"{MAX_MEMBER_BYTES} bytes, the same compressed and not)"
                )
            total += member.file_size
            if total > MAX_BUNDLE_BYTES:
                raise BundleError(f"{name} holds more than {MAX_BUNDLE_BYTES // 2**20} MiB")
            if not member.filename.endswith(".npy") or key in arrays:
                raise BundleError(f"{name}: {member.filename!r} is not one array of its own")
            data = _stored(whole, member, name, key)
            if len(data) != member.file_size:
                raise BundleError(f"{name}: {key!r} is not the size its header says")
            arrays[key] = _array(data, name, key)
    return arrays


def _stored(whole: bytes, member: zipfile.ZipInfo, name: str, key: str) -> bytes:
    """A stored member's bytes, sliced from the file after its local header (which must name
    the same file, unencrypted and stored, as the central directory does); what zipfile's own
    reader checks, without its file object and CRC pass per member, a third of the parent's
    reading of a bundle of a few hundred small arrays."""
    offset = member.header_offset
    header = whole[offset : offset + 30]
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise BundleError(f"{name}: {key!r} has no local header where the directory says")
    flags = int.from_bytes(header[6:8], "little")
    if flags & 0x1 or int.from_bytes(header[8:10], "little") != zipfile.ZIP_STORED:
        raise BundleError(f"{name}: {key!r} is encrypted or compressed; bundles are stored as is")
    name_length = int.from_bytes(header[26:28], "little")
    extra_length = int.from_bytes(header[28:30], "little")
    local_name = whole[offset + 30 : offset + 30 + name_length]
    encoding = "utf-8" if flags & 0x800 else "cp437"
    if local_name.decode(encoding, "replace") != member.orig_filename:
        raise BundleError(f"{name}: {key!r} is named otherwise in its local header")
    start = offset + 30 + name_length + extra_length
    return whole[start : start + member.file_size]


# The header NumPy's own writer gives a numeric array (format 1.0): read by this pattern, a
# twentieth of the cost of NumPy's reader (which parses it as a Python literal), since a
# batch's parent reads every case's arrays of every child. Anything else, a hostile child's
# header included, goes to NumPy's reader and its checks.
_PLAIN_MAGIC = b"\x93NUMPY\x01\x00"
_PLAIN_HEADER = re.compile(
    rb"\{'descr': '([<>|][biuf][0-9]{1,2})', 'fortran_order': (False|True), "
    rb"'shape': \(((?:[0-9]{1,19}, )*(?:[0-9]{1,19},?)?)\), \} *\n"
)


def _plain_header(data: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int] | None:
    """(shape, fortran order, dtype, where the data start) of a header NumPy's writer made for
    a numeric array; None for any other."""
    if data[:8] != _PLAIN_MAGIC or len(data) < 10:
        return None
    end = 10 + int.from_bytes(data[8:10], "little")
    found = _PLAIN_HEADER.fullmatch(data, 10, end)
    if found is None or len(data) < end:
        return None
    try:
        dtype = np.dtype(found[1].decode("ascii"))
    except TypeError:  # a size no dtype has ('<f3')
        return None
    shape = tuple(int(size) for size in found[3].split(b",") if size.strip())
    return shape, found[2] == b"True", dtype, end


def _array(data: bytes, name: str, key: str) -> np.ndarray:
    """One `.npy` member: its header checked (numeric dtype, bounded shape, the data exactly
    as long as they say) before the array is made, as a writable copy."""
    plain = _plain_header(data)
    if plain is not None:
        shape, fortran, dtype, offset = plain
    else:
        stream = io.BytesIO(data)
        version = npy.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(stream)
        else:
            raise BundleError(f"{name}: {key!r} has an array header of version {version}")
        offset = stream.tell()
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise BundleError(f"{name}: array {key!r} has non-numeric dtype {dtype}")
    if len(shape) > MAX_DIMS or any(size > MAX_MEMBER_BYTES for size in shape):
        raise BundleError(f"{name}: array {key!r} has a shape out of bounds")
    count = 1
    for size in shape:
        count *= size
    if count * dtype.itemsize != len(data) - offset:
        raise BundleError(f"{name}: array {key!r} is not as long as its shape {shape} says")
    flat = np.frombuffer(bytearray(data[offset:]), dtype=dtype, count=count)
    return flat.reshape(shape, order="F" if fortran else "C")


def _depth(value) -> int:
    """How deeply a JSON value nests, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > MAX_META_DEPTH:
                break
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def cases_to_bundle(
    cases: list[Case], answer_codes: bool = False
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Split cases into JSON-able descriptions and named arrays. A training case's answer code
    and position code (`Case.answer_code`, `Case.position_code`) are the grader's secrets: they
    are written only where `answer_codes` asks (the grader's own files), never into what a child
    reads."""
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
                "first_call": list(case.first_call),
                "training": case.training,
            }
        )
        for name, value in case.first_call.items():
            arrays[f"case{index}/first/{name}"] = value
        for name, value in case.inputs.items():
            arrays[f"case{index}/input/{name}"] = value
        for name, value in case.weights.items():
            arrays[f"case{index}/weight/{name}"] = value
        if case.upstream is not None:
            arrays[f"case{index}/upstream"] = case.upstream
        if answer_codes and case.answer_code is not None:
            arrays[f"case{index}/answer_code"] = case.answer_code
        if answer_codes and case.position_code is not None:
            arrays[f"case{index}/position_code"] = case.position_code
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
                first_call={
                    name: arrays[f"case{index}/first/{name}"] for name in info.get("first_call", [])
                },
                training=dict(info.get("training") or {}),
                answer_code=arrays.get(f"case{index}/answer_code"),
                position_code=arrays.get(f"case{index}/position_code"),
            )
        )
    return cases
