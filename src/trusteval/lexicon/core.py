"""The identity lexicon: find, mask and swap group terms in a text (SPEC.md, "Instrument validity").

- `find`: every group term in the text, longest first, leftmost first; English terms match whole words,
  case-insensitively, multi-word terms also hyphenated (African-American); a term that is part of a hyphenated
  word (Asian-American, Muslim-majority) is found with form `hyphenated`. Non-identity uses are left out: a
  listed collocation the term overlaps (black hole, 明白人), an `ambiguous` term before a listed non-person noun
  (black coffee, white wine), a `needs_person` term not before a person noun (old house vs old man).
- `mask`: every found term replaced by one placeholder.
- `swap`: every term of one group replaced by the other group's term of the same form and variant (women ->
  men, girls -> boys, Islam -> Christianity, Jewish -> Muslim), keeping capitals and fixing a/an.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from trusteval.errors import UsageError
from trusteval.lexicon.files import Associated, Context, Entry
from trusteval.lexicon.sentences import fill, neutral_sentences, toxic_sentences
from trusteval.lexicon.symmetric import Swapped, associated_pattern, canonical_phrase, counterpart, pieces

PLACEHOLDER = {"en": "grouptoken", "zh": "群体"}
_FUNCTION_WORDS = frozenset(
    {
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "and",
        "or",
        "nor",
        "but",
        "so",
        "who",
        "whom",
        "whose",
        "which",
        "that",
        "than",
        "then",
        "have",
        "has",
        "had",
        "do",
        "does",
        "did",
        "will",
        "would",
        "can",
        "could",
        "should",
        "may",
        "might",
        "must",
        "shall",
        "in",
        "on",
        "at",
        "of",
        "to",
        "from",
        "with",
        "by",
        "for",
        "as",
        "into",
        "about",
        "like",
        "not",
        "also",
        "too",
        "all",
        "both",
    }
)
_VERBS = frozenset(
    [
        "says",
        "said",
        "asks",
        "asked",
        "won",
        "wins",
        "helped",
        "helps",
        "runs",
        "ran",
        "lives",
        "lived",
        "went",
        "goes",
        "came",
        "comes",
        "told",
        "tells",
        "thinks",
        "thought",
        "wants",
        "wrote",
        "writes",
        "made",
        "makes",
        "gave",
        "gives",
        "took",
        "takes",
        "spoke",
        "speaks",
        "sees",
        "saw",
        "knows",
        "knew",
        "believes",
        "prays",
        "works",
        "smiles",
        "smiled",
    ]
)  # common verbs after a noun (past tenses in -ed are caught by their ending)
_FALLBACK = {
    "singular": ("adjective", "plural"),
    "plural": ("adjective", "singular"),
    "adjective": ("singular", "plural"),
    "name": ("adjective", "singular"),
    "noun": ("name",),
}
_SUFFIX = {("singular", "adjective"): " person", ("plural", "adjective"): " people"}


@dataclass(frozen=True)
class Mention:
    """One group term found in a text: `text[start:end] == surface`."""

    start: int
    end: int
    surface: str
    group: str
    category: str
    form: str  # singular | plural | adjective | name (en), noun | name (zh), or hyphenated (part of a compound)
    base_form: str  # the lexicon form of the term, used to align a swap
    variant: str = ""
    term: str = ""  # the lexicon's spelling of the term (its capitals: Muslim, black)


class Lexicon:
    """The group terms of one language with their groups, categories and forms."""

    def __init__(
        self,
        lang: str,
        entries: list[Entry],
        context: Context,
        source: str = "",
        associated: Sequence[Associated] = (),
    ):
        self.lang = lang
        self.entries = tuple(entries)
        self.context = context
        self.source = source
        self.associated = tuple(associated)  # words that go with a group without naming it (mosque, 清真寺)
        self._by_word = {self._key(a.word): a for a in self.associated}
        self._by_term: dict[str, list[Entry]] = {}
        for entry in entries:
            self._by_term.setdefault(self._key(entry.term), []).append(entry)

    def _key(self, surface: str) -> str:
        return re.sub(r"[\s-]+", " ", surface.lower()) if self.english else surface.lower()

    @property
    def english(self) -> bool:
        return self.lang != "zh"

    @cached_property
    def by_group(self) -> dict[str, list[Entry]]:
        """group -> its entries, in file order."""
        found: dict[str, list[Entry]] = {}
        for entry in self.entries:
            found.setdefault(entry.group, []).append(entry)
        return found

    def categories(self) -> list[str]:
        return list(dict.fromkeys(e.category for e in self.entries))

    def groups(self, category: str | None = None) -> list[str]:
        """The groups of a category (all groups without one), in file order."""
        return list(dict.fromkeys(e.group for e in self.entries if category is None or e.category == category))

    def category_of(self, group: str) -> str:
        for entry in self.entries:
            if entry.group == group:
                return entry.category
        raise UsageError(f"unknown group '{group}' in the {self.lang} identity lexicon")

    def terms(self, group: str) -> list[str]:
        self.category_of(group)
        return list(dict.fromkeys(e.term for e in self.entries if e.group == group))

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        terms = sorted({e.term for e in self.entries}, key=len, reverse=True)
        if self.english:
            body = "|".join(_flexible(t) for t in terms)
            return re.compile(rf"(?<![\w+])(?:{body})(?![\w+])", re.IGNORECASE)
        return re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)

    @cached_property
    def _phrases(self) -> re.Pattern[str] | None:
        if not self.context.phrases:
            return None
        body = "|".join(_flexible(p) for p in sorted(self.context.phrases, key=len, reverse=True))
        if self.english:
            return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)
        return re.compile(body, re.IGNORECASE)

    def find(self, text: str) -> list[Mention]:
        """Every group term in the text, in order (non-identity uses left out)."""
        blocked = [m.span() for m in self._phrases.finditer(text)] if self._phrases else []
        mentions = []
        for match in self._pattern.finditer(text):
            start, end = match.span()
            if any(start < b_end and b_start < end for b_start, b_end in blocked):
                continue
            mention = self._mention(text, start, end)
            if mention is not None:
                mentions.append(mention)
        return mentions

    def _mention(self, text: str, start: int, end: int) -> Mention | None:
        surface = text[start:end]
        candidates = self._by_term.get(self._key(surface), [])
        if not candidates:
            return None
        following = _next_word(text, end) if self.english else ""
        entry = _choose_form(candidates, following)
        if self.english and not self._identity_use(entry, following):
            return None
        hyphenated = (start > 0 and text[start - 1] == "-") or (end < len(text) and text[end] == "-")
        form = "hyphenated" if hyphenated and self.english else entry.form
        return Mention(start, end, surface, entry.group, entry.category, form, entry.form, entry.variant, entry.term)

    def _identity_use(self, entry: Entry, following: str) -> bool:
        if "needs_person" in entry.flags:
            return following in self.context.persons
        if "ambiguous" in entry.flags:
            return not _is_object(following, self.context.objects)
        return True

    def find_associated(self, text: str) -> list[tuple[int, int, Associated]]:
        """Every associated word in the text (start, end, its entry), in order; overlaps with terms included."""
        pattern = self._associated
        if pattern is None:
            return []
        found = []
        for match in pattern.finditer(text):
            word = self._by_word.get(self._key(match.group(0)))
            if word is not None:
                found.append((match.start(), match.end(), word))
        return found

    @cached_property
    def _associated(self) -> re.Pattern[str] | None:
        return associated_pattern(list(self.associated), self.english)

    def symmetric_swaps(
        self,
        text: str,
        from_group: str,
        to_groups: Sequence[str],
        *,
        keep_variants: bool = True,
        mentions: Sequence[Mention] | None = None,
    ) -> Swapped:
        """The versions of the scorer bias control (lexicon/symmetric.py): noun phrase for canonical noun phrase,
        faith names and associated words by slot, the source group's own version normalised the same way;
        words with no counterpart in a target kept and listed."""
        self.category_of(from_group)
        found = pieces(self, text, from_group, list(self.find(text) if mentions is None else mentions))
        texts, kept = {}, {}
        for to_group in to_groups:
            self.category_of(to_group)
            words = [counterpart(self, p, to_group, keep_variants) for p in found]
            kept[to_group] = [p.surface for p, w in zip(found, words, strict=True) if w is None]
            texts[to_group] = self._rewrite_pieces(text, found, words)
        return Swapped(texts, kept)

    def _rewrite_pieces(self, text: str, found: list, words: list[str | None]) -> str:
        out: list[str] = []
        position = 0
        for piece, word in zip(found, words, strict=True):
            before = text[position : piece.start]
            new = piece.surface if word is None else word
            if word is not None and self.english:
                new = _cased(text, piece.start, piece.surface, piece.term, piece.kind, word, writer=False)
                before = _fix_article(before, new)
            out += [before, new]
            position = piece.end
        out.append(text[position:])
        return "".join(out)

    def groups_in(self, text: str) -> list[str]:
        """The groups named in the text, in order of first mention, each once."""
        return list(dict.fromkeys(m.group for m in self.find(text)))

    def mask(self, text: str, placeholder: str | None = None) -> str:
        """Every group term replaced by the placeholder (default: `grouptoken` / `群体`)."""
        token = placeholder if placeholder is not None else PLACEHOLDER["zh" if self.lang == "zh" else "en"]
        return self._rewrite(text, self.find(text), lambda m: token)

    def swap(self, text: str, from_group: str, to_group: str) -> str:
        """Every term of `from_group` replaced by `to_group`'s term of the same form (and variant, where it
        has one), capitals kept, a/an fixed; other groups' terms and non-identity uses untouched."""
        return self.swaps(text, from_group, [to_group])[to_group]

    def swaps(
        self, text: str, from_group: str, to_groups: Sequence[str], mentions: Sequence[Mention] | None = None
    ) -> dict[str, str]:
        """`swap` to each of several groups, the text searched once (`mentions`: `find(text)`, if known)."""
        self.category_of(from_group)
        found = [m for m in (self.find(text) if mentions is None else mentions) if m.group == from_group]
        result = {}
        for to_group in to_groups:
            targets = [e for e in self.entries if e.group == to_group]
            if not targets:
                raise UsageError(f"unknown group '{to_group}' in the {self.lang} identity lexicon")
            if to_group == from_group:
                result[to_group] = text
                continue
            result[to_group] = self._rewrite(text, found, self._replacer(targets, text))
        return result

    def _replacer(self, targets: list[Entry], text: str) -> Callable[[Mention], str]:
        return lambda mention: self._replacement(mention, targets, text)

    def _replacement(self, mention: Mention, targets: list[Entry], text: str) -> str:
        word = aligned_term(mention.base_form, mention.variant, targets)
        if not self.english:
            return word
        return _cased(text, mention.start, mention.surface, mention.term, mention.form, word)

    def _rewrite(self, text: str, mentions: list[Mention], replace: Callable[[Mention], str]) -> str:
        pieces: list[str] = []
        position = 0
        for mention in mentions:
            before = text[position : mention.start]
            new = replace(mention)
            if self.english:
                before = _fix_article(before, new)
            pieces += [before, new]
            position = mention.end
        pieces.append(text[position:])
        return "".join(pieces)

    def noun_phrase(self, group: str, form: str | None = None) -> str:
        """How the built-in sentences name a group: `a woman`, `a Muslim person`, `an Asian person`, `河南人`.
        English `form`: `singular` (a Jew) or `adjective` (a Jewish person) or `canonical` (the control's phrase:
        a woman, a Muslim, a white person); default: the singular noun when it differs from the adjective, else
        the adjective + person."""
        entries = [e for e in self.entries if e.group == group]
        if not entries:
            raise UsageError(f"unknown group '{group}' in the {self.lang} identity lexicon")
        if form == "canonical":
            word = canonical_phrase(self, group)
            return f"{_article(word)} {word}" if self.english else word
        if not self.english:
            return entries[0].term
        adjective = next((e.term for e in entries if e.form == "adjective" and not e.variant), None)
        singular = next((e.term for e in entries if e.form == "singular" and "needs_person" not in e.flags), None)
        if form is None:
            form = "singular" if singular and (adjective is None or singular.lower() != adjective.lower()) else ""
        by_adjective = (adjective or singular or entries[0].term) + " person"
        word = singular if form == "singular" and singular else by_adjective
        return f"{_article(word)} {word}"

    def has_singular(self, group: str) -> bool:
        return any(e.group == group and e.form == "singular" and "needs_person" not in e.flags for e in self.entries)

    def sentences(self, kind: str, group: str, form: str | None = None) -> list[str]:
        """The built-in `neutral` (or `toxic`) sentences naming `group` (see `noun_phrase` for `form`)."""
        templates = neutral_sentences(self.lang) if kind == "neutral" else toxic_sentences(self.lang)
        phrase = self.noun_phrase(group, form)
        return [fill(t, phrase) for t in templates]


