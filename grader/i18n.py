"""The language a student reads: English (the source) or Chinese, from gettext catalogs.

The language is chosen by `--lang`, then the grader's own environment variable GRADER_LANG,
then the locale (LC_ALL, LC_MESSAGES, LANG, in POSIX order: `LANG=zh_CN.UTF-8` gives Chinese);
English is the default. Catalogs are gettext's: `grader/locale/<lang>/LC_MESSAGES/attnkit.mo`
for the kit's own texts, and `messages.mo` for Click's (Click asks the standard `gettext`
module, whose default domain is "messages"). The .po files beside them are the sources;
`python -m grader.locale.catalog` extracts, updates and compiles them (README: Languages).

Two ways in:
- `_(message, **values)` marks a message of the code where it is made: the catalog's template
  has named placeholders (`"stopped after {seconds:g} s"`), filled after translation, so a
  translation may put them anywhere. `n_` is its plural form.
- `tr(text)` translates a text of a record (a title, a part's description, a mistake's
  explanation) where it is shown: records stay data, their texts are extracted by walking the
  loaded records (grader.locale.catalog), and a text the catalog lacks shows as it is.

Only the standard library is used at run time; Babel is needed only to update the catalogs.
"""

from __future__ import annotations

import gettext
import os
import unicodedata
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

LANGUAGES = ("en", "zh")
DEFAULT = "en"
ENVIRONMENT_VARIABLE = "GRADER_LANG"
# The locale's variables in POSIX precedence; the first one set decides.
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "attnkit"
# The domain Click's messages come from: the `gettext` module's default.
CLICK_DOMAIN = "messages"


class LanguageError(ValueError):
    """A language the grader does not speak, named by the user (option or variable)."""


def parse(value: str, source: str) -> str:
    """The language code of `value` ("zh", "zh_CN.UTF-8", "en-US" give zh, zh, en), or a
    LanguageError naming `source` and the choices."""
    code = value.strip().replace("-", "_").split(".")[0].split("_")[0].lower()
    if code in LANGUAGES:
        return code
    choices = ", ".join(LANGUAGES)
    raise LanguageError(f"{source}={value!r} is not a language of the grader; use one of {choices}")


