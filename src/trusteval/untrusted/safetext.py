"""Text that came from data, models or servers, made safe to show: on a terminal, in Markdown and in LaTeX.

Such text is untrusted. On a terminal an escape sequence (ESC [2J, an OSC title) would act instead of being
shown, and Rich would render `[link=...]` markup or crash on a stray `[/b]`; in Markdown `<script>` and
`[x](javascript:...)` would be live; in LaTeX `\\` and `>` would not print as written. Every console print
path and every document renderer passes such text through one function here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# C0 controls but tab and line feed, DEL, C1 controls (CSI, OSC as one byte), and the bidirectional
# overrides and isolates, which reorder what a reader sees ("Trojan source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"[\r\n\t\v\f\u2028\u2029\x85]+")


def strip_controls(text: str, *, keep_newlines: bool = True) -> str:
    """The text without control characters (so no escape sequence survives); tab and, if kept, newline stay."""
    text = _CONTROL.sub("", str(text))
    return text if keep_newlines else _LINE_BREAKS.sub(" ", text)


def one_line(text: str) -> str:
    """The text on one line with no control characters: for error messages and one-line notes."""
    return _LINE_BREAKS.sub(" ", _CONTROL.sub("", str(text).replace("\r\n", "\n"))).strip()


def console_text(text: str, *, style: str = "") -> Text:
    """A Rich renderable that shows the text literally: markup is not interpreted, controls are removed."""
    from rich.text import Text

    return Text(strip_controls(text), style=style)


def console_markup(text: str) -> str:
    """The text as a Rich markup string that renders literally (for places that only take markup strings)."""
    from rich.markup import escape

    return escape(strip_controls(text))


_MARKDOWN_SPECIAL = str.maketrans({"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;"})
# A link or image needs `](`, a reference `][`, a definition `]:`; escaping that `]` leaves "[0.1, 0.2]" as is.
_LINK_CLOSE = re.compile(r"\](?=[(\[:])")
_BARE_SCHEME = re.compile(r"\b(javascript|vbscript|data|file):", re.IGNORECASE)


def markdown_text(text: str) -> str:
    """Inline Markdown that shows the text as written: on one line, HTML escaped, no link or image
    syntax left, and no bare `javascript:` URL for an autolinker to pick up."""
    escaped = _LINK_CLOSE.sub(r"\\]", one_line(text).translate(_MARKDOWN_SPECIAL))
    return _BARE_SCHEME.sub(lambda m: m.group(1) + "&#58;", escaped)


_LATEX_SPECIAL = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "|": r"\textbar{}",
    }
)


def latex_text(text: str) -> str:
    """LaTeX source that typesets the text as written, in one pass (so no escape is escaped again), on one
    line. `<`, `>` and `|` get text-mode commands: in the default OT1 font encoding they print as ¡ ¿ and —."""
    return one_line(text).translate(_LATEX_SPECIAL)
