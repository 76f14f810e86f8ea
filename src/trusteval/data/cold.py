"""COLD (Deng et al., EMNLP 2022): Chinese offensive language on race, gender and region.

Files `train.csv`, `dev.csv`, `test.csv` (UTF-8 with BOM): columns TEXT, topic, label (0 safe, 1 offensive).
A prompt's id is `<split>:<line>` because the file's own index column is not unique; its category is the
topic. Spec options: `split` (default test, so a detector trained on train never scores its own training
text), `topics` (comma-separated subset).
"""

from __future__ import annotations

from pydantic import Field

from trusteval.data import LoadedDataset
from trusteval.data.files import read_records, require_columns
from trusteval.data.sources import DataContext, dataset_file, sha256_file
from trusteval.errors import DataError, UsageError
from trusteval.options import PluginOptions, read_spec_options
from trusteval.records import Prompt
from trusteval.specs import Spec

SPLITS = ("train", "dev", "test")
TOPICS = ("race", "gender", "region")
LABELS = {"0": 0, "1": 1}


def read_split(split: str, context: DataContext) -> tuple[list[Prompt], str]:
    if split not in SPLITS:
        raise UsageError(f"COLD has no split '{split}'; use one of {', '.join(SPLITS)}")
    path = dataset_file("cold", f"{split}.csv", context)
    records = read_records(path)
    require_columns(path, list(records[0][1]), ["TEXT", "topic", "label"])
    prompts = [_prompt(path, split, line, row) for line, row in records]
    return prompts, sha256_file(path)


def _prompt(path, split: str, line: int, row: dict[str, str]) -> Prompt:
    text = row["TEXT"].strip()
    if not text:
        raise DataError(path, "empty text", line=line, field="TEXT")
    if row["topic"] not in TOPICS:
        raise DataError(path, f"topic {row['topic']!r} is not one of {TOPICS}", line=line, field="topic")
    if row["label"] not in LABELS:
        raise DataError(path, f"label {row['label']!r} is not 0 or 1", line=line, field="label")
    attributes = {}
    if row.get("fine-grained-label"):
        attributes["fine_grained_label"] = row["fine-grained-label"]
    return Prompt(
        id=f"{split}:{line}",
        dataset="cold",
        text=text,
        lang="zh",
        label=LABELS[row["label"]],
        category=row["topic"],
        attributes=attributes,
    )


class Options(PluginOptions):
    split: str = Field("test", description="train, dev or test")
    topics: str | None = Field(None, description="comma-separated topics to keep (race, gender, region)")


def load(spec: Spec, context: DataContext) -> LoadedDataset:
    options = read_spec_options(Options, spec)
    split = options.split or "test"
    prompts, digest = read_split(split, context)
    topics = options.topics
    if topics:
        wanted = {t.strip() for t in topics.split(",")}
        unknown = wanted - set(TOPICS)
        if unknown:
            raise UsageError(f"COLD has no topic(s) {sorted(unknown)}; use {', '.join(TOPICS)}")
        prompts = [p for p in prompts if p.category in wanted]
    return LoadedDataset(name="cold", prompts=prompts, sources={f"cold/{split}.csv": digest})
