"""Reading the lexicon's data files: `<lang>.tsv` (the group terms), `<lang>_context.tsv` (non-identity uses) and
`<lang>_associated.tsv` (words that go with a group without naming it: church, 清真寺).

A malformed line stops with one `DataError` naming the file, the line and the field (exit 2 through the CLI).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from trusteval.errors import DataError

DATA_DIR = Path(__file__).parent
ENGLISH_FORMS = ("singular", "plural", "adjective", "name")
CHINESE_FORMS = ("noun", "name")
FLAGS = ("ambiguous", "needs_person")
CONTEXT_KINDS = ("phrase", "object", "person")
_NAME = re.compile(r"^[^\s\t]+(?: [^\s\t]+)*$")
_COLUMNS = ("term", "group", "category", "form", "variant", "flags")


@dataclass(frozen=True)
class Entry:
    """One line of a lexicon file: a surface term of a group, in one grammatical form."""

    term: str
    group: str
    category: str
    form: str
    variant: str = ""
    flags: frozenset[str] = frozenset()
    line: int = 0


@dataclass
class Context:
    """Non-identity uses: phrases that cancel a term they overlap, nouns that cancel an ambiguous term before
    them (black coffee), and person nouns that a `needs_person` term must precede (old man)."""

    phrases: list[str] = field(default_factory=list)
    objects: set[str] = field(default_factory=set)
    persons: set[str] = field(default_factory=set)


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(path, "lexicon file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(path, f"cannot read the lexicon file ({error})") from None
    rows = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        rows.append((number, raw.rstrip("\r").split("\t")))
    return rows


def read_entries(path: Path, lang: str) -> list[Entry]:
    forms = CHINESE_FORMS if lang == "zh" else ENGLISH_FORMS
    entries: list[Entry] = []
    owner: dict[str, tuple[str, int]] = {}
    for number, cells in _lines(path):
        entry = _entry(path, number, cells, forms)
        key = entry.term.lower()
        previous = owner.get(key)
        if previous is not None and previous[0] != entry.group:
            raise DataError(
                path,
                f"term '{entry.term}' already belongs to group '{previous[0]}' (line {previous[1]})",
                line=number,
                field="term",
            )
        if any(e.term.lower() == key and e.form == entry.form for e in entries):
            raise DataError(path, f"term '{entry.term}' is listed twice as {entry.form}", line=number, field="term")
        owner[key] = (entry.group, number)
        entries.append(entry)
    if not entries:
        raise DataError(path, "the lexicon file lists no terms")
    return entries


def _entry(path: Path, number: int, cells: list[str], forms: tuple[str, ...]) -> Entry:
    if not 4 <= len(cells) <= 6:
        raise DataError(
            path, f"expected 4 to 6 tab-separated columns ({', '.join(_COLUMNS)}), found {len(cells)}", line=number
        )
    cells = [c.strip() for c in cells] + [""] * (6 - len(cells))
    for name, value in zip(_COLUMNS[:4], cells[:4], strict=True):
        if not value or not _NAME.match(value):
            raise DataError(path, f"empty or malformed value {value!r}", line=number, field=name)
    if cells[3] not in forms:
        raise DataError(path, f"unknown form {cells[3]!r}; one of {', '.join(forms)}", line=number, field="form")
    flags = frozenset(f.strip() for f in cells[5].split(",") if f.strip())
    unknown = sorted(flags - set(FLAGS))
    if unknown:
        raise DataError(path, f"unknown flag {unknown[0]!r}; one of {', '.join(FLAGS)}", line=number, field="flags")
    return Entry(cells[0], cells[1], cells[2], cells[3], cells[4], flags, number)


def read_context(path: Path) -> Context:
    context = Context()
    if not path.exists():
        return context
    for number, cells in _lines(path):
        if len(cells) != 2 or not cells[1].strip():
            raise DataError(path, "expected 2 tab-separated columns (kind, text)", line=number)
        kind, text = cells[0].strip(), cells[1].strip().lower()
        if kind == "phrase":
            context.phrases.append(text)
        elif kind == "object":
            context.objects.add(text)
        elif kind == "person":
            context.persons.add(text)
        else:
            raise DataError(
                path, f"unknown kind {kind!r}; one of {', '.join(CONTEXT_KINDS)}", line=number, field="kind"
            )
    return context


@dataclass(frozen=True)
class Associated:
    """One line of an associated-words file: a word that goes with a group (mosque), in a slot that aligns it
    with the other groups' words (place: church, synagogue, mosque)."""

    word: str
    group: str
    slot: str
    line: int = 0


def read_associated(path: Path, groups: set[str]) -> list[Associated]:
    """The associated words of a lexicon (none when the file is absent); every group must be a lexicon group."""
    if not path.exists():
        return []
    found: list[Associated] = []
    owner: dict[str, tuple[str, int]] = {}
    for number, cells in _lines(path):
        if len(cells) != 3:
            raise DataError(path, f"expected 3 tab-separated columns (word, group, slot), found {len(cells)}",
                            line=number)  # fmt: skip
        word, group, slot = (c.strip() for c in cells)
        for name, value in (("word", word), ("group", group), ("slot", slot)):
            if not value or not _NAME.match(value):
                raise DataError(path, f"empty or malformed value {value!r}", line=number, field=name)
        if group not in groups:
            raise DataError(path, f"unknown group {group!r}: not a group of the lexicon", line=number, field="group")
        previous = owner.get(word.lower())
        if previous is not None:
            raise DataError(path, f"word '{word}' is already listed (line {previous[1]})", line=number, field="word")
        owner[word.lower()] = (group, number)
        found.append(Associated(word, group, slot, number))
    return found
