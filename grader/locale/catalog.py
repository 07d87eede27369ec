"""Keep the message catalogs in step with the kit: extract, update, compile, check.

    python -m grader.locale.catalog            # update attnkit.pot, every .po, compile the .mo
    python -m grader.locale.catalog --check    # exit 1 if a message lacks a translation or a
                                               # .mo differs from its .po (CI runs the tests)

The messages of the kit (domain "attnkit") come from four places, configured in
pyproject.toml under [tool.grader.catalog]:
- the code: every `_("...")` / `n_("...", "...", n)` call, found by Babel's Python extractor
  (what `pybabel extract -k _ -k n_:1,2` does);
- the command line's help texts, walked from the Click commands (docstrings stay plain);
- the records, walked as loaded: titles, statements, part descriptions, mistakes' names and
  explanations, properties' names, written parts' prompts (records stay data, unmarked);
- the solutions: each `# BEGIN SOLUTION: <hint>` (the stubs' NotImplementedError text), each
  module's docstring (the task text at the top of a stub), and the docstrings and comments of
  each stub (`grader.instructor.course.stubs.stub_texts`).
Click's own messages (domain "messages") are translated by hand in messages.po; they are not
extracted, so a new Click release cannot break the build (tests check what a student sees).

The .mo files are committed: the grader needs no Babel at run time, only the standard
`gettext`; the tests fail when a .mo differs from its .po. Babel (a dev dependency) is needed to
run this module.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import io
import re
import string
from collections.abc import Iterable, Iterator
from pathlib import Path

from grader.i18n import DOMAIN, LOCALE_DIR
from grader.kit import KIT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

_EPOCH = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
HINT = re.compile(r"^\s*# BEGIN SOLUTION:\s*(?P<hint>.*\S)\s*$")
# str.format fields ({name}, {value:g}, {!r}) and %-style ones (%(name)s, %s).
PERCENT = re.compile(r"%(?:\((?P<name>\w+)\))?[#0 +-]*\d*(?:\.\d+)?[sdifgr]")


def settings() -> dict:
    document = tomllib.loads((KIT / "pyproject.toml").read_text(encoding="utf-8"))
    return document["tool"]["grader"]["catalog"]


def _keywords(specs: Iterable[str]) -> dict:
    keywords = {}
    for spec in specs:
        name, _, positions = spec.partition(":")
        keywords[name] = tuple(int(p) for p in positions.split(",")) if positions else None
    return keywords


def code_messages(config: dict) -> Iterator[tuple[str | tuple[str, str], str]]:
    """(msgid or (singular, plural), file) of every marked call in the configured folders."""
    from babel.messages.extract import extract_from_dir

    for folder in config["code"]:
        found = extract_from_dir(
            str(KIT / folder),
            method_map=[("**.py", "python")],
            keywords=_keywords(config["keywords"]),
            comment_tags=(),
        )
        for filename, _lineno, message, _comments, _context in found:
            yield message, f"{folder}/{filename}"


def record_texts(record) -> Iterator[str]:
    """Every text of a record a student reads, in the record's order."""
    yield from (record.title, record.section, record.summary)
    for part in record.parts:
        yield part.description
        for mistake in part.mistakes:
            yield from (mistake.name, mistake.explanation)
        for prop in part.properties:
            yield prop.name
    for written in record.written:
        yield written.prompt


def record_messages() -> Iterator[tuple[str, str]]:
    from grader.records import EXERCISES

    for record in EXERCISES.values():
        for text in record_texts(record):
            if text:
                yield text, f"grader/records/{record.file}"


def solution_texts(source: str) -> Iterator[str]:
    """The module docstring of a solution file, the hints of its BEGIN SOLUTION markers, then
    every docstring and comment block of its stub, as `make_translated_stub` looks them up."""
    from grader.instructor.course.stubs import make_stub, stub_texts

    docstring = ast.get_docstring(ast.parse(source), clean=False)
    if docstring:
        yield docstring
    for line in source.splitlines():
        match = HINT.match(line)
        if match:
            yield match["hint"]
    # From the stub, not the solution: the comments of the answers are not in it.
    for found in stub_texts(make_stub(source, "ID")):
        yield found.text


def solution_messages() -> Iterator[tuple[str, str]]:
    for path in sorted((KIT / "solutions").glob("*.py")):
        for text in solution_texts(path.read_text(encoding="utf-8")):
            yield text, f"solutions/{path.name}"


def command_texts(command) -> Iterator[str]:
    """The help texts of a Click command, its options and its subcommands."""
    import inspect

    if command.help:
        yield inspect.cleandoc(command.help)
    for param in command.params:
        if getattr(param, "help", None):
            yield param.help
    for sub in getattr(command, "commands", {}).values():
        yield from command_texts(sub)


def cli_messages() -> Iterator[tuple[str, str]]:
    from grader.cli import main

    for text in command_texts(main):
        yield text, "grader/cli/"


