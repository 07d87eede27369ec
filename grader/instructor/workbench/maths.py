"""An answer's `$…$` and `$$…$$` maths as MathML, which browsers draw themselves: no script,
no font or request leaving the page.

latex2mathml turns LaTeX into MathML, but copies some input into its output as it is
(`\\text{<script>…}` comes out as a script element, `\\href{…}` as an attribute). So its
output is never sent as it is: it is parsed as XML and written again from an allowlist of
MathML elements and attributes, every text and value escaped. Anything outside the allowlist,
or LaTeX it cannot read, and the maths is shown as its LaTeX text instead, inert.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from html import escape

NAMESPACE = "{http://www.w3.org/1998/Math/MathML}"

# MathML Core's presentation elements (https://www.w3.org/TR/mathml-core/), less those that
# link or run anything (maction, and annotation-xml, which may hold HTML).
ELEMENTS = frozenset(
    "math mi mn mo ms mtext mspace mrow mfrac msqrt mroot mstyle merror mpadded mphantom "
    "msub msup msubsup munder mover munderover mmultiscripts mprescripts none mtable mtr mtd "
    "menclose semantics annotation".split()
)
ATTRIBUTES = frozenset(
    "display mathvariant displaystyle scriptlevel stretchy fence separator lspace rspace "
    "accent accentunder largeop movablelimits symmetric minsize maxsize form linethickness "
    "columnalign rowalign columnspacing rowspacing columnlines rowlines frame notation width "
    "height depth voffset mathsize encoding".split()
)
# Values are words, numbers and lengths: nothing that could name a URL or a script.
VALUE = re.compile(r"[A-Za-z0-9 .%+-]{0,40}")
MAX_LATEX = 2000


class Unsafe(ValueError):
    """MathML outside the allowlist: the maths is shown as its LaTeX text."""


def _write(node, out: list[str]) -> None:
    tag = node.tag.removeprefix(NAMESPACE)
    if tag not in ELEMENTS:
        raise Unsafe(tag)
    attributes = []
    for name, value in sorted(node.attrib.items()):
        if name not in ATTRIBUTES or not VALUE.fullmatch(value):
            raise Unsafe(name)
        attributes.append(f' {name}="{escape(value, quote=True)}"')
    if tag == "math":
        attributes.insert(0, ' xmlns="http://www.w3.org/1998/Math/MathML"')
    out.append(f"<{tag}{''.join(attributes)}>")
    out.append(escape(node.text or "", quote=False))
    for child in node:
        _write(child, out)
        out.append(escape(child.tail or "", quote=False))
    out.append(f"</{tag}>")


def mathml(latex: str, display: bool) -> str | None:
    """`latex` as MathML made only of allowlisted elements and attributes, every text escaped;
    None when it cannot be (then the caller shows the LaTeX text)."""
    if len(latex) > MAX_LATEX:
        return None
    try:
        from latex2mathml.converter import convert

        produced = convert(latex, display="block" if display else "inline")
        tree = ElementTree.fromstring(produced)
        out: list[str] = []
        _write(tree, out)
    except Exception:  # noqa: BLE001 - any failure of a third-party parser on untrusted text
        return None
    return "".join(out)


def render_maths(latex: str, display: bool) -> str:
    """HTML for one piece of maths: MathML where it can be made safely, else the LaTeX text
    escaped, in a `<code class="math">` a TA can still read."""
    made = mathml(latex, display)
    if made is None:
        delimiter = "$$" if display else "$"
        return f'<code class="math">{escape(delimiter + latex + delimiter, quote=True)}</code>'
    return made
