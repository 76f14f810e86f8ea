"""`file`: any labelled CSV / TSV / JSONL / JSON / Parquet file, by column mapping.

Spec: `file:<path>?text=<col>&label=<col>&category=<col>&id=<col>&lang=<code>&label_map=yes:1,no:0
&attributes=<col>,<col>`. Defaults: `text`; `label`, `category` and `id` columns are used when the file has
them (a column named in the spec must exist); the id is the line number when there is no id column. The
language comes from a `lang` column, else (or where a cell is empty) from the `lang` option; with neither the
spec is refused (the default scorer depends on it). Labels must be 0 / 1 unless `label_map` says which value
means what.

A category column holding several tags per cell: `category_sep=<characters>` (the word `space`: whitespace)
and `category_map=TAG:CLASS,...[,*:CLASS]` (see trusteval.data.multilabel): a row with several classes is
counted once, under the first of them in the order of `category_map`; a tag the map does not cover is an error.

Every bad row is a DataError naming file, line and field: an empty text, an empty label, a label outside the
expected set, an empty attribute class (a category column that is empty in a row: we refuse it rather than
invent a class), a duplicate id. The dataset is named `file:<stem>@<8 hex>`, the hex digits being a hash of
the file's sha256 and the mapping, so two different files (or mappings) never share stored prompts.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from trusteval.data import LoadedDataset
from trusteval.data.files import Record, read_records, require_columns
from trusteval.data.multilabel import CLASSES_ATTRIBUTE, several_classes_note, user_rule
from trusteval.data.sources import DataContext, sha256_file
from trusteval.errors import DataError, UsageError
from trusteval.options import PluginOptions, read_spec_options
from trusteval.records import Prompt, content_hash
from trusteval.specs import Spec

DEFAULT_LABELS = {"0": 0, "1": 1}
NO_ATTRIBUTES: dict[str, str] = {}  # shared by every prompt without attribute columns (64 bytes each): read only
LANG_COLUMN = "lang"


class Options(PluginOptions):
    """Column mapping of a user file (`file:`) or dataset (`hf:`); a column named here must exist."""

    text: str = Field("text", description="column holding the prompt text")
    label: str | None = Field(None, description="column holding the label (default: 'label' if present)")
    category: str | None = Field(None, description="column holding the category (default: 'category' if present)")
    id: str | None = Field(None, description="column holding a unique id (default: 'id' if present, else the line)")
    lang: str | None = Field(None, description=f"language of every text, e.g. en or zh (or a '{LANG_COLUMN}' column)")
    label_map: str | None = Field(None, description="label values to 0/1, e.g. toxic:1,clean:0 (default 0/1)")
    attributes: str | None = Field(None, description="comma-separated columns kept as prompt attributes")
    category_sep: str | None = Field(
        None, description="characters separating several tags in the category column ('space': whitespace)"
    )
    category_map: str | None = Field(
        None,
        description="tag to class, e.g. a:x,b:y,*:other; a row with several classes goes to the first in this order",
    )


def parse_label_map(raw: str | None) -> dict[str, int]:
    """`yes:1,no:0` -> {"yes": 1, "no": 0}; every target must be 0 or 1."""
    if raw is None:
        return dict(DEFAULT_LABELS)
    mapping: dict[str, int] = {}
    for pair in raw.split(","):
        value, sep, target = pair.rpartition(":")
        if not sep or target.strip() not in {"0", "1"}:
            raise UsageError(f"label_map entry '{pair}' is not VALUE:0 or VALUE:1 (e.g. label_map=yes:1,no:0)")
        mapping[value.strip()] = int(target)
    return mapping


def cell_text(value: Any) -> str:
    """A cell as text: JSON and Parquet values keep their JSON spelling (1, true, 1.5), None is empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


class ColumnMapping:
    """Which column holds what, checked against the file's header."""

    def __init__(self, spec: Spec, path: str | Path, columns: Sequence[str]) -> None:
        self.text = spec.option("text", "text") or "text"
        self.label = self._optional(spec, "label", columns)
        self.category = self._optional(spec, "category", columns)
        self.id = self._optional(spec, "id", columns)
        self.lang_column = LANG_COLUMN if LANG_COLUMN in columns else None
        self.lang = spec.option("lang")
        self.attributes = [c.strip() for c in (spec.option("attributes") or "").split(",") if c.strip()]
        self.rule = user_rule(spec.option("category_sep"), spec.option("category_map"))
        if self.rule is not None and not self.category:
            raise UsageError(f"'{path}': category_sep / category_map need a category column (?category=<column>)")
        named = [self.text, *(c for c in (self.label, self.category, self.id) if c), *self.attributes]
        require_columns(path, list(columns), named)
        if self.lang_column is None and not self.lang:
            raise UsageError(
                f"'{path}': say which language the texts are in: add ?lang=en (or zh, ...) to the spec, "
                f"or a '{LANG_COLUMN}' column to the file"
            )

    @staticmethod
    def _optional(spec: Spec, key: str, columns: Sequence[str]) -> str | None:
        if key in spec.options:
            return spec.options[key]  # named explicitly: must exist
        return key if key in columns else None


def _cell(path: str | Path, line: int, row: Mapping[str, Any], column: str) -> str:
    if column not in row:
        raise DataError(path, "missing field", line=line, field=column)
    return cell_text(row[column]).strip()


