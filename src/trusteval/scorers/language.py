"""Is a response in the language its scorer reads? A script check, not a language identifier.

The share of CJK ideographs among a text's letters (characters for which `str.isalpha()` is true, so digits,
spaces, punctuation and emoji do not count): a response is Chinese (`zh`) when at least 30% of its letters are
CJK, English (`en`) when at most 5% are (SPEC.md, "Responses that are not scored"). A text with no letter at all
cannot be told and counts as in-language; other languages are not checked.
"""

from __future__ import annotations

import re

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")
MIN_CJK_SHARE = {"zh": 0.30}
MAX_CJK_SHARE = {"en": 0.05}
CHECKED_LANGUAGES = frozenset({*MIN_CJK_SHARE, *MAX_CJK_SHARE})
OFF_LANGUAGE_CHOICES = ("keep", "exclude")
WARN_SHARE = 0.10  # above this share of off-language responses, a run warns


def is_empty(text: str | None) -> bool:
    return text is not None and not text.strip()


def cjk_share(text: str) -> float | None:
    """CJK ideographs / letters, or None when the text has no letter."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return None
    return sum(1 for ch in letters if CJK.match(ch)) / len(letters)


def off_language(text: str, lang: str | None) -> bool:
    """Whether `text` is written in another script than `lang` needs (False when that cannot be told)."""
    if lang not in CHECKED_LANGUAGES:
        return False
    share = cjk_share(text)
    if share is None:
        return False
    if lang in MIN_CJK_SHARE:
        return share < MIN_CJK_SHARE[lang]
    return share > MAX_CJK_SHARE[lang]
