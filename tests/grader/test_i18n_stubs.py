"""The Chinese stubs (issue 18): every docstring and comment a student reads is translated, the
code around them is the English stub's token for token, and the translation machinery keeps any
text valid Python (pure Python: no grading, no TensorFlow)."""

from __future__ import annotations

import ast
import io
import json
import tokenize

import pytest

from grader.i18n import display_width
from grader.instructor.course.stubs import (
    CLOSING,
    make_stub,
    package_dir,
    stub_texts,
    translate_stub_texts,
    wrap,
)
from grader.locale import catalog
from grader.records import EXERCISES

RECORDS = list(EXERCISES.values())


def _has_chinese(text: str) -> bool:
    """Chinese characters or punctuation: a docstring that is a signature may differ from the
    English in its full stop only."""
    return any(
        "\u4e00" <= character <= "\u9fff" or "\u3000" <= character <= "\u303f" for character in text
    )


def _stub(record, language: str = "") -> str:
    folder = package_dir("exercises") / language if language else package_dir("exercises")
    return (folder / record.file).read_text(encoding="utf-8")


def _docstring_nodes(tree: ast.Module) -> list[ast.Constant]:
    nodes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    nodes.append(first.value)
    return nodes


def _code_tokens(source: str) -> list[tuple[int, str]]:
    """The tokens of a module without its comments, its docstrings, the messages of its
    NotImplementedError and the line breaks that only layout makes (NL)."""
    tree = ast.parse(source)
    texts = {(node.lineno, node.col_offset) for node in _docstring_nodes(tree)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            texts |= {(arg.lineno, arg.col_offset) for arg in node.exc.args}
    kept = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL):
            continue
        line, column = token.start
        # tokenize counts characters, ast counts UTF-8 bytes
        byte_column = len(token.line[:column].encode("utf-8"))
        if token.type == tokenize.STRING and (line, byte_column) in texts:
            continue
        kept.append((token.type, token.string))
    return kept


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.id)
def test_a_chinese_stub_is_the_english_stub_token_for_token_but_its_texts(record):
    english, chinese = _stub(record), _stub(record, "zh")
    assert ast.dump(ast.parse(chinese)) != ast.dump(ast.parse(english))  # translated at all
    assert _code_tokens(chinese) == _code_tokens(english)


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.id)
def test_every_docstring_and_comment_of_a_chinese_stub_is_chinese(record):
    """Fails when a docstring or a comment of a stub has no translation (it stays English)."""
    chinese = _stub(record, "zh")
    untranslated = [
        node.value[:60]
        for node in _docstring_nodes(ast.parse(chinese))
        if not _has_chinese(node.value)
    ]
    for token in tokenize.generate_tokens(io.StringIO(chinese).readline):
        words = token.string.lstrip("#").strip()
        if token.type == tokenize.COMMENT and set(words) - set("-=#*~ "):
            if not _has_chinese(words):
                untranslated.append(token.string)
    assert untranslated == [], record.file


def test_the_chinese_notebook_cells_carry_the_chinese_docstrings():
    record = EXERCISES["8-2"]
    notebook = json.loads(
        (package_dir("exercises") / "zh" / "ex8_2.ipynb").read_text(encoding="utf-8")
    )
    code = "".join("".join(cell["source"]) for cell in notebook["cells"])
    assert "缩放点积打分函数，NNDL (8.4)：s(q, k) = qᵀk / √d。" in code
    assert "已给出：不属于练习。保持权重的名称 `kernel` 不变。" in code
    assert "Scaled dot-product score" not in code and record.file == "ex8_2.py"


def test_a_docstring_without_its_translation_fails_the_catalog_check(monkeypatch):
    english = "Scaled dot-product score, NNDL (8.4): s(q, k) = qᵀk / √d."
    read = catalog.read

    def without_the_docstring(path):
        found = read(path)
        for message in list(found):
            if isinstance(message.id, str) and message.id.startswith(english):
                found.delete(message.id)
        return found

    monkeypatch.setattr(catalog, "read", without_the_docstring)
    problems = catalog.problems("zh")
    assert any(p.startswith("zh: no translation of") and english[:40] in p for p in problems)


SAMPLE = '''"""Task."""


# --- a heading ---------------------------------------
#
# A comment that runs
# over two lines.
X = 1  # after code: not a text of its own
# noqa: a pragma for a tool


class Layer:
    """One line."""

    def call(self, x):
        """First line.

        More, with ``quotes"`` and a backslash \\\\ in it.
        """
        # BEGIN SOLUTION: the hint
        # a comment of the answer
        return x
        # END SOLUTION
'''


def test_stub_texts_are_docstrings_comment_blocks_and_headings_not_answers_or_pragmas():
    texts = [found.text for found in stub_texts(make_stub(SAMPLE, "8-0"))]
    assert texts == [
        "a heading",
        "A comment that runs over two lines.",
        "One line.",
        'First line.\n\nMore, with ``quotes"`` and a backslash \\ in it.',
    ]
    # What the catalog extracts from a solution: the task, the hints, then the stub's texts.
    assert list(catalog.solution_texts(SAMPLE)) == ["Task.", "the hint", *texts]


def _fake_translation(text: str) -> str:
    """A translation with everything that could break the quoting or the layout."""
    return f'译文：{text}\n\n第二段，带 """ 三引号、反斜杠 \\ 和结尾的引号"'


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.id)
def test_any_translation_gives_valid_python_with_the_same_code(record):
    english = _stub(record)
    translated = translate_stub_texts(english, _fake_translation)
    assert _code_tokens(translated) == _code_tokens(english)
    tree = ast.parse(translated)
    originals = [found.text for found in stub_texts(english)]
    docstrings = [
        ast.get_docstring(node, clean=True)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and ast.get_docstring(node)
    ]
    assert docstrings, record.file
    for docstring in docstrings:
        assert docstring.startswith("译文：") and docstring.endswith('结尾的引号"')
        assert docstring.partition("：")[2].partition("\n\n第二段")[0] in originals


def test_an_untranslated_text_leaves_the_stub_byte_for_byte():
    for record in RECORDS:
        english = _stub(record)
        assert translate_stub_texts(english, lambda text: text) == english, record.file


def test_a_translated_comment_block_is_rewrapped_to_the_line_length():
    source = "def f():\n    # one\n    # two\n    return 1\n"
    translation = "注意力分布是在各个键上的 softmax，" * 8
    translated = translate_stub_texts(source, lambda text: translation)
    comments = [line for line in translated.splitlines() if line.lstrip().startswith("#")]
    assert len(comments) > 1
    assert all(line.startswith("    # ") and display_width(line) <= 100 for line in comments)
    words = "".join(line[6:] for line in comments)
    assert "".join(words.split()) == "".join(translation.split())
    assert translated.endswith("    return 1\n")


@pytest.mark.parametrize(
    "text, width",
    [
        ("the scores of every query with every key, one per position " * 3, 30),
        ("栈中保存值 v_1 … v_T（v_1 在栈底，v_T 在栈顶），以及它们的强度。" * 3, 24),
    ],
)
def test_wrap_keeps_every_word_fits_the_width_and_starts_no_line_with_closing_punctuation(
    text, width
):
    lines = wrap(text, width)
    assert all(display_width(line) <= width for line in lines)
    assert not any(line[0] in CLOSING for line in lines)
    assert "".join("".join(lines).split()) == "".join(text.split())
    assert len(lines) > 1
