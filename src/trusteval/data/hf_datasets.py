"""`hf`: a Hugging Face dataset, from a folder written by `save_to_disk` or by name through `datasets.load_dataset`.

Spec: `hf:<folder or owner/name>?split=test&config=<name>&revision=<ref>` plus the column mapping of the `file`
dataset (`text`, `label`, `category`, `id`, `lang`, `label_map`, `attributes`, `category_sep`, `category_map`;
see trusteval.data.generic), with the same defaults and the same errors. A folder that `save_to_disk` wrote
(a `dataset_dict.json` or a `state.json` in it) is read with `datasets.load_from_disk`, offline; any other name
goes to `datasets.load_dataset` (the Hub, its local cache, or a local folder of data files), which needs the
network unless the dataset is cached.

Errors name the source as `hf:<name>[<split>]`, the row (1-based, shown as the line) and the field. The rows are
hashed (sha256 of their JSON, every column) so a run records exactly what it read: `sources` maps
`hf:<name>[@revision][/config][<split>]` to that hash, and the dataset name `hf:<short name>@<8 hex>` changes
with the rows and the options, so two different datasets or mappings never share stored prompts.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from pydantic import Field

from trusteval.data import LoadedDataset
from trusteval.data.files import Record
from trusteval.data.generic import ColumnMapping, mapped_prompts, rule_notes
from trusteval.data.generic import Options as FileOptions
from trusteval.data.sources import DataContext
from trusteval.errors import DataError, UsageError, missing_extra
from trusteval.options import read_spec_options
from trusteval.records import content_hash
from trusteval.registry import did_you_mean
from trusteval.specs import Spec

SAVED_MARKERS = ("dataset_dict.json", "state.json")
BATCH_ROWS = 4096
TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
OFFLINE_HINT = (
    "offline (HF_HUB_OFFLINE=1) a Hub dataset must be in the local cache; or save it with "
    "Dataset.save_to_disk where there is network and pass the folder: hf:/path/to/folder?split=..."
)


class Table(Protocol):
    """What we use of a `datasets.Dataset`."""

    column_names: list[str]
    split: object

    def __len__(self) -> int: ...
    def iter(self, batch_size: int) -> Iterator[dict[str, list[Any]]]: ...


def import_datasets() -> ModuleType:
    try:
        import datasets
    except ImportError:
        raise missing_extra("datasets", "hfdata") from None
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    return datasets


def is_saved_folder(name: str) -> bool:
    folder = Path(name).expanduser()
    return folder.is_dir() and any((folder / marker).is_file() for marker in SAVED_MARKERS)


def one_line(exc: BaseException, limit: int = 500) -> str:
    """The library's reason on one line, cut to `limit`, with any Hugging Face token in the environment redacted."""
    text = f"{type(exc).__name__}: {exc}"
    for variable in TOKEN_VARIABLES:
        token = os.environ.get(variable, "")
        if len(token) >= 8:
            text = text.replace(token, "[redacted]")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def choose_split(source: str, splits: Sequence[str], wanted: str | None) -> str:
    """The split to read from a DatasetDict: the one asked for, or the only one there is."""
    listed = ", ".join(repr(s) for s in splits) or "none"
    if wanted is None:
        if len(splits) == 1:
            return splits[0]
        raise UsageError(f"{source}: say which split to read with ?split=NAME; the dataset has: {listed}")
    if wanted not in splits:
        hint = did_you_mean(wanted, list(splits))
        raise UsageError(f"{source}: no split {wanted!r}.{hint} The dataset has: {listed}")
    return wanted


def from_disk(datasets: ModuleType, spec: Spec) -> tuple[Table, str | None]:
    folder = Path(spec.name).expanduser()
    try:
        loaded = datasets.load_from_disk(str(folder))
    except Exception as exc:  # a damaged folder: the library's own words, on one line
        raise DataError(f"hf:{spec.name}", f"cannot read the saved dataset ({one_line(exc)})") from None
    wanted = spec.option("split")
    if isinstance(loaded, datasets.DatasetDict):
        split = choose_split(f"hf:{spec.name}", list(loaded), wanted)
        return loaded[split], split
    if wanted is not None and loaded.split is not None and str(loaded.split) != wanted:
        raise UsageError(f"hf:{spec.name}: no split {wanted!r}; the folder holds one dataset, split {loaded.split!r}")
    return loaded, wanted


def from_hub(datasets: ModuleType, spec: Spec) -> tuple[Table, str]:
    source = f"hf:{spec.name}"
    try:
        loaded = datasets.load_dataset(
            spec.name, spec.option("config"), split=spec.option("split"), revision=spec.option("revision")
        )
    except Exception as exc:  # the Hub, the cache or the files: one line naming the dataset, never a traceback
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in {"", "0"}
        hint = f"; {OFFLINE_HINT}" if offline and not Path(spec.name).expanduser().exists() else ""
        raise DataError(source, f"cannot load it with datasets.load_dataset ({one_line(exc)}){hint}") from None
    if isinstance(loaded, datasets.DatasetDict):
        split = choose_split(source, list(loaded), None)
        return loaded[split], split
    return loaded, str(spec.option("split"))


def numbered_rows(table: Table) -> Iterator[Record]:
    """(row number from 1, row) in batches from the Arrow data, so no list of every row is ever held."""
    number = 0
    for batch in table.iter(batch_size=BATCH_ROWS):
        columns = list(batch)
        for values in zip(*batch.values(), strict=True):
            number += 1
            yield number, dict(zip(columns, values, strict=True))


def rows_sha256(table: Table) -> str:
    """sha256 of the rows as sorted-key JSON lines: what was read, however it was stored or fetched."""
    digest = hashlib.sha256()
    for _, row in numbered_rows(table):
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
    return digest.hexdigest()


def source_key(spec: Spec, short: str, split: str | None) -> str:
    key = f"hf:{short}"
    if spec.option("revision"):
        key += f"@{spec.option('revision')}"
    if spec.option("config"):
        key += f"/{spec.option('config')}"
    return key + (f"[{split}]" if split else "")


class Options(FileOptions):
    """A `file:` dataset's column options, plus where the Hub or saved dataset comes from."""

    split: str | None = Field(None, description="the split to read (needed when the dataset has several)")
    config: str | None = Field(None, description="the dataset's configuration name")
    revision: str | None = Field(None, description="hub revision or commit")


def load(spec: Spec, context: DataContext) -> LoadedDataset:
    read_spec_options(Options, spec)
    if not spec.name:
        raise UsageError(
            "the hf dataset needs a folder saved with save_to_disk or a Hub name: "
            "--dataset 'hf:owner/name?split=test&text=COLUMN&label=COLUMN&lang=en'"
        )
    datasets = import_datasets()
    saved = is_saved_folder(spec.name)
    table, split = from_disk(datasets, spec) if saved else from_hub(datasets, spec)
    where = f"hf:{spec.name}" + (f"[{split}]" if split else "")
    cols = ColumnMapping(spec, where, table.column_names)
    if len(table) == 0:
        raise DataError(where, "the split has no rows")
    digest = rows_sha256(table)  # a first pass over the memory-mapped rows: the name carries the hash
    local = Path(spec.name).expanduser()
    short = local.resolve().name if local.is_dir() else spec.name
    name = f"hf:{short}@{content_hash({'rows_sha256': digest, 'options': spec.options})[:8]}"
    prompts = mapped_prompts(spec, where, cols, numbered_rows(table), name)
    notes = rule_notes(cols, prompts)
    return LoadedDataset(name=name, prompts=prompts, notes=notes, sources={source_key(spec, short, split): digest})
