"""ToxicSpans (Pavlopoulos et al., SemEval 2021 / ACL 2022): Civil Comments posts with per-annotator spans.

Labels and classes come from the raw per-annotator files (`raw/comments.csv`, `raw/annotations.csv`,
`raw/spans.csv`); the rules are our choice, the papers give none for a post-level label:

- An annotation is a toxic vote when the annotator did not tick "not toxic" and marked a span or ticked
  "all toxic". Ticking "not toxic" is a non-toxic vote whatever else was marked (21,189 annotations tick both
  boxes and mark no span; they count as non-toxic).
- A comment is toxic (label 1) when more than half of its annotations are toxic votes, else non-toxic (0).
- Class of a toxic comment: each span of a toxic vote counts for its type's class (Insult -> insult,
  Profane/Obscene -> obscenity, Identity based Attack / Other Toxicity / Threat -> other; a truncated type is
  read as the one type it begins, a blank type is not counted); the class with the most spans wins, a tie goes
  to the class covering more characters, then to the first of insult, obscenity, other. A toxic comment with
  no typed span (only "all toxic" ticked) is `other`. A non-toxic comment is `none`.
- Comments with more than `max_annotations` (default 7) annotations are rater quiz items (one comment has
  357) and are left out, counted in the notes.

Spec options: `split=all|train|trial|test` (default all; the SemEval-2021 splits, matched by comment text),
`max_annotations=7`, `categories=insult,obscenity` (keep these classes).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from trusteval.data import LoadedDataset, keep_categories
from trusteval.data.files import read_records, require_columns
from trusteval.data.sources import DataContext, dataset_file, sha256_file
from trusteval.errors import DataError, UsageError
from trusteval.options import PluginOptions, read_spec_options
from trusteval.records import NON_TOXIC, TOXIC, Prompt
from trusteval.specs import Spec

NAME = "toxicspans"
SEMEVAL_SPLITS = {"train": "SemEval2021/tsd_train.csv", "trial": "SemEval2021/tsd_trial.csv",
                  "test": "SemEval2021/tsd_test.csv"}  # fmt: skip
SPAN_CLASSES = {
    "Insult": "insult",
    "Profane/Obscene": "obscenity",
    "Identity based Attack": "other",
    "Other Toxicity": "other",
    "Threat": "other",
}
CLASS_ORDER = ("insult", "obscenity", "other")
NONE_CLASS = "none"
UNTYPED_CLASS = "other"
FLAGS = {"True": True, "False": False}


class Options(PluginOptions):
    split: str = Field("all", description="all, or one of the SemEval-2021 splits (train, trial, test)")
    max_annotations: int = Field(7, ge=1, description="annotations per comment at most (the dataset's 7)")
    categories: str | None = Field(None, description="comma-separated classes to keep")


@dataclass
class Annotation:
    toxic_flag: bool  # "all toxic" ticked
    not_toxic_flag: bool
    marked: int = 0  # spans marked, typed or not
    spans: list[tuple[str, int]] = field(default_factory=list)  # typed spans: (class, characters)

    @property
    def toxic_vote(self) -> bool:
        return not self.not_toxic_flag and (self.marked > 0 or self.toxic_flag)


def span_class(raw_type: str) -> str | None:
    """The class of a span type; a truncated type ("Insu") is the one type it begins; blank -> None."""
    text = raw_type.strip()
    if not text:
        return None
    if text in SPAN_CLASSES:
        return SPAN_CLASSES[text]
    matches = {cls for name, cls in SPAN_CLASSES.items() if name.startswith(text)}
    return matches.pop() if len(matches) == 1 else None


def comment_label(annotations: Sequence[Annotation]) -> int:
    toxic_votes = sum(a.toxic_vote for a in annotations)
    return TOXIC if toxic_votes * 2 > len(annotations) else NON_TOXIC


def comment_class(annotations: Sequence[Annotation]) -> str:
    spans = [s for a in annotations if a.toxic_vote for s in a.spans]
    if not spans:
        return UNTYPED_CLASS
    counts, characters = Counter(cls for cls, _ in spans), Counter[str]()
    for cls, length in spans:
        characters[cls] += length
    return max(counts, key=lambda c: (counts[c], characters[c], -CLASS_ORDER.index(c)))


def _read(context: DataContext, filename: str, columns: list[str]) -> tuple[Path, Sequence[tuple[int, dict]]]:
    path = dataset_file(NAME, filename, context)
    records = read_records(path)
    require_columns(path, list(records[0][1]), columns)
    return path, records


def _flag(path: Path, line: int, row: dict[str, str], name: str) -> bool:
    if row[name] not in FLAGS:
        raise DataError(path, f"expected True or False, found {row[name]!r}", line=line, field=name)
    return FLAGS[row[name]]


def _int(path: Path, line: int, row: dict[str, str], name: str) -> int:
    try:
        return int(row[name])
    except ValueError:
        raise DataError(path, f"expected an integer, found {row[name]!r}", line=line, field=name) from None


def read_annotations(context: DataContext) -> tuple[dict[str, list[Annotation]], int, dict[str, str]]:
    """Annotations per comment id, the number of spans with a blank type, and the files' sha256."""
    a_path, a_rows = _read(context, "raw/annotations.csv", ["annotation", "comment_id", "all toxic", "not toxic"])
    s_path, s_rows = _read(context, "raw/spans.csv", ["annotation", "type", "start", "end"])
    by_id: dict[str, Annotation] = {}
    by_comment: dict[str, list[Annotation]] = defaultdict(list)
    for line, row in a_rows:
        annotation = Annotation(_flag(a_path, line, row, "all toxic"), _flag(a_path, line, row, "not toxic"))
        by_id[row["annotation"]] = annotation
        by_comment[row["comment_id"]].append(annotation)
    blank = 0
    for line, row in s_rows:
        if row["annotation"] not in by_id:
            raise DataError(s_path, f"annotation {row['annotation']!r} is not in {a_path.name}", line=line,
                            field="annotation")  # fmt: skip
        by_id[row["annotation"]].marked += 1
        cls = span_class(row["type"])
        if cls is None:
            blank += 1
            continue
        length = _int(s_path, line, row, "end") - _int(s_path, line, row, "start")
        by_id[row["annotation"]].spans.append((cls, max(length, 0)))
    return by_comment, blank, {f"{NAME}/raw/{p.name}": sha256_file(p) for p in (a_path, s_path)}


