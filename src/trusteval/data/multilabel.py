"""Class columns that hold several tags: split a cell into tags, map each tag to a class, pick one class.

One rule for a row whose tags map to several classes, used by every loader (the TisEval translations, `file:`
and `hf:` with `category_sep=` / `category_map=`): **first in order**: the row is counted once, under the first
of its classes in the dataset's class order (for `file:` / `hf:` the order in which the classes first appear in
`category_map`). Every other class the row has is kept in its `classes` attribute, so nothing is lost, and
`several_classes_note` says under the tables how many rows the rule decided.

A tag that no mapping covers is a DataError naming the file, the column and the tag (exit 2), unless the
mapping has a default (`*:<class>`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trusteval.errors import DataError, UsageError

RULE_NAME = "first in order"
WHITESPACE_WORD = "space"
DEFAULT_TAG = "*"
CLASSES_ATTRIBUTE = "classes"


@dataclass(frozen=True)
class ClassRule:
    """How a class cell becomes one class: separators, tag -> class mapping, class precedence."""

    separators: str  # characters that separate tags; whitespace when `split_whitespace`
    mapping: Mapping[str, str]
    order: tuple[str, ...]
    default: str | None = None  # class of a tag the mapping does not name (None: such a tag is an error)
    split_whitespace: bool = False

    def tags(self, cell: str) -> list[str]:
        """The cell's tags in order, empty pieces dropped."""
        pattern = "[" + re.escape(self.separators) + (r"\s" if self.split_whitespace else "") + "]+"
        if pattern == "[]+":
            return [cell.strip()] if cell.strip() else []
        return [tag for tag in (t.strip() for t in re.split(pattern, cell)) if tag]

    def classes(self, where: str | Path, line: int, column: str, cell: str) -> list[str]:
        """The distinct classes of a cell's tags in class order; a DataError for an unmapped tag."""
        found: set[str] = set()
        for tag in self.tags(cell):
            cls = self.mapping.get(tag, self.default)
            if cls is None:
                raise DataError(where, f"tag {tag!r} has no class; {self.remedy}", line=line, field=column)
            found.add(cls)
        return [c for c in self.order if c in found]

    @property
    def remedy(self) -> str:
        return f"map it with category_map=TAG:CLASS (or {DEFAULT_TAG}:CLASS for every other tag)"

    def note(self) -> str:
        return (
            f"Several classes in one row: counted once, under the first in the order {', '.join(self.order)} "
            f"(rule '{RULE_NAME}'); all of a row's classes are in its 'classes' attribute."
        )


def several_classes_note(rule: ClassRule, several: int, total: int) -> str:
    return f"{several} of {total} rows have several classes. {rule.note()}"


def parse_category_map(raw: str) -> tuple[dict[str, str], str | None, tuple[str, ...]]:
    """`性别:gender,地区:region,*:others` -> mapping, default class, class order (first appearance)."""
    mapping: dict[str, str] = {}
    default: str | None = None
    order: list[str] = []
    for pair in raw.split(","):
        tag, sep, cls = pair.rpartition(":")
        tag, cls = tag.strip(), cls.strip()
        if not sep or not tag or not cls:
            raise UsageError(f"category_map entry '{pair}' is not TAG:CLASS (e.g. category_map=a:x,b:x,*:other)")
        if tag in mapping or (tag == DEFAULT_TAG and default is not None):
            raise UsageError(f"category_map names the tag '{tag}' twice")
        if tag == DEFAULT_TAG:
            default = cls
        else:
            mapping[tag] = cls
        if cls not in order:
            order.append(cls)
    return mapping, default, tuple(order)


def parse_separators(raw: str) -> tuple[str, bool]:
    """`category_sep`: the characters that separate tags; the word `space` (alone or after others,
    e.g. `,space`) means any whitespace."""
    whitespace = raw.endswith(WHITESPACE_WORD)
    chars = raw.removesuffix(WHITESPACE_WORD) if whitespace else raw
    if not chars and not whitespace:
        raise UsageError("category_sep is empty; give the characters that separate tags, e.g. category_sep=, or space")
    return chars, whitespace


def user_rule(category_sep: str | None, category_map: str | None) -> ClassRule | None:
    """The rule of a `file:` / `hf:` spec, or None when neither option is given (one class per cell, as is)."""
    if category_sep is None and category_map is None:
        return None
    if category_map is None:
        raise UsageError("category_sep needs category_map (which class each tag is, in the order that decides a "
                         "row with several classes), e.g. category_map=insult:insult,threat:other")  # fmt: skip
    chars, whitespace = parse_separators(category_sep) if category_sep is not None else ("", False)
    mapping, default, order = parse_category_map(category_map)
    return ClassRule(chars, mapping, order, default, whitespace)