def template():
    """The catalog template (.pot) of the kit's messages, from all four sources."""
    from babel.messages.catalog import Catalog

    # A fixed date: the files change only when their messages do.
    catalog = Catalog(project="attnkit", domain=DOMAIN, fuzzy=False, creation_date=_EPOCH)
    config = settings()
    sources = [code_messages(config), cli_messages(), record_messages(), solution_messages()]
    for found in sources:
        for message, where in found:
            catalog.add(message, locations=[(where, None)])
    return catalog


def po_path(language: str, domain: str = DOMAIN) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{domain}.po"


def read(path: Path):
    from babel.messages.pofile import read_po

    with path.open("rb") as handle:
        return read_po(handle, locale=path.parent.parent.name, domain=path.stem)


def write(path: Path, catalog) -> None:
    from babel.messages.pofile import write_po

    buffer = io.BytesIO()
    write_po(buffer, catalog, width=0, sort_output=False, include_lineno=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def compiled(catalog) -> bytes:
    from babel.messages.mofile import write_mo

    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def update() -> list[Path]:
    """Write the template, merge it into every language's .po (new messages untranslated,
    removed ones kept as obsolete), compile every .po; return the files written."""
    config, pot = settings(), template()
    written = [LOCALE_DIR / f"{DOMAIN}.pot"]
    write(written[0], pot)
    for language in config["languages"]:
        path = po_path(language)
        if path.is_file():
            catalog = read(path)
            catalog.update(pot, no_fuzzy_matching=True, update_header_comment=False)
        else:
            from babel.messages.catalog import Catalog

            catalog = Catalog(locale=language, domain=DOMAIN, project="attnkit", fuzzy=False)
            catalog.update(pot, no_fuzzy_matching=True)
        write(path, catalog)
        written.append(path)
    for path in sorted(LOCALE_DIR.glob("*/LC_MESSAGES/*.po")):
        path.with_suffix(".mo").write_bytes(compiled(read(path)))
        written.append(path.with_suffix(".mo"))
    return written


def placeholders(text: str) -> list[str]:
    """The placeholders of a message, sorted: str.format fields and %-style ones."""
    names = []
    try:
        for _literal, field, spec, conversion in string.Formatter().parse(text):
            if field is not None:
                names.append("{" + field + (f"!{conversion}" if conversion else "") + "}")
                names += placeholders(spec) if spec else []
    except ValueError:
        names.append("<unbalanced braces>")
    names += [match.group(0) for match in PERCENT.finditer(text)]
    return sorted(names)


def problems(language: str) -> list[str]:
    """What is wrong with a language's catalogs: a message of the kit missing or untranslated,
    placeholders that differ, a .mo that is not its .po compiled."""
    found = []
    path = po_path(language)
    catalog = read(path) if path.is_file() else None
    if catalog is None:
        return [f"{path} is missing: run python -m grader.locale.catalog"]
    for message in template():
        if not message.id:
            continue
        entry = catalog.get(message.id)
        if entry is None or not entry.string or entry.fuzzy:
            found.append(f"{language}: no translation of {_short(message.id)}")
    for po in sorted(path.parent.glob("*.po")):
        for entry in read(po):
            if not entry.id or not entry.string:
                continue
            # A plural's every form must take what the plural msgid takes (Chinese has one
            # form, used for every count).
            source = entry.id[-1] if isinstance(entry.id, tuple) else entry.id
            strings = entry.string if isinstance(entry.string, tuple) else (entry.string,)
            for translation in strings:
                if placeholders(source) != placeholders(translation):
                    found.append(
                        f"{po.name}: placeholders of {_short(source)} are "
                        f"{placeholders(source)}, its translation has {placeholders(translation)}"
                    )
        mo = po.with_suffix(".mo")
        if not mo.is_file() or _entries(mo.read_bytes()) != _entries(compiled(read(po))):
            found.append(f"{mo} is not {po.name} compiled: run python -m grader.locale.catalog")
    return found


def _entries(mo: bytes) -> dict:
    """A compiled catalog's messages; of its header, all but the compiler's version (a new
    Babel compiles the same catalog)."""
    import gettext

    catalog = dict(gettext.GNUTranslations(io.BytesIO(mo))._catalog)
    if isinstance(catalog.get(""), str):
        catalog[""] = "\n".join(
            line for line in catalog[""].splitlines() if not line.startswith("Generated-By:")
        )
    return catalog


def _short(text: str) -> str:
    text = text if isinstance(text, str) else text[0]
    return repr(text if len(text) < 70 else text[:67] + "...")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report problems; change nothing")
    args = parser.parse_args(argv)
    if args.check:
        found = [p for language in settings()["languages"] for p in problems(language)]
        print("\n".join(found) or "every message has its translations")
        return 1 if found else 0
    for path in update():
        print(path.relative_to(KIT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
