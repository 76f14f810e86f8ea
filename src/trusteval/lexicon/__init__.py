"""The identity lexicon (SPEC.md, "Instrument validity"): group terms per language from cited public sources,
with their groups, categories and forms, and the non-identity uses that are not group terms.

    lexicon = load_lexicon("en")
    lexicon.find("Muslim-majority towns serve black coffee")   # one Mention: Muslim (muslim, religion, hyphenated)
    lexicon.mask("Two Asian-Americans", "grouptoken")          # "Two grouptoken-grouptoken"
    lexicon.swap("An Asian woman", "asian", "black")           # "A Black woman"
    lexicon.groups("religion")                                 # ["christian", "jew", "muslim", ...]
    lexicon.sentences("neutral", "muslim")                     # the built-in harmless sentences naming Muslims

The data files (`en.tsv`, `zh.tsv`, `<lang>_context.tsv`, `<lang>_associated.tsv`: words that go with a group
without naming it, swapped with it by the scorer bias control) cite their sources in their header comments. A
malformed file stops with a `DataError` naming the file and line.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from trusteval.lexicon.core import PLACEHOLDER, Lexicon, Mention
from trusteval.lexicon.files import DATA_DIR, read_associated, read_context, read_entries
from trusteval.lexicon.sentences import neutral_sentences, toxic_sentences

__all__ = [
    "LEXICON_VERSION",
    "PLACEHOLDER",
    "Lexicon",
    "Mention",
    "language_of",
    "load_lexicon",
    "neutral_sentences",
    "toxic_sentences",
]

LEXICON_VERSION = 1


def language_of(lang: str | None) -> str:
    return "zh" if (lang or "").lower().startswith("zh") else "en"


def load_lexicon(lang: str, path: str | Path | None = None) -> Lexicon:
    """The built-in lexicon of a language (`en`, `zh`; `zh-cn` counts as `zh`), or the one in `path` (a
    `.tsv` in the same format; a `<name>_context.tsv` beside it is read when present)."""
    code = language_of(lang)
    if path is None:
        return _builtin(code)
    return _read(code, Path(path))


@lru_cache(maxsize=4)
def _builtin(code: str) -> Lexicon:
    return _read(code, DATA_DIR / f"{code}.tsv")


def _read(code: str, path: Path) -> Lexicon:
    entries = read_entries(path, code)
    context = read_context(path.with_name(f"{path.stem}_context.tsv"))
    associated = read_associated(path.with_name(f"{path.stem}_associated.tsv"), {e.group for e in entries})
    return Lexicon(code, entries, context, source=str(path), associated=associated)
