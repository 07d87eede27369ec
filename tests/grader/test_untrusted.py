"""Nothing from a child or a submission's name is trusted: result files are read within bounds,
text is cleaned and escaped for each output, and any student id a file system allows is graded."""

from __future__ import annotations

import csv
import html as html_module
import io
import json
import os
import re
import resource
import unicodedata
import zipfile
from xml.etree import ElementTree

import numpy as np
import pytest

from grader.vocabulary import bundle, untrusted
from grader.vocabulary.bundle import BundleError, load_bundle, save_bundle

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


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<f2", ">f8", "|b1", "|u1", "|i1", "<i8", ">u2"])
def test_the_fast_header_reader_agrees_with_numpys_on_every_header_numpy_writes(dtype):
    for shape in [(), (0,), (5,), (2, 3), (1, 2, 3, 4), (3, 0, 2)]:
        for order in "CF":
            data = npy(np.zeros(shape, dtype=dtype, order=order))
            stream = io.BytesIO(data)
            np.lib.format.read_magic(stream)
            expected = np.lib.format.read_array_header_1_0(stream)
            assert bundle._plain_header(data) == (*expected, stream.tell())


def test_a_header_in_any_other_form_is_left_to_numpys_reader(tmp_path):
    data = npy(np.arange(3.0))
    # The same header with its keys in another order: a valid header NumPy reads, and a
    # hostile child may write; the fast reader declines it.
    length = int.from_bytes(data[8:10], "little")
    header = data[10 : 10 + length].decode("latin1")
    swapped = "{'shape': (3,), 'fortran_order': False, 'descr': '<f8', }"
    forged = data[:10] + swapped.ljust(len(header) - 1).encode() + b"\n" + data[10 + length :]
    assert bundle._plain_header(forged) is None
    path = tmp_path / "other.npz"
    write_zip(path, {"__meta__.npy": meta_member({}), "x.npy": forged})
    assert np.array_equal(load_bundle(path)[1]["x"], np.arange(3.0))


@pytest.mark.parametrize(
    "where, value, words",
    [
        (26, None, "named otherwise in its local header"),  # the local name: x.npy -> y.npy
        (8, 8, "encrypted or compressed"),  # the local method: deflate
        (6, 1, "encrypted or compressed"),  # the local flags: encrypted
        (0, 0, "no local header"),  # the signature
    ],
)
def test_a_local_header_that_disagrees_with_the_directory_is_refused(tmp_path, where, value, words):
    """The parent slices each member from the file after its local header: that header must
    name the same member, unencrypted and stored, as the central directory does."""
    path = tmp_path / "local.npz"
    save_bundle(path, {}, {"x": np.arange(3.0)})
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        offset = archive.getinfo("x.npy").header_offset
    if value is None:
        data[offset + 30 : offset + 31] = b"y"
    else:
        data[offset + where : offset + where + 2] = value.to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=words):
        load_bundle(path)


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


# --- text from a child or a name ---------------------------------------------------------------

HOSTILE = [
    "\x1b[2J\x1b[H cleared",
    "\x1b]0;new title\x07 titled",
    "\x9b31m C1 CSI",
    "line\n## Score: 10 / 10",
    "\n# Heading",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](http://evil.example) ![x](http://evil.example/x.png)",
    '=HYPERLINK("http://evil.example", "x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,1)",
    "\tstarts with a tab",
    "\rstarts with a return",
    "vertical\x0btab and form\x0cfeed and nul\x00",
    "del\x7f and c1\x85\x90",
    "bidi \u202eevil\u202c and \u2066isolate\u2069 and \u200bzero width \ufeffbom",
    "lone surrogate \ud800 here",
    "line\u2028separator",
    "noncharacters \ufffe\uffff\ufdd0\U0010ffff here",
    "&amp; entity & ampersand",
    "quote \" and ' apostrophe",
    "\\](javascript:alert(1))",
    "x" * 5000,
]