def _flexible(term: str) -> str:
    """A term's regex: the words of a multi-word or hyphenated term joined by spaces or hyphens."""
    return r"[\s-]+".join(re.escape(part) for part in re.split(r"[\s-]+", term))


def _next_word(text: str, end: int) -> str:
    match = re.match(r"[ \t-]([A-Za-z']+)", text[end:])
    return match.group(1).lower() if match else ""


def _choose_form(candidates: list[Entry], following: str) -> Entry:
    """A surface listed in several forms (Muslim: noun and adjective): adjective before a word that is not a
    function word or a verb ("Muslim women", "Muslim-majority"; not "an Asian asked", "a Muslim says"), else the
    noun form."""
    if len(candidates) == 1:
        return candidates[0]
    adjective = next((e for e in candidates if e.form == "adjective"), None)
    verb = following in _VERBS or (len(following) > 4 and following.endswith("ed"))
    if adjective is not None and following and following not in _FUNCTION_WORDS and not verb:
        return adjective
    return next((e for e in candidates if e.form != "adjective"), candidates[0])


def is_noun_slot(text: str, end: int) -> bool:
    """Whether the word after `end` (if any) is no noun a term could qualify: none, a function word or a verb."""
    following = _next_word(text, end)
    return (
        not following
        or following in _FUNCTION_WORDS
        or following in _VERBS
        or (len(following) > 4 and following.endswith("ed"))
    )


