"""A case's label in the language in use, translated where it is shown, from the catalog.

A label stays English in the case (results keep it, and grader.engine.diagnosis reads the sizes
"B=2 Tq=3" from it); it is shown translated in check names. Labels are made of fragments joined
by ", " (outside brackets: "valid_lens of shape (2, 3)" is one fragment). A fragment's words are
marked where they are made, by `label_text(N_("..."))`, which registers them as they are and
returns them: a fixed text ("a fully masked row") or a template with named placeholders
("{name} of shape {shape}"). `shown_label` finds each registered text in a fragment (each
template as a pattern generated from it: a placeholder matches one value, a word or a bracketed
group), translates the template with the catalog and fills it with the values found. Whatever
matches nothing (the sizes "B=2 Tq=3", a dtype, a code name) is shown as it is.
"""

from __future__ import annotations

import re

from grader.i18n import _, language, tr

# One value of a placeholder: a bracketed group ("(2, 3)", "[1, 2]") or a run of characters
# that are neither spaces nor separators ("valid_lens", "0.5", "√4").
_VALUE = r"(?:\([^()]*\)|\[[^\[\]]*\]|[^\s,()\[\]]+)"
_FIELD = re.compile(r"\{(\w+)(?:[:!][^{}]*)?\}")


class Phrases:
    """Texts registered as they are made (marked `N_` by the caller), translated where shown
    by matching them in a text: `whole`, the text must be one of them (a message a child
    reported); else each is found anywhere in a label's fragments (a label's words)."""

    def __init__(self, whole: bool = False):
        self.whole = whole
        self.patterns: dict[str, re.Pattern] = {}

    def add(self, text: str) -> str:
        """Register `text`; return it unchanged."""
        if text not in self.patterns:
            self.patterns[text] = _pattern(text, "(?s:.+?)" if self.whole else _VALUE)
        return text

    def texts(self) -> tuple[str, ...]:
        """The texts registered so far (by the modules imported)."""
        return tuple(self.patterns)

    def translate(self, text: str) -> str:
        """`text` in the language in use (English: as it is)."""
        if language() == "en" or not text:
            return text
        if self.whole:
            for template, pattern in self.patterns.items():
                match = pattern.fullmatch(text)
                if match:
                    return _fill(template, match.groupdict())
            return text
        return ", ".join(self._fragment(fragment) for fragment in fragments(text))

    def _fragment(self, fragment: str) -> str:
        """One fragment with every registered text in it translated (the longest texts first,
        each part of the fragment translated once)."""
        pieces: list[tuple[str, bool]] = [(fragment, False)]  # (text, translated already)
        for template in sorted(self.patterns, key=_fixed_length, reverse=True):
            pattern, result = self.patterns[template], []
            for text, done in pieces:
                if done:
                    result.append((text, done))
                    continue
                start = 0
                for match in pattern.finditer(text):
                    result.append((text[start : match.start()], False))
                    result.append((_fill(template, match.groupdict()), True))
                    start = match.end()
                result.append((text[start:], False))
            pieces = [(text, done) for text, done in result if text]
        return "".join(text for text, _done in pieces)


def _pattern(template: str, value: str) -> re.Pattern:
    parts, start, seen = [], 0, set()
    for field in _FIELD.finditer(template):
        parts.append(re.escape(template[start : field.start()]))
        name = field.group(1)
        # A placeholder used twice must match the same value twice.
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>{value})")
        seen.add(name)
        start = field.end()
    parts.append(re.escape(template[start:]))
    # Words match whole: "with bias" is not found in "with biases".
    before = r"(?<!\w)" if re.match(r"\w", template) else ""
    after = r"(?!\w)" if re.search(r"\w$", template) else ""
    return re.compile(before + "".join(parts) + after)


def _fixed_length(template: str) -> int:
    return len(_FIELD.sub("", template))


def fragments(label: str) -> list[str]:
    """`label` split at its ", " outside brackets."""
    found, depth, start = [], 0, 0
    for index, character in enumerate(label):
        if character in "([":
            depth += 1
        elif character in ")]":
            depth = max(0, depth - 1)
        elif character == "," and depth == 0 and label[index + 1 : index + 2] == " ":
            found.append(label[start:index])
            start = index + 2
    found.append(label[start:])
    return found


def _fill(template: str, values: dict[str, str]) -> str:
    return _FIELD.sub(lambda field: values.get(field.group(1), field.group(0)), tr(template))


# The words of case labels, and the messages a child or the scheduler reports (made outside
# the grader's process, where the language may not be the student's: translated when shown).
LABELS = Phrases()
REPORTED = Phrases(whole=True)
label_text, shown_label = LABELS.add, LABELS.translate


def label_texts(*texts: str) -> tuple[str, ...]:
    """Register the words of a module's case labels (each marked `N_`); return them."""
    return tuple(map(label_text, texts))


reported_text, shown_report = REPORTED.add, REPORTED.translate


def mistake_words(key: str) -> str:
    """A recognised mistake in plain words, for a reader (a TA's report). Results keep it as a
    key ("slip: scale missing", "property: keys in any order", "NaN", or a record's mistake
    name), which is never shown as it is."""
    kind, separator, name = key.partition(": ")
    if separator and kind == "slip":
        return _("{name} (a slip the grader recognises in any exercise)", name=name)
    if separator and kind == "property":
        return _("breaks the property “{name}”", name=tr(name))
    if key == "NaN":
        return _("NaN or infinite values")
    return tr(key)
