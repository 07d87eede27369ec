"""Nothing from a child or a submission's name is trusted: result files are read within bounds,
text is cleaned and escaped for each output, and any student id a file system allows is graded."""

from __future__ import annotations

import io
import json
import os
import resource
import zipfile

import numpy as np
import pytest

from grader.engine import bundle
from grader.engine.bundle import BundleError, load_bundle, save_bundle

# --- result files ------------------------------------------------------------------------------


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def meta_member(meta) -> bytes:
    return npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))


def write_zip(path, members: dict[str, bytes], deflated: tuple[str, ...] = ()) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            kind = zipfile.ZIP_DEFLATED if name in deflated else zipfile.ZIP_STORED
            archive.writestr(name, data, compress_type=kind)


def test_a_saved_bundle_is_stored_and_reads_back_writable(tmp_path):
    arrays = {
        "x": np.arange(6.0).reshape(2, 3),
        "f": np.asfortranarray(np.ones((2, 3))),
        "b": np.array([True]),
    }
    save_bundle(tmp_path / "ok.npz", {"cases": [{"a": 1}]}, arrays)
    with zipfile.ZipFile(tmp_path / "ok.npz") as archive:
        assert {m.compress_type for m in archive.infolist()} == {zipfile.ZIP_STORED}
    meta, read = load_bundle(tmp_path / "ok.npz")
    assert meta == {"cases": [{"a": 1}]}
    for key, value in arrays.items():
        assert read[key].dtype == value.dtype and np.array_equal(read[key], value)
    read["x"][0, 0] = 5.0  # the grader may work on them in place


def test_a_zip_bomb_is_refused_before_it_inflates(tmp_path):
    path = tmp_path / "bomb.npz"
    huge = npy(np.zeros(2**27, dtype=np.uint8))  # 128 MiB of zeros: a few hundred KB deflated
    write_zip(path, {"__meta__.npy": meta_member({}), "x.npy": huge}, ("x.npy",))
    assert path.stat().st_size < 2**20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(BundleError, match="'x' is compressed"):
        load_bundle(path)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024, grown_kib  # never inflated


def test_a_compressed_member_is_refused_even_when_small(tmp_path):
    path = tmp_path / "small.npz"
    write_zip(path, {"__meta__.npy": meta_member({}), "x.npy": npy(np.ones(3))}, ("x.npy",))
    with pytest.raises(BundleError, match="compressed"):
        load_bundle(path)


def test_a_member_whose_header_lies_about_its_size_is_refused(tmp_path):
    path = tmp_path / "liar.npz"
    write_zip(path, {"__meta__.npy": meta_member({}), "x.npy": npy(np.ones(3))})
    data = bytearray(path.read_bytes())
    # The uncompressed size in x.npy's entry of the central directory (the last entry): a GiB.
    entry = data.rindex(b"PK\x01\x02")
    data[entry + 24 : entry + 28] = (2**30).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match="declares 1073741824 bytes"):
        load_bundle(path)


@pytest.mark.parametrize(
    "array, words",
    [
        (np.array([object()], dtype=object), "non-numeric dtype object"),
        (np.array(["a string"]), "non-numeric dtype <U8"),
        (np.array([b"bytes"]), "non-numeric dtype |S5"),
        (np.zeros(2, dtype="V4"), "non-numeric dtype |V4"),
        (np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]), "non-numeric dtype"),
        (np.array([1 + 2j]), "non-numeric dtype complex128"),
        (np.array(["2024-01-01"], dtype="datetime64[D]"), "non-numeric dtype"),
    ],
)
def test_only_numeric_and_boolean_arrays_are_read(tmp_path, array, words):
    path = tmp_path / "typed.npz"
    write_zip(path, {"__meta__.npy": meta_member({}), "x.npy": npy(array)})
    with pytest.raises(BundleError, match=words.replace("|", r"\|").replace("<", "<")):
        load_bundle(path)


def forged_header(shape, dtype="<f8", data=b"") -> bytes:
    buffer = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + data


@pytest.mark.parametrize(
    "shape, words",
    [
        ((2**40, 2**40), "shape out of bounds"),
        ((1,) * 40, "shape out of bounds"),
        ((10**6,), "not as long as its shape"),  # declares 8 MB, holds 16 bytes
        ((0, 2**62), "shape out of bounds"),
    ],
)
def test_a_declared_shape_never_allocates_more_than_the_file_holds(tmp_path, shape, words):
    path = tmp_path / "shape.npz"
    write_zip(
        path, {"__meta__.npy": meta_member({}), "x.npy": forged_header(shape, data=b"\0" * 16)}
    )
    with pytest.raises(BundleError, match=words):
        load_bundle(path)


def test_metadata_is_bounded_in_size_and_depth(tmp_path, monkeypatch):
    deep = tmp_path / "deep.npz"
    nested = {"a": 1}
    for _ in range(20):
        nested = {"a": [nested]}
    save_bundle(deep, nested, {})
    monkeypatch.setattr(bundle, "MAX_META_DEPTH", 10)
    with pytest.raises(BundleError, match="nested deeper than 10"):
        load_bundle(deep)
    monkeypatch.setattr(bundle, "MAX_META_DEPTH", 64)
    assert load_bundle(deep)[0] == nested

    big = tmp_path / "big.npz"
    save_bundle(big, {"text": "x" * 5000}, {})
    monkeypatch.setattr(bundle, "MAX_META_BYTES", 4096)
    with pytest.raises(BundleError, match="metadata is not a JSON text of at most 4096 bytes"):
        load_bundle(big)


def test_metadata_must_be_a_byte_text(tmp_path):
    path = tmp_path / "meta.npz"
    write_zip(path, {"__meta__.npy": npy(np.ones((2, 2)))})
    with pytest.raises(BundleError, match="metadata is not a JSON text"):
        load_bundle(path)


def test_too_many_members_and_duplicates_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "many.npz"
    save_bundle(path, {}, {f"a{i}": np.ones(1) for i in range(20)})
    monkeypatch.setattr(bundle, "MAX_MEMBERS", 10)
    with pytest.raises(BundleError, match="holds 21 arrays"):
        load_bundle(path)
    monkeypatch.undo()
    twice = tmp_path / "twice.npz"
    with zipfile.ZipFile(twice, "w") as archive:
        archive.writestr("__meta__.npy", meta_member({}))
        archive.writestr("x.npy", npy(np.ones(1)))
        with pytest.warns(UserWarning):
            archive.writestr("x.npy", npy(np.zeros(1)))
    with pytest.raises(BundleError, match="not one array of its own"):
        load_bundle(twice)


def test_a_file_too_large_on_disk_is_refused_before_it_is_opened_as_a_zip(tmp_path, monkeypatch):
    path = tmp_path / "large.npz"
    save_bundle(path, {}, {"x": np.zeros(1000)})
    monkeypatch.setattr(bundle, "MAX_BUNDLE_BYTES", 1024)
    with pytest.raises(BundleError, match="larger than"):
        load_bundle(path)


def test_a_symlinked_result_file_is_refused(tmp_path):
    real = tmp_path / "real.npz"
    save_bundle(real, {}, {})
    (tmp_path / "link.npz").symlink_to(real)
    with pytest.raises(BundleError, match="could not be read"):
        load_bundle(tmp_path / "link.npz")
    os.symlink("/dev/zero", tmp_path / "zero.npz")
    with pytest.raises(BundleError, match="could not be read"):
        load_bundle(tmp_path / "zero.npz")