class RowReader:
    """Turns one record into a Prompt, or says exactly what is wrong with it."""

    def __init__(self, path: str | Path, cols: ColumnMapping, labels: dict[str, int], mapped: bool, name: str) -> None:
        self.path, self.cols, self.labels, self.name = path, cols, labels, name
        self.hint = "" if mapped else " (map other values with ?label_map=VALUE:1,VALUE:0)"

    def prompt(self, line: int, row: Mapping[str, Any]) -> Prompt:
        path, cols = self.path, self.cols
        text = _cell(path, line, row, cols.text)
        if not text:
            raise DataError(path, "empty text", line=line, field=cols.text)
        lang = (_cell(path, line, row, cols.lang_column) if cols.lang_column else "") or cols.lang
        if not lang:
            raise DataError(path, "empty language (or pass ?lang=...)", line=line, field=cols.lang_column)
        prompt_id = _cell(path, line, row, cols.id) if cols.id else str(line)
        if not prompt_id:
            raise DataError(path, "empty id", line=line, field=cols.id)
        category, several = self._category(line, row)
        attributes = {c: _cell(path, line, row, c) for c in cols.attributes} if cols.attributes else NO_ATTRIBUTES
        if several:
            attributes = {**attributes, CLASSES_ATTRIBUTE: ",".join(several)}
        return Prompt(
            id=prompt_id,
            dataset=self.name,
            text=text,
            lang=sys.intern(lang),  # the few languages and classes are each one string, not one per prompt
            label=self._label(line, row),
            category=category if category is None else sys.intern(category),
            attributes=attributes,
        )

    def _label(self, line: int, row: Mapping[str, Any]) -> int | None:
        if not self.cols.label:
            return None
        raw = _cell(self.path, line, row, self.cols.label)
        if raw not in self.labels:
            expected = ", ".join(repr(k) for k in self.labels)
            what = "empty label" if not raw else f"label {raw!r} is not one of {expected}"
            raise DataError(self.path, what + self.hint, line=line, field=self.cols.label)
        return self.labels[raw]

    def _category(self, line: int, row: Mapping[str, Any]) -> tuple[str | None, list[str]]:
        """The row's class, and all its classes when the rule found several (else an empty list)."""
        if not self.cols.category:
            return None, []
        category = _cell(self.path, line, row, self.cols.category)
        if not category:
            raise DataError(self.path, "empty attribute class", line=line, field=self.cols.category)
        rule = self.cols.rule
        if rule is None:
            return category, []
        classes = rule.classes(self.path, line, self.cols.category, category)
        if not classes:
            raise DataError(self.path, f"no tag in {category!r}", line=line, field=self.cols.category)
        return classes[0], (classes if len(classes) > 1 else [])


def load(spec: Spec, context: DataContext) -> LoadedDataset:
    read_spec_options(Options, spec)
    if not spec.name:
        raise UsageError("the file dataset needs a path: --dataset file:data.csv?text=col&label=col&lang=zh")
    path = Path(spec.name).expanduser()
    records = read_records(path)  # a file without rows is a DataError there
    cols = ColumnMapping(spec, path, list(records[0][1]))
    digest = sha256_file(path)
    name = f"file:{path.stem}@{content_hash({'sha256': digest, 'options': spec.options})[:8]}"
    prompts = mapped_prompts(spec, path, cols, records, name)
    notes = rule_notes(cols, prompts)
    return LoadedDataset(name=name, prompts=prompts, notes=notes, sources={f"file:{path.name}": digest})


def rule_notes(cols: ColumnMapping, prompts: Sequence[Prompt]) -> tuple[str, ...]:
    """The several-classes note of a spec with category_sep / category_map (none without)."""
    if cols.rule is None:
        return ()
    several = sum(1 for p in prompts if CLASSES_ATTRIBUTE in p.attributes)
    return (several_classes_note(cols.rule, several, len(prompts)),)


def mapped_prompts(
    spec: Spec, where: str | Path, cols: ColumnMapping, records: Iterable[Record], name: str
) -> list[Prompt]:
    """Every record as a Prompt under the spec's column mapping and label map; ids must be unique.

    Shared by every loader of user data (`file:`, `hf:`), so they accept the same options and give the same
    errors; `where` names the source in those errors."""
    reader = RowReader(where, cols, parse_label_map(spec.option("label_map")), "label_map" in spec.options, name)
    prompts: list[Prompt] = []
    ids = IdLines()
    try:
        for line, row in records:
            prompt = reader.prompt(line, row)
            ids.add(prompt.id, line)
            prompts.append(prompt)
    except DataError:
        ids.refuse_repeats(where, cols.id, prompts)  # a repeated id before the problem is met first
        raise
    ids.refuse_repeats(where, cols.id, prompts)
    return prompts


class IdLines:
    """The prompts' ids as hashes with their lines (16 bytes a prompt; a dict of every id took about 100), so
    that a repeated id is found after the pass: hashes seen twice are then checked exactly, in file order."""

    def __init__(self) -> None:
        self.hashes = array("q")
        self.lines = array("q")

    def add(self, prompt_id: str, line: int) -> None:
        self.hashes.append(hash(prompt_id))  # str hashes are stable within a process
        self.lines.append(line)

    def refuse_repeats(self, where: str | Path, column: str | None, prompts: Sequence[Prompt]) -> None:
        """The first prompt, in file order, whose id an earlier one has: a DataError naming both lines."""
        hashes = np.frombuffer(self.hashes, dtype=np.int64) if self.hashes else np.zeros(0, np.int64)
        ordered = np.sort(hashes)
        repeated = set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())
        if not repeated:
            return
        first_line: dict[str, int] = {}
        for prompt, hashed, line in zip(prompts, self.hashes, self.lines, strict=True):
            if hashed not in repeated:
                continue
            if prompt.id in first_line:
                message = f"duplicate id {prompt.id!r} (first on line {first_line[prompt.id]})"
                raise DataError(where, message, line=line, field=column)
            first_line[prompt.id] = line
