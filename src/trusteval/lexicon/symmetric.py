"""Symmetric counterfactual swaps for the scorer bias control (SPEC.md, "Scorer bias control"; issue 30).

`Lexicon.swap` keeps a term's grammatical form (Jewish people -> Muslim people) and falls back to another form
where the target lacks it, which is not symmetric across group types (a woman -> a white person -> a female
person). Here every group has one **canonical noun phrase** per number (`canonical_phrase`): its singular noun
(woman, Jew, Muslim, Asian) or, without one, its adjective + person (white person); its plural noun (women,
Muslims) or, without one that is unambiguous, its adjective + people (white people). A noun phrase of the source
group - a singular or plural noun, or its adjective directly before person / people - becomes the target's
canonical noun phrase of the same number; an adjective before another word stays an adjective (a Muslim doctor ->
a Jewish doctor); a faith name becomes the target's (Islam -> Judaism) and the group's associated words the
target's word of the same slot (mosque -> synagogue, Quran -> Torah; `<lang>_associated.tsv`). A word with no
counterpart in the target (a faith name or a mosque in a woman's version) is kept as it is and reported.
With `keep_variants`, a term with a variant keeps it where the target has it (girls -> boys). So swapping a
canonical phrase to any group and back gives it again, and the versions of two answers that differ only in
their group's phrase are the same texts: the source group's own version is the response normalised the same
way (the response itself when it is already canonical).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trusteval.lexicon.files import Associated, Entry

if TYPE_CHECKING:
    from trusteval.lexicon.core import Lexicon, Mention

_ARTICLE = re.compile(r"(?<![\w'])an?\s+$", re.IGNORECASE)
_PERSON = re.compile(r"[ \t]+(person|people)(?![\w-])", re.IGNORECASE)


@dataclass(frozen=True)
class Piece:
    """One span of the source group to rewrite: a term (with its kind) or an associated word (its slot)."""

    start: int
    end: int
    surface: str
    kind: str  # singular | plural | adjective | name | hyphenated (en); noun | name (zh); associated
    variant: str = ""
    term: str = ""  # the listed spelling (its capitals)
    base_form: str = ""
    slot: str = ""


@dataclass(frozen=True)
class Swapped:
    """The versions of a text, and per target the source words kept for want of a counterpart."""

    texts: dict[str, str]
    kept: dict[str, list[str]]


def canonical_phrase(lexicon: Lexicon, group: str, number: str = "singular") -> str:
    """A group's canonical noun phrase, without article: `woman`, `white person`, `Muslims`, `white people`;
    Chinese: its first noun without a variant (女人 for 女性 is listed first: the term itself)."""
    entries = lexicon.by_group[group]
    if not lexicon.english:
        return next((e.term for e in entries if e.form == "noun" and not e.variant), entries[0].term)
    plain = [e for e in entries if not e.variant and "needs_person" not in e.flags]
    adjective = next((e.term for e in entries if e.form == "adjective" and not e.variant), None)
    adjective = adjective or next((e.term for e in entries if e.form == "adjective"), None)
    if number == "plural":
        noun = next((e.term for e in plain if e.form == "plural" and "ambiguous" not in e.flags), None)
        return noun or (f"{adjective} people" if adjective else canonical_phrase(lexicon, group))
    noun = next((e.term for e in plain if e.form == "singular"), None)
    return noun or (f"{adjective} person" if adjective else entries[0].term)


def pieces(lexicon: Lexicon, text: str, source: str, mentions: list[Mention]) -> list[Piece]:
    """The spans of `source` in the text, in order: its terms (adjective + person/people as one noun phrase)
    and its associated words that no term overlaps."""
    found = []
    for m in mentions:
        if m.group != source:
            continue
        kind, end = (m.form if m.form == "hyphenated" else m.base_form), m.end
        follow = _PERSON.match(text, m.end) if lexicon.english and kind == "adjective" else None
        if follow is not None:
            kind = "singular" if follow.group(1).lower() == "person" else "plural"
            end = follow.end()
        elif lexicon.english and kind == "adjective" and _used_as_noun(text, m.start, m.end):
            kind = "singular"
        found.append(Piece(m.start, end, text[m.start : end], kind, m.variant if follow is None else "", m.term,
                           m.base_form))  # fmt: skip
    spans = [(m.start, m.end) for m in mentions]
    for start, end, word in lexicon.find_associated(text):
        if word.group == source and not any(start < b and a < end for a, b in spans):
            found.append(Piece(start, end, text[start:end], "associated", term=word.word, slot=word.slot))
    return sorted(found, key=lambda p: p.start)


def _used_as_noun(text: str, start: int, end: int) -> bool:
    """An adjective after a/an and before no noun (`as a female, I`; `a Muslim says`): a singular noun phrase."""
    from trusteval.lexicon.core import is_noun_slot

    return _ARTICLE.search(text[:start]) is not None and is_noun_slot(text, end)


def counterpart(lexicon: Lexicon, piece: Piece, target: str, keep_variants: bool) -> str | None:
    """The target group's word for a piece, or None when the target has none (the piece is kept)."""
    if piece.kind == "associated":
        return next((w.word for w in lexicon.associated if w.group == target and w.slot == piece.slot), None)
    entries = lexicon.by_group[target]
    if piece.kind == "name":
        return _first(entries, "name", piece.variant if keep_variants else "")
    if piece.kind == "hyphenated":
        from trusteval.lexicon.core import aligned_term

        return aligned_term(piece.base_form, piece.variant, entries)
    if keep_variants and piece.variant:
        same = [e.term for e in entries if e.form == piece.base_form and e.variant == piece.variant]
        if same:
            return same[0]
    if piece.kind == "adjective" and lexicon.english:
        return _first(entries, "adjective", "") or canonical_phrase(lexicon, target)
    return canonical_phrase(lexicon, target, "plural" if piece.kind == "plural" else "singular")


def _first(entries: list[Entry], form: str, variant: str) -> str | None:
    found = [e for e in entries if e.form == form]
    best = [e for e in found if e.variant == variant] or [e for e in found if not e.variant] or found
    return best[0].term if best else None


def associated_pattern(words: list[Associated], english: bool) -> re.Pattern[str] | None:
    if not words:
        return None
    ordered = sorted({w.word for w in words}, key=len, reverse=True)
    if english:
        body = "|".join(r"[\s-]+".join(re.escape(p) for p in w.split()) for w in ordered)
        return re.compile(rf"(?<![\w+])(?:{body})(?![\w+])", re.IGNORECASE)
    return re.compile("|".join(re.escape(w) for w in ordered))