def _split_texts(split: str, context: DataContext) -> tuple[set[str] | None, dict[str, str]]:
    if split == "all":
        return None, {}
    if split not in SEMEVAL_SPLITS:
        raise UsageError(f"ToxicSpans has no split '{split}'; use all, {', '.join(SEMEVAL_SPLITS)}")
    path, records = _read(context, SEMEVAL_SPLITS[split], ["text"])
    return {row["text"] for _, row in records}, {f"{NAME}/{SEMEVAL_SPLITS[split]}": sha256_file(path)}


def load(spec: Spec, context: DataContext) -> LoadedDataset:
    options = read_spec_options(Options, spec)
    max_annotations = options.max_annotations
    in_split, split_hashes = _split_texts(options.split or "all", context)
    c_path, comments = _read(context, "raw/comments.csv", ["comment_id", "comment_text"])
    by_comment, blank, hashes = read_annotations(context)
    prompts, quiz, unannotated = [], 0, 0
    for line, row in comments:
        text = row["comment_text"].strip()
        if not text:
            raise DataError(c_path, "empty comment", line=line, field="comment_text")
        if in_split is not None and row["comment_text"] not in in_split:
            continue
        annotations = by_comment.get(row["comment_id"], [])
        if not annotations:
            unannotated += 1
            continue
        if len(annotations) > max_annotations:
            quiz += 1
            continue
        prompts.append(_prompt(row["comment_id"], text, annotations))
    notes = _notes(quiz, max_annotations, unannotated, blank)
    prompts = keep_categories(spec, prompts, "ToxicSpans", sorted({*CLASS_ORDER, NONE_CLASS}))
    sources = {f"{NAME}/raw/{c_path.name}": sha256_file(c_path), **hashes, **split_hashes}
    return LoadedDataset(name=NAME, prompts=prompts, notes=notes, sources=sources)


def _prompt(comment_id: str, text: str, annotations: list[Annotation]) -> Prompt:
    label = comment_label(annotations)
    votes = sum(a.toxic_vote for a in annotations)
    types = Counter(cls for a in annotations for cls, _ in a.spans)
    return Prompt(
        id=comment_id,
        dataset=NAME,
        text=text,
        lang="en",
        label=label,
        category=comment_class(annotations) if label == TOXIC else NONE_CLASS,
        attributes={
            "toxic_votes": f"{votes}/{len(annotations)}",
            "span_classes": ",".join(f"{c}:{n}" for c, n in sorted(types.items())),
        },
    )


def _notes(quiz: int, max_annotations: int, unannotated: int, blank: int) -> tuple[str, ...]:
    notes = []
    if quiz:
        notes.append(f"{quiz} comment(s) with more than {max_annotations} annotations (rater quiz items) left out")
    if unannotated:
        notes.append(f"{unannotated} comment(s) without annotations left out")
    if blank:
        notes.append(f"{blank} span(s) with a blank or unreadable type not counted for the class")
    return tuple(notes)


def describe(spec: Spec, context: DataContext) -> str:
    from trusteval.data.summary import count_summary

    lines = ["ToxicSpans span type -> attribute class:"]
    lines += [f"  {name:<22} {cls}" for name, cls in SPAN_CLASSES.items()]
    lines += [
        "Label: toxic when more than half of a comment's annotators did not tick 'not toxic' and marked a span",
        "or ticked 'all toxic'. Class: the class with most spans of toxic votes (ties: more characters, then",
        "insult, obscenity, other); non-toxic comments are 'none'.",
    ]
    loaded = load(spec, context)
    lines += ["", *loaded.notes, count_summary(loaded.prompts)]
    return "\n".join(lines)