def choose(option: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The language to use: `option` (--lang), else GRADER_LANG, else the locale, else English.

    A locale that is not Chinese gives English (the locale speaks for every program, so it is
    no error); a GRADER_LANG the grader does not know is one."""
    environ = os.environ if environ is None else environ
    if option:
        return parse(option, "--lang")
    if environ.get(ENVIRONMENT_VARIABLE):
        return parse(environ[ENVIRONMENT_VARIABLE], ENVIRONMENT_VARIABLE)
    for name in LOCALE_VARIABLES:
        value = environ.get(name)
        if value:
            return "zh" if value.lower().startswith("zh") else DEFAULT
    return DEFAULT


def _load(language: str, domain: str = DOMAIN) -> gettext.NullTranslations:
    return gettext.translation(domain, LOCALE_DIR, languages=[language], fallback=True)


_current: gettext.NullTranslations = gettext.NullTranslations()
_language = DEFAULT


def use(language: str) -> None:
    """Speak `language` from now on in this process: the kit's texts and Click's.

    Click calls `gettext.gettext`, which finds its language in the environment (LANGUAGE
    first), so LANGUAGE is set to the choice; the child processes inherit it, harmlessly."""
    global _current, _language
    _language = language if language in LANGUAGES else DEFAULT
    _current = _load(_language)
    gettext.bindtextdomain(CLICK_DOMAIN, str(LOCALE_DIR))
    os.environ["LANGUAGE"] = _language


def language() -> str:
    """The language in use ("en" or "zh")."""
    return _language


@contextmanager
def speaking(language_code: str | None = None):
    """Use `language_code` (None: as `choose()` finds it) inside the block; then the previous
    language, and LANGUAGE as it was."""
    previous, variable = _language, os.environ.get("LANGUAGE")
    use(language_code or choose())
    try:
        yield
    finally:
        use(previous)
        if variable is None:
            os.environ.pop("LANGUAGE", None)
        else:
            os.environ["LANGUAGE"] = variable


def _(message: str, /, **values) -> str:
    """`message` in the language in use, its {placeholders} filled from `values`."""
    text = _current.gettext(message)
    return text.format(**values) if values else text


def n_(singular: str, plural: str, count: int, /, **values) -> str:
    """The singular or plural `message` for `count`, translated, placeholders filled."""
    text = _current.ngettext(singular, plural, count)
    return text.format(**values) if values else text


def translator(language_code: str):
    """The `gettext` of one language, whatever the language in use (the Chinese stubs)."""
    return _load(language_code).gettext


def N_(message: str) -> str:
    """`message` as it is, marked for the catalog: a text translated later, where shown."""
    return message


def stubs_folder(exercises: Path) -> Path:
    """Where the stubs of the language in use are: `exercises/zh/` for Chinese (same code)."""
    return exercises / "zh" if _language == "zh" else exercises


def stub_path(record) -> str:
    """The stub a student of the language in use edits, as `grader show` names it."""
    return f"exercises/zh/{record.file}" if _language == "zh" else f"exercises/{record.file}"


def tr(text: str) -> str:
    """A record's text (title, statement, description, mistake) in the language in use; as it
    is where the catalog has no translation of it."""
    return _current.gettext(text) if text else text


def click_text(message: str) -> str:
    """One of Click's own messages, as Click would translate it now."""
    return gettext.dgettext(CLICK_DOMAIN, message)


def display_width(text: str) -> int:
    """Columns `text` takes on a terminal: wide (CJK) characters two, combining marks none, as
    wcwidth counts them for the characters the kit prints."""
    width = 0
    for character in text:
        if unicodedata.combining(character):
            continue
        width += 2 if unicodedata.east_asian_width(character) in ("W", "F") else 1
    return width


def pad(text: str, width: int) -> str:
    """`text` padded with spaces to `width` terminal columns (`str.ljust` counts characters,
    which misaligns Chinese)."""
    return text + " " * max(0, width - display_width(text))


# The command line: Click's help texts and messages in the language chosen.


def localize_commands(command) -> None:
    """Put the help texts of `command`, its options and subcommands in the language in use.

    The English texts (the catalog's msgids, extracted from these same commands) are kept on
    each object, so a later choice translates from them again."""
    import inspect

    source = command.__dict__.setdefault("_english_help", command.help)
    if source:
        command.help = tr(inspect.cleandoc(source))
        # Click shortens a help text at its first ". "; Chinese ends sentences with "。".
        command.short_help = (
            command.help.split("\n")[0].split("。")[0] if _language != "en" else None
        )
    for param in command.params:
        # Click names a path's kind ("directory") when the option is made, at import: again now.
        kind = param.type.__dict__.setdefault("_english_name", getattr(param.type, "name", None))
        if kind in ("file", "directory", "path"):
            param.type.name = click_text(kind)
        english = param.__dict__.setdefault("_english_help", getattr(param, "help", None))
        if english:
            # The kit's own texts, else Click's (--version's help is Click's message).
            param.help = tr(english) if tr(english) != english else click_text(english)
    # Click makes the help option once, in whichever language is in use then.
    if getattr(command, "_help_option", None) is not None:
        command._help_option.help = click_text("Show this message and exit.")
    for sub in getattr(command, "commands", {}).values():
        localize_commands(sub)


def _lang_parameter():
    """`--lang zh|en`: eager, so that the help it precedes is translated too."""
    import click

    def chosen(ctx, _param, value):
        if value:
            use(parse(value, "--lang"))
            localize_commands(ctx.find_root().command)

    return click.Option(
        ["--lang"],
        type=click.Choice(LANGUAGES),
        is_eager=True,
        expose_value=False,
        callback=chosen,
        help=f"Language of everything the grader writes [default: ${ENVIRONMENT_VARIABLE}, "
        "else the locale (LANG=zh_CN.UTF-8: Chinese), else English].",
    )


def lang_option(function):
    """The group's `--lang`; every subcommand gets one too (`grader show 8-2 --lang zh`)."""
    function.__click_params__ = [*getattr(function, "__click_params__", []), _lang_parameter()]
    return function


def _give_lang_options(command) -> None:
    for sub in getattr(command, "commands", {}).values():
        if not any(param.name == "lang" for param in sub.params):
            sub.params.append(_lang_parameter())
        _give_lang_options(sub)


def lang_in_arguments(words: list[str]) -> str | None:
    """The value of the last `--lang X` / `--lang=X` on a command line, read before Click
    parses it: `--help` is eager and would otherwise print before `--lang` is seen
    (`grader show --help --lang zh`). Words after `--` are arguments, not options."""
    found = None
    # Click takes any object as an argument (a Path, from Python); the command line only strings.
    words = [str(word) for word in words]
    for index, word in enumerate(words):
        if word == "--":
            break
        if word == "--lang" and index + 1 < len(words):
            found = words[index + 1]
        elif word.startswith("--lang="):
            found = word.removeprefix("--lang=")
    return found


def _valid_or_none(value: str | None) -> str | None:
    """`value` when it names a language; else None, so that Click, parsing `--lang` itself,
    gives its usual usage error for it."""
    return value if value in LANGUAGES else None


def localized_group_class():
    """A Click group that speaks the language of the environment from its first word (before
    `--lang` is read: `grader --help` with GRADER_LANG=zh is Chinese), and afterwards the
    language it found before (a test's CliRunner leaves the process as it was)."""
    import click

    class LocalizedGroup(click.Group):
        def main(self, *args, **kwargs):
            import sys

            words = kwargs.get("args", args[0] if args else None)
            words = sys.argv[1:] if words is None else list(words)
            try:
                chosen = choose(_valid_or_none(lang_in_arguments(words)))
            except LanguageError as error:
                click.echo(f"Error: {error}", err=True)
                raise SystemExit(2) from None
            _give_lang_options(self)
            try:
                with speaking(chosen):
                    localize_commands(self)
                    return super().main(*args, **kwargs)
            finally:
                localize_commands(self)

    return LocalizedGroup
