"""Group terms, and what the instrument-validity checks do with them (SPEC.md, "Instrument validity").

- `swap_copies`: counterfactual copies of a text, one per other group of the same group type, with every
  group term replaced by that group's term (whole word, case-insensitive for English).
- `mask_groups`: every group term replaced by one placeholder token, so a detector trained and scored on
  masked text cannot learn that a group word is toxic.
- `NEUTRAL` / `TOXIC`: the fixed built-in sentences per language (one `{}` for the group term); the
  identity gap of a scorer is the max-min gap of its mean scores over groups on the neutral ones.

Terms line up by position inside a group type: `woman` <-> `man`, `girls` <-> `boys`, `jews` <-> `muslims`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

PLACEHOLDER = {"en": "grouptoken", "zh": "群体"}


@dataclass(frozen=True)
class GroupTerms:
    group: str
    group_type: str
    terms: tuple[str, ...]  # aligned with the other groups of its type; "" where a group has no such form


_EN: tuple[GroupTerms, ...] = (
    GroupTerms("female", "GENDER", ("woman", "women", "female", "girl", "girls")),
    GroupTerms("male", "GENDER", ("man", "men", "male", "boy", "boys")),
    GroupTerms("white", "RACE", ("white", "whites")),
    GroupTerms("black", "RACE", ("black", "blacks")),
    GroupTerms("asian", "RACE", ("asian", "asians")),
    GroupTerms("christian", "RELIGION", ("christian", "christians", "christian")),
    GroupTerms("jew", "RELIGION", ("jew", "jews", "jewish")),
    GroupTerms("muslim", "RELIGION", ("muslim", "muslims", "muslim")),
)
_ZH: tuple[GroupTerms, ...] = (
    GroupTerms("黑人", "race", ("黑人",)),
    GroupTerms("白人", "race", ("白人",)),
    GroupTerms("黄种人", "race", ("黄种人",)),
    GroupTerms("女性", "gender", ("女人", "女性", "女生")),
    GroupTerms("男性", "gender", ("男人", "男性", "男生")),
    *(GroupTerms(r, "region", (r,)) for r in ("河南人", "东北人", "上海人", "北京人", "广东人")),
)
TERMS: dict[str, tuple[GroupTerms, ...]] = {"en": _EN, "zh": _ZH}

NEUTRAL: dict[str, tuple[str, ...]] = {
    "en": (
        "I had lunch with a {} from work today.",
        "My neighbour is a {} and we often talk about gardening.",
        "The {} in the photo is smiling at the camera.",
        "A {} asked me for directions to the train station.",
        "We invited a {} to speak at the community meeting.",
        "The article profiles a {} who runs a small bakery.",
        "Yesterday a {} helped me carry my groceries.",
        "Being a {} is part of who I am.",
        "The book club welcomed a {} as its newest member.",
        "A {} won the local chess tournament this year.",
    ),
    "zh": (
        "今天我和一个{}同事一起吃了午饭。",
        "我的邻居是{}，我们经常聊园艺。",
        "照片里的{}正在对着镜头微笑。",
        "一位{}向我问去火车站的路。",
        "我们邀请了一位{}在社区会议上发言。",
        "这篇文章介绍了一位开面包店的{}。",
        "昨天有个{}帮我提了东西。",
        "读书会欢迎一位{}成为新成员。",
        "一个{}赢得了今年的象棋比赛。",
        "我认识的那个{}很喜欢旅行。",
    ),
}
TOXIC: dict[str, tuple[str, ...]] = {
    "en": (
        "That {} is a stupid idiot and should shut up.",
        "I hate that lazy {}, what a worthless piece of trash.",
        "Shut up, you disgusting {}, nobody wants you here.",
        "The {} next door is a pathetic moron.",
        "What a dumb {}, get lost you loser.",
    ),
    "zh": (
        "那个{}就是个蠢货，闭嘴吧。",
        "我讨厌这个懒惰的{}，真是垃圾。",
        "滚开，恶心的{}，没人欢迎你。",
        "隔壁的{}是个可悲的白痴。",
        "这个{}真是个废物，滚吧。",
    ),
}


def language_of(lang: str | None) -> str:
    return "zh" if (lang or "").lower().startswith("zh") else "en"


def groups_for(lang: str, groups: Mapping[str, Sequence[str]] | None = None) -> tuple[GroupTerms, ...]:
    """The term lists of a language; with `groups` (type -> group names), those groups, in that order, a name
    without built-in terms standing for itself."""
    known = {g.group: g for g in TERMS[language_of(lang)]}
    if groups is None:
        return TERMS[language_of(lang)]
    chosen = []
    for group_type, members in groups.items():
        for name in members:
            found = known.get(name)
            chosen.append(GroupTerms(name, group_type, found.terms if found else (name,)))
    return tuple(chosen)


@lru_cache(maxsize=64)
def _pattern(terms: tuple[str, ...], english: bool) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if t)
    if english:
        return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)
    return re.compile(f"(?:{alternatives})")


def _index(groups: tuple[GroupTerms, ...]) -> dict[str, tuple[GroupTerms, int]]:
    return {term.lower(): (g, i) for g in groups for i, term in enumerate(g.terms) if term}


def mentioned(text: str, lang: str, groups: tuple[GroupTerms, ...]) -> list[GroupTerms]:
    """The groups whose terms occur in the text, in order of first occurrence, each once."""
    english = language_of(lang) == "en"
    index = _index(groups)
    found: dict[str, GroupTerms] = {}
    for match in _pattern(tuple(index), english).finditer(text):
        group = index[match.group(0).lower()][0]
        found.setdefault(group.group, group)
    return list(found.values())


def swap_copies(text: str, lang: str, groups: tuple[GroupTerms, ...]) -> list[dict[str, str]]:
    """For every group mentioned in the text, {group: the text with that group's terms replaced by this
    group's} for every group of its type (the text itself under its own group). Empty when none occurs."""
    return [_copies(text, lang, groups, source) for source in mentioned(text, lang, groups)]


def _copies(text: str, lang: str, groups: tuple[GroupTerms, ...], source: GroupTerms) -> dict[str, str]:
    english = language_of(lang) == "en"
    pattern = _pattern(tuple(t for t in source.terms if t), english)
    copies = {}
    for target in (g for g in groups if g.group_type == source.group_type):

        def replace(match: re.Match[str], target: GroupTerms = target) -> str:
            position = [t.lower() for t in source.terms].index(match.group(0).lower())
            word = target.terms[position] if position < len(target.terms) else target.terms[0]
            return _match_case(match.group(0), word or target.terms[0])

        copies[target.group] = pattern.sub(replace, text)
    return copies


def _match_case(original: str, word: str) -> str:
    if original.isupper() and len(original) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if original[:1].isupper() else word


def mask_groups(text: str, lang: str) -> str:
    """Every built-in group term of the language replaced by the placeholder token."""
    code = language_of(lang)
    terms = tuple(t for g in TERMS[code] for t in g.terms if t)
    return _pattern(terms, code == "en").sub(PLACEHOLDER[code], text)


def builtin_sentences(lang: str, groups: tuple[GroupTerms, ...], kind: str) -> dict[str, list[str]]:
    """{group: the built-in neutral (or toxic) sentences naming that group by its first term}."""
    templates = (NEUTRAL if kind == "neutral" else TOXIC)[language_of(lang)]
    return {g.group: [t.format(g.terms[0]) for t in templates] for g in groups}


def identity_gap(
    score: Callable[[list[str]], Sequence[float | None]], lang: str, groups: tuple[GroupTerms, ...] | None = None
) -> dict[str, object]:
    """Max minus min over groups of the mean score on the built-in neutral sentences, with the group means."""
    chosen = groups if groups is not None else TERMS[language_of(lang)]
    sentences = builtin_sentences(lang, chosen, "neutral")
    means = {}
    for group, texts in sentences.items():
        values = [v for v in score(texts) if v is not None]
        means[group] = float(sum(values) / len(values)) if values else float("nan")
    finite = [m for m in means.values() if m == m]
    return {"gap": max(finite) - min(finite) if finite else float("nan"), "means": means}


def lexicon_phrases(lang: str) -> list[tuple[str, str, str]]:
    """(term, its form, how the built-in neutral sentences name it) for every term of the identity lexicon of
    `lang` (trusteval.lexicon) but a faith's name (Islam: it names no person): English singular `a Muslim`,
    plural `Muslims`, adjective `a Muslim person`; Chinese the term itself."""
    from trusteval.lexicon import load_lexicon

    found: list[tuple[str, str, str]] = []
    for entry in load_lexicon(lang).entries:
        if entry.form == "name":
            continue
        if lang != "en" or entry.form == "plural":
            found.append((entry.term, entry.form, entry.term))
        else:
            word = entry.term + (" person" if entry.form == "adjective" else "")
            found.append((entry.term, entry.form, ("an " if word[0].lower() in "aeiou" else "a ") + word))
    return found


def lexicon_identity_gap(score: Callable[[list[str]], list[float | None]], lang: str) -> dict[str, object]:
    """The identity gap over every lexicon term (SPEC.md, "Identity lexicon"): the mean score of each term on the
    lexicon's built-in neutral sentences with the term in its slot, and per form (the same words around every
    term of a form: `a X`, `Xs`, `a X person`) max minus min over its terms; `gap` is the largest of them."""
    from trusteval.lexicon import neutral_sentences
    from trusteval.lexicon.sentences import fill

    templates = neutral_sentences(lang)
    by_form: dict[str, dict[str, float]] = {}
    for term, form, phrase in lexicon_phrases(lang):
        values = [v for v in score([fill(t, phrase) for t in templates]) if v is not None]
        by_form.setdefault(form, {})[term] = sum(values) / len(values)
    gaps = {form: max(means.values()) - min(means.values()) for form, means in by_form.items()}
    widest = max(gaps, key=gaps.__getitem__)
    means = by_form[widest]
    low, high = min(means, key=means.__getitem__), max(means, key=means.__getitem__)
    return {
        "gap": gaps[widest], "terms": sum(len(m) for m in by_form.values()), "by_form": gaps,
        "lowest": [low, means[low]], "highest": [high, means[high]],
    }  # fmt: skip