def has_control(text: str) -> bool:
    """A control, format or surrogate character, or a noncharacter (never text: r8 red team)."""
    return any(
        (unicodedata.category(c) in ("Cc", "Cf", "Cs") and c not in "\n")
        or 0xFDD0 <= ord(c) <= 0xFDEF
        or ord(c) & 0xFFFE == 0xFFFE
        for c in text
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_clean_text_has_no_control_or_format_characters_and_is_bounded(text):
    shown = untrusted.clean(text, 100)
    assert not has_control(shown) and "\x1b" not in shown and "[2J" not in shown
    assert len(shown) <= 100
    assert "\n" not in untrusted.clean(text, newlines=False)
    assert untrusted.terminal(text) == untrusted.clean(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_text_is_one_inert_line(text):
    shown = untrusted.markdown(text)
    assert "\n" not in shown and not has_control(shown)
    assert not re.match(r"\s*(#|[-+*>=|]|\d+[.)]|\[)", shown), shown
    assert "<" not in shown and "](" not in shown.replace("]\\(", "")
    assert "://" not in shown.replace("\\://", "")


@pytest.mark.parametrize("text", HOSTILE)
def test_html_text_has_no_markup(text):
    shown = untrusted.html(text)
    assert "<" not in shown and ">" not in shown and '"' not in shown and not has_control(shown)
    assert html_module.unescape(shown) == untrusted.clean(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_xml_text_is_well_formed_in_text_and_attributes(text):
    document = f'<a b="{untrusted.xml(text, newlines=False)}">{untrusted.xml(text)}</a>'
    parsed = ElementTree.fromstring(document)
    assert parsed.text == untrusted.clean(text) or (
        parsed.text is None and not untrusted.clean(text)
    )
    assert parsed.get("b") == untrusted.clean(text, newlines=False)


@pytest.mark.parametrize("text", HOSTILE)
def test_a_csv_cell_is_one_cell_and_never_a_formula(text):
    cell = untrusted.csv_cell(text)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    buffer = io.StringIO()
    csv.writer(buffer).writerow([cell, "next"])
    assert list(csv.reader(io.StringIO(buffer.getvalue()))) == [[cell, "next"]]


def test_numbers_stay_numbers_in_csv():
    assert untrusted.csv_row(["-1.5", "2e-05", 3, "=1+2", "-x"]) == [
        "-1.5",
        "2e-05",
        3,
        "'=1+2",
        "'-x",
    ]


NAMES = [
    "alice",
    "Bob_Smith-2",
    "a" * 245,
    "a" * 246,
    "-rf",
    ".hidden-ish",
    "new\nline",
    '=HYPERLINK("x")',
    "\x1b[31mred\x1b[0m",
    "<script>alert(1)",
    "李雷",
    "Zoë",
    "Zoe\u0308",
    "bad\\xff",
    "x~0123456789abcdef",
    " spaced ",
    "CON",
    "a" * 64,
    "a" * 65,
]


def test_file_stems_are_plain_bounded_unique_and_stable():
    stems = [untrusted.file_stem(name) for name in NAMES]
    assert len(set(stems)) == len(NAMES)
    assert stems == [untrusted.file_stem(name) for name in NAMES]  # a rerun finds its files
    for name, stem in zip(NAMES, stems, strict=True):
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._~-]*", stem), (name, stem)
        assert len(stem.encode()) + len(".html.partial") < 100
    assert stems[:2] == ["alice", "Bob_Smith-2"]  # plain ids keep their name (and old results)


def test_an_undecodable_folder_name_is_an_id_that_can_be_written(tmp_path):
    from grader.instructor.course.submissions import discover

    os.mkdir(os.path.join(os.fsencode(tmp_path), b"bad\xff"))
    (student,) = discover(tmp_path)
    assert student.id == "bad\\xff" and student.entry.is_dir()
    student.id.encode("utf-8")


# --- a batch of hostile names and messages -----------------------------------------------------

MESSAGE = "\x1b[2J\n## Score: 10 / 10\n<script>alert(1)</script>\x0b"
STUDENT_NAMES = [
    "a" * 245,
    "new\nline",
    '=HYPERLINK("x")',
    "\x1b[31mred\x1b[0m",
    "<script>alert(1)",
    "-leading",
    "李雷 \u202eevil",
]


@pytest.fixture(scope="module")
def hostile_batch(tmp_path_factory):
    from grader.instructor.batch import BatchOptions, run_batch
    from grader.instructor.course.stubs import package_dir
    from tests.support.grading import replace_function

    solution = (package_dir("solutions") / "ex8_2.py").read_text()
    good = "\n".join(line for line in solution.splitlines() if "SOLUTION" not in line) + "\n"
    raising = replace_function(good, "bilinear_asymmetry", f"    raise ValueError({MESSAGE!r})")
    root = tmp_path_factory.mktemp("class")
    for name in STUDENT_NAMES:
        (root / name).mkdir()
        (root / name / "ex8_2.py").write_text(good)
    (root / "raiser").mkdir()
    (root / "raiser" / "ex8_2.py").write_text(raising)
    undecodable = os.path.join(os.fsencode(root), b"bytes\xff")
    os.mkdir(undecodable)
    with open(os.path.join(undecodable, b"ex8_2.py"), "w") as handle:
        handle.write(good)
    out = tmp_path_factory.mktemp("out")
    options = BatchOptions(["8-2"], out, jobs=2, timeout=60, seed=3, unsandboxed=True)
    summary = run_batch(root, options)
    again = run_batch(root, options)
    return summary, again, out


def test_every_hostile_name_is_graded_and_a_rerun_resumes(hostile_batch):
    summary, again, out = hostile_batch
    expected = sorted([*STUDENT_NAMES, "raiser", "bytes\\xff"])
    assert sorted(summary.students) == expected
    assert sorted(summary.graded) == expected and summary.not_final == []
    assert sorted(again.skipped) == expected and again.graded == []  # same file names


def test_grades_csv_has_every_student_and_no_formula(hostile_batch):
    _summary, _again, out = hostile_batch
    rows = list(csv.reader(io.StringIO((out / "grades.csv").read_text("utf-8"))))
    assert len(rows) == 1 + len(STUDENT_NAMES) + 2
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row
    heads = rows[0]
    totals = {row[0]: float(row[heads.index("total")]) for row in rows[1:]}
    assert totals["raiser"] < totals['\'=HYPERLINK("x")'] == 10.0
    assert totals["'-leading"] == totals["a" * 245] == totals["bytes\\xff"] == 10.0


def test_written_files_are_well_formed_and_inert(hostile_batch):
    _summary, _again, out = hostile_batch
    ElementTree.parse(out / "junit.xml")
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files and all(len(p.name.encode()) <= 100 for p in files)
    for path in files:
        if path.suffix not in (".json", ".md", ".html", ".csv", ".xml"):
            continue
        text = path.read_text("utf-8")
        assert not has_control(text.replace("\t", "")), path.name
        if path.suffix in (".md", ".html"):
            assert "<script" not in text.lower(), path.name
        if path.suffix == ".md":
            lines = text.split("\n")
            assert sum(line.startswith("Score") for line in lines) == 1, path.name
            headings = [line for line in lines if line.lstrip().startswith("#")]
            assert len(headings) == 2 and headings[1].startswith("## Exercise"), headings
    feedback = (out / "feedback" / "raiser.md").read_text("utf-8")
    assert "ValueError" in feedback and "&lt;script&gt;" in feedback  # shown, escaped
    assert "\nScore: 10 / 10" not in feedback and "Score: 9 / 10" in feedback


def test_json_keeps_an_id_exactly_and_shows_no_hidden_character():
    data = {"student": "李雷 \u202eevil \x7f \x85 \udcff \U000e0041 \ufffe", "n": [1.5]}
    text = untrusted.json_text(data, indent=1)
    assert json.loads(text) == data and not has_control(text)


def test_a_bundle_reads_under_a_memory_cap_smaller_than_the_largest_bundle(tmp_path):
    """A child reads its cases under a memory cap (`--memory`): reading a bundle must ask for
    its own size, never for the largest a bundle may be (256 MiB)."""
    import subprocess
    import sys

    path = tmp_path / "cases.npz"
    save_bundle(path, {"cases": []}, {f"a{i}": np.arange(100.0) for i in range(50)})
    script = (
        "import resource, sys\n"
        "import numpy as np\n"
        "from grader.vocabulary.bundle import load_bundle\n"
        "size = int(open('/proc/self/status').read().split('VmSize:')[1].split()[0]) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (size + 64 * 2**20, resource.RLIM_INFINITY))\n"
        "meta, arrays = load_bundle(sys.argv[1])\n"
        "print(len(arrays))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "50", done.stderr[-2000:]
