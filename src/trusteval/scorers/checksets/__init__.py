"""Response check sets: the sentences a toxicity scorer is validated on as it is used, on model responses.

A scorer scores model responses, not the dataset's comments, so each language has a built-in, versioned check
set (SPEC.md, "Validity on responses"): polite refusals, counter-speech that names a group and a bias word, and
neutral informative answers about groups (all non-toxic, label 0), toxic answers (label 1) and, since version 2,
toxic answers opened by an apology or refusal phrase (`apology_toxic`, label 1; `without_opener` names the
toxic row it opens, and the verdict needs 90% of them called toxic where that row is). The sets are
JSON lines files in this folder, `responses-<lang>-v<version>.jsonl`, one `{"kind", "label", "text"}` object a
line, written from templates by scripts/make_check_sets.py: not a human-annotated sample of real model outputs.
The Chinese set also holds COLD test's safe anti-bias comments (`fine-grained-label` 3, kind `cold_anti_bias`),
read from the data folder when the set is loaded (never copied into the package).

`load_check_set(lang, data)` gives the set as Prompts (category = kind); `load_check_file(path, lang)` reads a
user's own set in the same format (a malformed line is a DataError naming the file and line);
`check_set_sha256(lang)` is the key its verdicts are stored under: the sha256 of the package file and, for zh,
of COLD test's pinned sha256, so it is known without reading the data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from trusteval.data.decode import split_lines
from trusteval.data.sources import DataContext
from trusteval.errors import DataError, UsageError
from trusteval.records import Prompt

VERSION = 2  # 2 (issue 29): kind apology_toxic added
CHECK_LANGUAGES = ("zh", "en")
NON_TOXIC_KINDS = ("refusal", "counter_speech", "neutral", "cold_anti_bias")
TOXIC_KINDS = ("toxic", "apology_toxic")
APOLOGY_TOXIC = "apology_toxic"  # a toxic answer opened by an apology or refusal phrase; `without_opener` names it
WITHOUT_OPENER = "without_opener"
COLD_ANTI_BIAS = "cold_anti_bias"
COLD_ANTI_BIAS_LABEL = "3"  # COLD test's fine-grained label of safe, anti-bias comments


@dataclass(frozen=True)
class CheckSet:
    name: str  # "responses-zh-v2", or the path of a user's file
    lang: str
    items: tuple[Prompt, ...]
    sha256: str  # the key the verdict on this set is stored under

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.category or "" for p in self.items))


def file_name(lang: str) -> str:
    return f"responses-{lang}-v{VERSION}.jsonl"


def _package_file(lang: str):
    if lang not in CHECK_LANGUAGES:
        raise UsageError(f"no response check set for language '{lang}'; built in: {', '.join(CHECK_LANGUAGES)}")
    return resources.files("trusteval.scorers.checksets").joinpath(file_name(lang))


def check_set_sha256(lang: str) -> str:
    """The stored-verdict key of the built-in set of `lang` (file bytes; zh: and COLD test's pinned sha256)."""
    digest = hashlib.sha256(_package_file(lang).read_bytes())
    if lang == "zh":
        from trusteval.data.sources import catalog

        digest.update(catalog()["cold"]["files"]["test.csv"]["sha256"].encode("ascii"))
    return digest.hexdigest()


def parse_lines(text: str, where: str, lang: str) -> list[Prompt]:
    """The items of a built-in check set's text (see `parse_rows`)."""
    return parse_rows(_json_rows(text, where), where, lang)


def _json_rows(text: str, where: str) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(split_lines(text), start=1):  # not str.splitlines: U+2028 is JSON text
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(where, f"not a JSON object ({exc.msg})", line=number) from None


def parse_rows(rows: Iterable[tuple[int, Any]], where: str, lang: str) -> list[Prompt]:
    """The items of a check set; a line that is not an object with a known kind, a 0/1 label that fits
    the kind, and a non-empty text is a DataError naming the file and line."""
    found: list[Prompt] = []
    for number, row in rows:
        if not isinstance(row, dict):
            raise DataError(where, "not a JSON object", line=number)
        kind, label, item = row.get("kind"), row.get("label"), row.get("text")
        if kind not in (*NON_TOXIC_KINDS, *TOXIC_KINDS):
            known = ", ".join((*NON_TOXIC_KINDS, *TOXIC_KINDS))
            raise DataError(where, f"kind {kind!r} is not one of {known}", line=number, field="kind")
        if label not in (0, 1) or isinstance(label, bool) or label != int(kind in TOXIC_KINDS):
            raise DataError(where, f"label {label!r} must be {int(kind in TOXIC_KINDS)} for kind {kind}",
                            line=number, field="label")  # fmt: skip
        if not isinstance(item, str) or not item.strip():
            raise DataError(where, "empty or missing text", line=number, field="text")
        found.append(Prompt(f"{kind}:{number}", where, item.strip(), lang, label, kind, _opener_field(row)))
    if not found:
        raise DataError(where, "no items")
    _check_openers(found, where)
    return found


def _opener_field(row: dict) -> dict[str, str]:
    base = row.get(WITHOUT_OPENER)
    return {WITHOUT_OPENER: base.strip()} if row.get("kind") == APOLOGY_TOXIC and isinstance(base, str) else {}


def _check_openers(items: list[Prompt], where: str) -> None:
    """Every apology_toxic row names, in `without_opener`, the text of a toxic row of the same set."""
    toxic = {p.text for p in items if p.category == "toxic"}
    for item in items:
        if item.category == APOLOGY_TOXIC and item.attributes.get(WITHOUT_OPENER) not in toxic:
            raise DataError(where, "without_opener must be the text of a toxic row of the set",
                            line=int(item.id.split(":")[1]), field=WITHOUT_OPENER)  # fmt: skip


def load_check_set(lang: str, data: DataContext | None = None) -> CheckSet:
    """The built-in check set of `lang`; for zh with `data`, COLD test's anti-bias comments are added."""
    name = file_name(lang).removesuffix(".jsonl")
    items = parse_lines(_package_file(lang).read_text("utf-8"), name, lang)
    if lang == "zh" and data is not None:
        items += cold_anti_bias(data)
    return CheckSet(name, lang, tuple(items), check_set_sha256(lang))


def cold_anti_bias(data: DataContext) -> list[Prompt]:
    from trusteval.data.cold import read_split

    test, _ = read_split("test", data)
    return [
        Prompt(f"{COLD_ANTI_BIAS}:{p.id}", "cold", p.text, "zh", 0, COLD_ANTI_BIAS)
        for p in test
        if p.attributes.get("fine_grained_label") == COLD_ANTI_BIAS_LABEL
    ]


def load_check_file(path: str | Path, lang: str) -> CheckSet:
    """A user's own check set in the built-in format; its verdict is keyed by its content (text and label).

    The file is read by the data files' reader, with their limits (`trusteval.data.files`): UTF-8 (a bad byte
    named with its line), no NUL, JSON nested too deeply or a lone surrogate refused with the line, and no text
    over MAX_FIELD_CHARS characters."""
    from trusteval.data.files import read_json_lines
    from trusteval.scorers.verdict import content_sha256

    file = Path(path)
    if not file.exists():
        raise DataError(path, "no such response check set file")
    try:
        items = parse_rows(_sized(file, read_json_lines(file)), str(path), lang)
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror or exc}") from None
    return CheckSet(str(path), lang, tuple(items), content_sha256(items))


def _sized(path: Path, rows: Iterable[tuple[int, dict[str, Any]]]) -> Iterator[tuple[int, dict[str, Any]]]:
    from trusteval.data.files import check_row_sizes

    for number, row in rows:
        check_row_sizes(path, number, row)
        yield number, row
