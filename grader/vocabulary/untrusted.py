"""Text from a child or from a submission's name, made safe for each place it is written.

A child controls every string it reports (an exception message, a dtype's name, anything in its
bundle's metadata) and a student controls their folder's name. Each writer passes such text
through the escaper of its output (Markdown, HTML, XML, CSV, terminal) and names files after a
student with `file_stem`, so that no text can forge a line, run in a browser or a spreadsheet,
break a parser, move an instructor's cursor or stop the batch by being long.
"""

from __future__ import annotations

import hashlib
import html as _html
import json
import re
import unicodedata

# Terminal escape sequences (CSI, OSC, and the two-character ones), removed whole so that no
# "[2J" is left behind; whatever control character remains is removed by itself after.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC, to its end
    r"|\x1b[P_^X][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, APC, PM, SOS
    r"|\x1b[ -/]*[0-~]"  # the rest: ESC c, ESC 7, ESC ( B, ...
)
# What is never kept: C0 (but tab and newline), DEL and C1.
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Unicode categories never kept: controls, format characters (bidi overrides and isolates, zero
# widths, the byte order mark, tags), and surrogates (an undecodable byte of a file name).
_DROPPED = {"Cc", "Cf", "Cs"}
_LINE_BREAKS = {"\n", "\u2028", "\u2029", "\x85"}
ELLIPSIS = "…"
LIMIT = 2000


def clean(text, limit: int = LIMIT, newlines: bool = True) -> str:
    """`text` (anything: it is made a string) without escape sequences, control or format
    characters, at most `limit` characters long (cut with an ellipsis). Tabs become spaces;
    with `newlines` False, so does every line break."""
    text = _ESCAPES.sub("", str(text))
    kept = []
    for char in text:
        if char in _LINE_BREAKS:
            kept.append("\n" if newlines else " ")
        elif char == "\t":
            kept.append(" ")
        elif char < "\x80":
            if not _ASCII_CONTROL.match(char):
                kept.append(char)
        elif not _not_text(char):
            kept.append(char)
    return bound("".join(kept), limit)


def _not_text(char: str) -> bool:
    """A character beyond ASCII that is no text: of a category in `_DROPPED`, or one of
    Unicode's 66 noncharacters (U+FDD0 to U+FDEF, and the last two of every plane, U+FFFE,
    U+FFFF, ...), shown as boxes or refused by XML readers."""
    point = ord(char)
    return (
        unicodedata.category(char) in _DROPPED
        or 0xFDD0 <= point <= 0xFDEF
        or point & 0xFFFE == 0xFFFE
    )


def bound(text: str, limit: int = LIMIT) -> str:
    """`text` cut to at most `limit` characters, the cut shown by an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def terminal(text, limit: int = LIMIT) -> str:
    """For a terminal: no escape sequences, nothing that moves the cursor or clears a screen."""
    return clean(text, limit)


# What makes a line a heading, a quote, a list, a table, a rule, a setext underline or a link
# reference definition.
_MARKDOWN_LINE_START = re.compile(r"^(\s*)([#>*+=|~_\[-]|\d+[.)])")


def markdown(text, limit: int = LIMIT) -> str:
    """For one Markdown line: never more than one line, never a heading, a score line of its
    own, a link, an image or HTML; emphasis and code spans may render, nothing else. Plain
    brackets stay as they are (a link needs "](" or a definition at a line's start)."""
    text = clean(text, limit, newlines=False).replace("\\", "\\\\")  # no escape undone
    text = text.replace("](", "]\\(")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("://", "\\://").replace("www.", "www\\.")  # no autolink
    return _MARKDOWN_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


def html(text, limit: int = LIMIT) -> str:
    """For HTML text or a quoted attribute."""
    return _html.escape(clean(text, limit), quote=True)


# Characters XML 1.0 does not allow at all (not even as references); clean() removed the rest
# of what could confuse a reader.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml(text, limit: int = LIMIT, newlines: bool = True) -> str:
    """For XML 1.0 text or a double-quoted attribute (there, `newlines` False): only characters
    XML allows, escaped."""
    text = _NOT_XML.sub("", clean(text, limit, newlines))
    return _html.escape(text, quote=True)  # &#x27; is XML too


# What a spreadsheet takes as the start of a formula (OWASP, CSV injection); a plain number
# (-1.5, 2e-05) is no formula and stays a number.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def csv_cell(text, limit: int = LIMIT, newlines: bool = False) -> str:
    """For one CSV cell a spreadsheet will open: one line (unless `newlines`: the csv module
    quotes a cell across lines), and never a formula (a leading quote makes it text)."""
    text = clean(text, limit, newlines)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_row(cells) -> list:
    """A row of cells for csv.writer: text made a safe cell, numbers as they are."""
    return [cell if isinstance(cell, (int, float)) else csv_cell(cell) for cell in cells]


def json_text(data, **options) -> str:
    """`json.dumps(data, ensure_ascii=False, **options)`, but every control or format character
    (lone surrogate, noncharacter) written as a `\\u` escape: the data read back are exactly
    the same (an id stays the id), and no reader of the file sees the character itself."""
    text = json.dumps(data, ensure_ascii=False, **options)
    if text.isascii():  # json.dumps escaped the C0 controls; only DEL can be left
        return text.replace("\x7f", "\\u007f")
    return "".join(json.dumps(char)[1:-1] if _hidden(char) else char for char in text)


def _hidden(char: str) -> bool:
    return char == "\x7f" or (char >= "\x80" and _not_text(char))


# A student id used as a file name as it is: short, plain ASCII, not hidden, not an option.
_PLAIN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_SLUG_CHARACTER = re.compile(r"[^A-Za-z0-9._-]+")
SLUG_CHARS = 40


def file_stem(student: str) -> str:
    """The name (without a suffix) of a student's files: the id itself when it is a plain one,
    otherwise a plain slug of it, then `~` and a hash of the whole id. One stem per id, the same
    in every run (so a batch resumes), and never longer than 57 ASCII characters, whatever the
    folder was called. A plain id never holds `~`: it is never the stem of another id."""
    if _PLAIN_ID.fullmatch(student):
        return student
    raw = student.encode("utf-8", "surrogateescape")
    ascii_text = unicodedata.normalize("NFKD", student).encode("ascii", "ignore").decode()
    slug = _SLUG_CHARACTER.sub("_", ascii_text).strip("._-")[:SLUG_CHARS] or "student"
    return f"{slug}~{hashlib.sha256(raw).hexdigest()[:16]}"
