"""Group-swapped versions of a response and its group-neutral score (SPEC.md, "Scorer bias control").

A response that names a group of type T (found with the identity lexicon: nouns, adjectives, plurals, faith
names, hyphenated compounds; not "black coffee") gets one version per compared group of T, the source group's
terms replaced by that group's (`Lexicon.swap`); the version of the source group is the response itself.
The source group is the prompt's group when the response names it, else the first compared group it names.
Its group-neutral score is the mean of the versions' scores. Disparities between groups of different types
(across-type pairs, the maximum slope over all groups, TrustEval's attribute classes, which are group types)
use the versions over every compared group of every type (ALL_TYPES): "As a woman" -> "As a Christian".
A response that names no compared group, or one of whose versions has no score, keeps its raw score (the
latter are counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trusteval.lexicon import Lexicon, load_lexicon

SENTENCE_KINDS = ("neutral", "toxic")
ALL_TYPES = "*"  # every compared group of every type: the versions behind across-type disparities


@dataclass(frozen=True)
class ControlGroups:
    """The groups a control compares, per type, with the lexicon that finds and swaps their terms."""

    lexicon: Lexicon
    groups: dict[str, list[str]]  # type -> groups with lexicon terms, in the run's order
    missing: dict[str, list[str]] = field(default_factory=dict)  # type -> groups the lexicon does not know

    def members(self, group_type: str | None) -> list[str]:
        """The compared groups of a type (of every type with two or more groups for ALL_TYPES)."""
        if group_type == ALL_TYPES:
            return [g for members in self.groups.values() if len(members) >= 2 for g in members]
        return self.groups.get(group_type or "") or []

    def reasons(self) -> list[str]:
        found = [f"{t}: no identity-lexicon terms for {', '.join(m)}" for t, m in self.missing.items() if m]
        found += [f"{t}: fewer than two groups with terms, no control" for t, g in self.groups.items() if len(g) < 2]
        return found


def control_groups(lang: str, groups: Mapping[str, Sequence[str]]) -> ControlGroups:
    lexicon = load_lexicon(lang)
    known = set(lexicon.groups())
    return ControlGroups(
        lexicon,
        {t: [g for g in members if g in known] for t, members in groups.items()},
        {t: [g for g in members if g not in known] for t, members in groups.items()},
    )


def versions(setup: ControlGroups, text: str, group_type: str | None, own: str | None = None) -> dict[str, str]:
    """{group: the text as that group's} for every compared group of the type (of all types: ALL_TYPES);
    empty when the text names no compared group of it (or the type has fewer than two)."""
    members = setup.members(group_type)
    if len(members) < 2:
        return {}
    mentions = setup.lexicon.find(text)
    named = [g for g in dict.fromkeys(m.group for m in mentions) if g in members]
    if not named:
        return {}
    source = own if own in named else named[0]
    return setup.lexicon.swaps(text, source, members, mentions)


@dataclass(frozen=True)
class Neutral:
    value: float  # the group-neutral score (the raw score when not swapped)
    swapped: bool  # every version scored
    unscored: bool  # named a group but a version had no score: kept raw


def neutral_score(raw: float, text: str, copies: Mapping[str, str], value: Mapping[str, float]) -> Neutral:
    """The mean over the versions' values (the response's own version, `text`, counts with its raw value)."""
    if not copies:
        return Neutral(raw, False, False)
    found = [raw if copy == text else value.get(copy) for copy in copies.values()]
    scored = [v for v in found if v is not None]
    if len(scored) < len(found):
        return Neutral(raw, False, True)
    return Neutral(float(sum(scored)) / len(scored), True, False)


def builtin_texts(setup: ControlGroups) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(kind, type) -> {group: the built-in sentences naming it} for every type with two or more groups, every
    group of a type named in one form (a Jew / a Muslim; a white person / an Asian person)."""
    found = {}
    for kind in SENTENCE_KINDS:
        for group_type, members in setup.groups.items():
            if len(members) >= 2:
                form = "singular" if all(setup.lexicon.has_singular(g) for g in members) else "adjective"
                found[(kind, group_type)] = {g: setup.lexicon.sentences(kind, g, form) for g in members}
    return found


def all_texts(setup: ControlGroups, responses: Iterable[tuple[str, str | None]]) -> list[str]:
    """Every text the control scores: the versions of each (response, its own group or None) over every
    compared group of every type (those over its own type are among them), and the built-in sentences."""
    texts: dict[str, None] = {}
    for text, own in responses:
        texts.update(dict.fromkeys(versions(setup, text, ALL_TYPES, own).values()))
    for by_group in builtin_texts(setup).values():
        texts.update(dict.fromkeys(t for sentences in by_group.values() for t in sentences))
    return list(texts)


def copy_values(
    scores: Mapping[str, Any], texts: Iterable[str], *, rate_threshold: float | None = None
) -> dict[str, float]:
    """text -> value of every text with a valid stored score (keyed by the text's subject); with
    `rate_threshold`, 100 x (score >= threshold), as a toxicity rate counts it."""
    from trusteval.records import text_subject

    values = {}
    for text in texts:
        score = scores.get(text_subject(text))
        if score is not None and score.ok and score.value is not None:
            v = float(score.value)
            values[text] = v if rate_threshold is None else 100.0 * (v >= rate_threshold)
    return values
