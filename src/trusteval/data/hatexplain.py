"""HateXplain (Mathew et al., AAAI 2021): English posts from Twitter and Gab, three annotators each.

Splits `train`, `validation` (alias `val`) and `test` (default) follow `post_id_divisions.json`. Label ints are
0 hatespeech, 1 normal, 2 offensive; a post is toxic (label 1) when its majority label is hatespeech or
offensive, non-toxic (0) when it is normal. The text is the post's tokens joined by spaces; the prompt id is
the post id.

Category (our choice; the paper's classes gender / region / politics / others do not exist in the English
data): every target community an annotator named is mapped to an attribute class by `TARGET_CLASSES`; the
post's class is the one with the most mentions (`targets=annotators`, the default: each annotator's list
counts, so a community three annotators named weighs three), ties give `multiple`, and a post whose
annotators named no community ("None") is `none`. The train split only has the union of the annotators'
targets, so there (and with `targets=union`) each distinct community counts once.

Spec options: `split`, `targets=annotators|union`, `mapping=<file.json>` (a JSON object community -> class),
`map.<Community>=<class>` (one override, e.g. `map.Refugee=region`), `categories=race,gender` (keep these).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from trusteval.data import LoadedDataset, keep_categories
from trusteval.data.decode import parse_json
from trusteval.data.files import read_json_lines, read_records, read_text, require_columns
from trusteval.data.sources import DataContext, dataset_file, mirror_file, sha256_file
from trusteval.errors import DataError, UsageError
from trusteval.options import PluginOptions, read_spec_options
from trusteval.records import NON_TOXIC, TOXIC, Prompt, content_hash
from trusteval.specs import Spec

NAME = "hatexplain"
SPLIT_FILES = {"validation": "hatexplain_validation.json", "test": "hatexplain_test.json"}
SPLIT_ALIASES = {"val": "validation", "dev": "validation", "validation": "validation", "test": "test"}
DIVISIONS_FILE = "post_id_divisions.json"
TRAIN_RECONSTRUCTED = "hatexplain_train_reconstructed.jsonl"
TRAIN_CSV = "training_data.csv"
LABEL_NAMES = {0: "hatespeech", 1: "normal", 2: "offensive"}
NORMAL = 1
NO_TARGET = "None"
NONE_CLASS = "none"
TIE_CLASS = "multiple"

# HateXplain's own grouping of its target communities (paper, Table 1), extended to every community found in
# the released data. Indian -> race and Indigenous -> other are our choices.
TARGET_CLASSES: dict[str, str] = {
    **dict.fromkeys(("African", "Arab", "Asian", "Caucasian", "Hispanic", "Indian"), "race"),
    **dict.fromkeys(("Islam", "Jewish", "Christian", "Hindu", "Buddhism", "Nonreligious"), "religion"),
    **dict.fromkeys(("Women", "Men"), "gender"),
    **dict.fromkeys(("Homosexual", "Heterosexual", "Bisexual", "Asexual"), "sexual_orientation"),
    **dict.fromkeys(("Refugee", "Disability", "Minority", "Economic", "Indigenous", "Other"), "other"),
}


class Options(PluginOptions):
    split: str = Field("test", description="train, validation or test")
    targets: Literal["annotators", "union"] = Field(
        "annotators", description="annotators: each annotator's communities count; union: each community once"
    )
    mapping: str | None = Field(None, description="JSON file mapping target communities to attribute classes")
    categories: str | None = Field(None, description="comma-separated attribute classes to keep")
    extra_prefixes = ("map.",)
    extra_help = "map.<Community>=<class>: the attribute class of one target community"


Post = tuple[int, str, list[str], list[int], list[list[str]]]  # line, id, tokens, labels, targets per annotator


def class_mapping(spec: Spec) -> dict[str, str]:
    """TARGET_CLASSES, then the `mapping` file, then each `map.<Community>=<class>` option."""
    mapping = dict(TARGET_CLASSES)
    if spec.option("mapping"):
        mapping.update(_mapping_file(Path(spec.options["mapping"])))
    for key, value in spec.options.items():
        if key.startswith("map."):
            mapping.update(_checked({key[4:]: value}, f"spec option '{key}'"))
    return mapping


def _mapping_file(path: Path) -> dict[str, str]:
    data = parse_json(path, read_text(path))
    if not isinstance(data, dict):
        raise DataError(path, "expected a JSON object mapping a target community to an attribute class")
    return _checked(data, str(path))


def _checked(entries: Mapping[str, Any], where: str) -> dict[str, str]:
    for community, cls in entries.items():
        if community not in TARGET_CLASSES:
            raise UsageError(
                f"{where}: HateXplain has no target community '{community}'; known: {', '.join(sorted(TARGET_CLASSES))}"
            )
        if not isinstance(cls, str) or not cls.strip():
            raise UsageError(f"{where}: the class of '{community}' must be a non-empty string, not {cls!r}")
    return {community: cls.strip() for community, cls in entries.items()}


def post_class(target_lists: list[list[str]], mapping: Mapping[str, str]) -> str:
    """The class with the most mentions; `multiple` on a tie, `none` when no community was named."""
    mentions = Counter(mapping[t] for targets in target_lists for t in targets if t != NO_TARGET)
    if not mentions:
        return NONE_CLASS
    ranked = mentions.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return TIE_CLASS
    return ranked[0][0]


def majority_label(labels: list[int]) -> int | None:
    label, votes = Counter(labels).most_common(1)[0]
    return label if votes * 2 > len(labels) else None


def _field(path: Path, line: int, row: Mapping[str, Any], name: str, kind: type) -> Any:
    value = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            raise DataError(path, "missing field", line=line, field=name)
        value = value[part]
    if not isinstance(value, kind):
        raise DataError(path, f"expected {kind.__name__}, found {type(value).__name__}", line=line, field=name)
    return value


def _labels(path: Path, line: int, values: list[Any], name: str) -> list[int]:
    if not values or any(v not in LABEL_NAMES for v in values):
        raise DataError(path, f"labels {values} are not all 0, 1 or 2", line=line, field=name)
    return [int(v) for v in values]


def read_annotated_split(path: Path) -> list[Post]:
    """validation / test: per-annotator labels and targets (the HF export files are JSON Lines despite .json)."""
    posts = []
    for line, row in read_json_lines(path):
        targets = _field(path, line, row, "annotators.target", list)
        if not all(isinstance(t, list) for t in targets):
            raise DataError(path, "expected one list of targets per annotator", line=line, field="annotators.target")
        labels = _labels(path, line, _field(path, line, row, "annotators.label", list), "annotators.label")
        tokens = _field(path, line, row, "post_tokens", list)
        posts.append((line, str(_field(path, line, row, "id", str)), tokens, labels, targets))
    return posts


def read_reconstructed_train(path: Path) -> list[Post]:
    posts = []
    for line, row in read_json_lines(path):
        label = _labels(path, line, [_field(path, line, row, "majority_label", int)], "majority_label")
        targets = _field(path, line, row, "targets_union", list)
        tokens = _field(path, line, row, "post_tokens", list)
        posts.append((line, str(_field(path, line, row, "id", str)), tokens, label, [targets]))
    return posts


def read_csv_train(csv_path: Path, divisions: Path) -> list[Post]:
    """The upstream `training_data.csv` (row i is train post i of the divisions file): text already joined."""
    ids = _division(divisions, "train")
    records = read_records(csv_path)
    require_columns(csv_path, list(records[0][1]), ["text", "majority_label", "targets"])
    if len(records) != len(ids):
        raise DataError(csv_path, f"{len(records)} rows but {divisions.name} lists {len(ids)} train posts")
    posts = []
    for (line, row), post_id in zip(records, ids, strict=True):
        if row["majority_label"] not in {"0", "1", "2"}:
            raise DataError(csv_path, f"{row['majority_label']!r} is not 0, 1 or 2", line=line, field="majority_label")
        targets = [t.strip() for t in row["targets"].split(",") if t.strip()]
        posts.append((line, post_id, row["text"].split(" "), [int(row["majority_label"])], [targets]))
    return posts


def _division(path: Path, split: str) -> list[str]:
    divisions = parse_json(path, read_text(path))
    try:
        return [str(i) for i in divisions[split]]
    except (KeyError, TypeError):
        raise DataError(path, f"expected a JSON object with a list of '{split}' post ids") from None


def read_split(split: str, context: DataContext) -> tuple[list[Post], dict[str, str], tuple[str, ...]]:
    """The posts of one split, the sha256 of the files read, and notes on fallbacks used."""
    if split == "train":
        return _read_train(context)
    if split not in SPLIT_ALIASES:
        raise UsageError(f"HateXplain has no split '{split}'; use train, validation (val) or test")
    filename = SPLIT_FILES[SPLIT_ALIASES[split]]
    path = dataset_file(NAME, filename, context)
    return read_annotated_split(path), {f"{NAME}/{filename}": sha256_file(path)}, ()


def _read_train(context: DataContext) -> tuple[list[Post], dict[str, str], tuple[str, ...]]:
    local = mirror_file(NAME, TRAIN_RECONSTRUCTED, context)  # pinned like the other mirror files
    if local is not None:
        return read_reconstructed_train(local), {f"{NAME}/{TRAIN_RECONSTRUCTED}": sha256_file(local)}, ()
    csv_path = dataset_file(NAME, TRAIN_CSV, context)
    divisions = dataset_file(NAME, DIVISIONS_FILE, context)
    hashes = {f"{NAME}/{TRAIN_CSV}": sha256_file(csv_path), f"{NAME}/{DIVISIONS_FILE}": sha256_file(divisions)}
    note = f"HateXplain train read from {TRAIN_CSV}: text as preprocessed upstream (' .' -> '.', ' ,' -> ',')"
    return read_csv_train(csv_path, divisions), hashes, (note,)


def _prompt(path_hint: str, post: Post, mapping: Mapping[str, str], union: bool, dataset: str) -> Prompt | None:
    line, post_id, tokens, labels, targets = post
    label = labels[0] if len(labels) == 1 else majority_label(labels)
    if label is None:
        return None
    unknown = sorted({t for ts in targets for t in ts if t != NO_TARGET and t not in mapping})
    if unknown:
        raise DataError(
            path_hint, f"target community {unknown[0]!r} has no class; add map.{unknown[0]}=<class>", line=line
        )
    text = " ".join(str(t) for t in tokens).strip()
    if not text:
        raise DataError(path_hint, "empty post", line=line, field="post_tokens")
    named = sorted({t for ts in targets for t in ts})
    counted = [named] if union else targets
    return Prompt(
        id=post_id,
        dataset=dataset,
        text=text,
        lang="en",
        label=NON_TOXIC if label == NORMAL else TOXIC,
        category=post_class(counted, mapping),
        attributes={"label_name": LABEL_NAMES[label], "targets": ",".join(named)},
    )


def dataset_name(mapping: Mapping[str, str], mode: str) -> str:
    """`hatexplain` with the default classes; otherwise a name that differs with the mapping, so the store
    (which keys prompts by dataset and id) never mixes categories made under different rules."""
    if mapping == TARGET_CLASSES and mode == "annotators":
        return NAME
    return f"{NAME}@{content_hash({'mapping': dict(mapping), 'targets': mode})[:8]}"


def load(spec: Spec, context: DataContext) -> LoadedDataset:
    options = read_spec_options(Options, spec)
    split = options.split or "test"
    mode = options.targets
    mapping = class_mapping(spec)
    posts, hashes, notes = read_split(split, context)
    union = mode == "union" or split == "train"
    if split == "train" and mode == "annotators":
        notes += ("HateXplain train has only the union of the annotators' targets: each community counts once",)
    name = dataset_name(mapping, mode)
    where = next(iter(hashes))
    prompts = [p for p in (_prompt(where, post, mapping, union, name) for post in posts) if p is not None]
    if len(prompts) < len(posts):
        notes += (f"{len(posts) - len(prompts)} posts without a majority label left out",)
    prompts = keep_categories(spec, prompts, "HateXplain", sorted({*mapping.values(), NONE_CLASS, TIE_CLASS}))
    return LoadedDataset(name=name, prompts=prompts, notes=notes, sources=hashes)


def describe(spec: Spec, context: DataContext) -> str:
    from trusteval.data.summary import count_summary

    mapping = class_mapping(spec)
    by_class: dict[str, list[str]] = {}
    for community, cls in sorted(mapping.items()):
        by_class.setdefault(cls, []).append(community)
    lines = ["HateXplain target community -> attribute class (override: map.<Community>=<class>):"]
    lines += [f"  {cls:<20} {', '.join(communities)}" for cls, communities in sorted(by_class.items())]
    lines.append(f"  {NONE_CLASS:<20} no community named ('None')")
    lines.append(f"  {TIE_CLASS:<20} two or more classes named equally often")
    base = {k: v for k, v in spec.options.items() if k != "split"}
    for split in ("train", "validation", "test"):
        loaded = load(Spec(NAME, "", {**base, "split": split}, NAME), context)
        lines += ["", f"split {split}:", count_summary(loaded.prompts)]
    return "\n".join(lines)
