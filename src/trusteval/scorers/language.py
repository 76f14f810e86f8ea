r"""Is a response in the language its scorer reads? A script check, not a language identifier.

The share of CJK ideographs among a text's letters (Unicode letters: the regex class `[^\W\d_]`, so digits,
spaces, punctuation and emoji do not count): a response is Chinese (`zh`) when at least 30% of its letters are
CJK, English (`en`) when at most 5% are (SPEC.md, "Responses that are not scored"). A text with no letter at all
cannot be told and counts as in-language; other languages are not checked.
"""

from __future__ import annotations

import re

import numpy as np

LETTER = re.compile(r"[^\W\d_]")
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")
# Runs of each class: counting the characters of the runs counts the same characters as LETTER and CJK one by
# one, with one match object per run instead of per character (a Chinese answer is one or two long runs).
LETTER_RUN = re.compile(LETTER.pattern + "+")
CJK_RUN = re.compile(CJK.pattern + "+")
MIN_CJK_SHARE = {"zh": 0.30}
MAX_CJK_SHARE = {"en": 0.05}
OFF_LANGUAGE_CHOICES = ("keep", "exclude")
WARN_SHARE = 0.10  # above this share of off-language responses, a run warns
EMPTY_CODE = -1.0  # script_code of an empty response
NO_LETTER_CODE = -2.0  # script_code of a response without letters
OK, EMPTY, OFF_LANGUAGE, NO_RESPONSE = 0, 1, 2, -1


def is_empty(text: str | None) -> bool:
    return text is not None and not text.strip()


def cjk_share(text: str) -> float | None:
    """CJK ideographs / letters, or None when the text has no letter."""
    if text.isascii():
        return 0.0 if LETTER.search(text) else None
    letters = sum(map(len, LETTER_RUN.findall(text)))
    return sum(map(len, CJK_RUN.findall(text))) / letters if letters else None


def script_code(text: str | None) -> float | None:
    """One number per response, the same for every language: None (no response), EMPTY_CODE, NO_LETTER_CODE, or
    the CJK share. `response_checks` turns codes and languages into checks (also inside SQLite: Store.pair_rows)."""
    if text is None:
        return None
    if is_empty(text):
        return EMPTY_CODE
    share = cjk_share(text)
    return NO_LETTER_CODE if share is None else share


def response_checks(codes, langs) -> np.ndarray:
    """OK, EMPTY, OFF_LANGUAGE or NO_RESPONSE for each (script code, language) pair."""
    codes = np.asarray([np.nan if c is None else c for c in codes], dtype=float)
    langs = np.asarray(langs, dtype=object)
    found = np.full(codes.shape, OK, dtype=np.int64)
    found[np.isnan(codes)] = NO_RESPONSE
    found[codes == EMPTY_CODE] = EMPTY
    letters = codes >= 0
    for lang, low in MIN_CJK_SHARE.items():
        found[letters & (langs == lang) & (codes < low)] = OFF_LANGUAGE
    for lang, high in MAX_CJK_SHARE.items():
        found[letters & (langs == lang) & (codes > high)] = OFF_LANGUAGE
    return found


def off_language(text: str, lang: str | None) -> bool:
    """Whether `text` is written in another script than `lang` needs (False when that cannot be told)."""
    code = script_code(text)  # response_checks for one response, without building arrays
    if code is None or code < 0:
        return False
    return (lang in MIN_CJK_SHARE and code < MIN_CJK_SHARE[lang]) or (
        lang in MAX_CJK_SHARE and code > MAX_CJK_SHARE[lang]
    )