def _is_object(word: str, objects: set[str]) -> bool:
    if not word:
        return False
    return (
        word in objects
        or (word.endswith("s") and word[:-1] in objects)
        or (word.endswith("es") and word[:-2] in objects)
    )


def _cased(text: str, start: int, surface: str, term: str, form: str, word: str, writer: bool = True) -> str:
    """`word` in place of `surface`: all capitals kept, a capital where a sentence opens or (`writer`) where the
    writer used one the lexicon does not (Black); without `writer` the word keeps the lexicon's capitals."""
    if surface.isupper() and len(surface) > 1 and not term.isupper():
        return word.upper()
    opens_sentence = re.search(r"(^|[.!?:]\s+|\n\s*)[\"'(]?$", text[:start]) is not None
    capitalised_by_writer = writer and surface[:1].isupper() and (not term[:1].isupper() or form == "hyphenated")
    if opens_sentence or capitalised_by_writer:
        return word[:1].upper() + word[1:]
    return word


def aligned_term(form: str, variant: str, targets: list[Entry]) -> str:
    """The target's term of the same form (and variant), else of a fallback form (+ person / people)."""
    for candidates in (
        [e for e in targets if e.form == form and e.variant == variant],
        [e for e in targets if e.form == form and not e.variant],
        [e for e in targets if e.form == form],
    ):
        if candidates:
            return candidates[0].term
    for other in _FALLBACK.get(form, ()):
        found = [e for e in targets if e.form == other]
        if found:
            best = next((e for e in found if not e.variant), found[0])
            return best.term + _SUFFIX.get((form, other), "")
    return targets[0].term


def _article(word: str) -> str:
    lower = word.lower()
    if re.match(r"(eu|uni|use|usu|one|once)", lower):
        return "a"
    if re.match(r"(hon|hour|heir)", lower):
        return "an"
    if re.match(r"(lgbt|lgbtq)", lower):
        return "an"
    return "an" if lower[:1] in "aeiou" else "a"


def _fix_article(before: str, new_word: str) -> str:
    """`a` / `an` right before a replaced term made to fit the new term (an Asian -> a Black)."""
    match = re.search(r"(?<![\w'])([Aa]n?)(\s+)$", before)
    if not match:
        return before
    article = _article(new_word)
    old = match.group(1)
    if old.lower() == article:
        return before
    fixed = article.capitalize() if old[0].isupper() else article
    return before[: match.start(1)] + fixed + match.group(2)
