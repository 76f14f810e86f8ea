"""ToxicSpans: labels and classes from the raw per-annotator files, checked against a pandas reading of the rule."""

from __future__ import annotations

import os
from collections import Counter

import pandas as pd
import pytest

from trusteval.data import load_dataset
from trusteval.data.sources import DataContext
from trusteval.data.toxicspans import Annotation, comment_class, comment_label, span_class
from trusteval.errors import DataError, UsageError


@pytest.fixture(scope="module")
def context(data_dir) -> DataContext:
    return DataContext(data_dir=data_dir)


@pytest.fixture(scope="module")
def loaded(context):
    return load_dataset("toxicspans", context)


@pytest.fixture(scope="module")
def reference(data_dir) -> pd.DataFrame:
    """The documented rule, written independently with pandas: one row per comment."""
    raw = data_dir / "toxic_spans" / "raw"
    annotations = pd.read_csv(raw / "annotations.csv")
    spans = pd.read_csv(raw / "spans.csv")
    marked = spans.groupby("annotation").size()
    annotations["marked"] = annotations["annotation"].map(marked).fillna(0)
    annotations["vote"] = ~annotations["not toxic"] & ((annotations["marked"] > 0) | annotations["all toxic"])
    per_comment = annotations.groupby("comment_id").agg(n=("vote", "size"), votes=("vote", "sum"))
    per_comment["label"] = (per_comment["votes"] * 2 > per_comment["n"]).astype(int)
    return per_comment[per_comment["n"] <= 7]


@pytest.mark.slow
def test_labels_match_the_pandas_reference(loaded, reference):
    mine = {int(p.id): p.label for p in loaded.prompts}
    assert mine == reference["label"].to_dict()
    assert Counter(mine.values()) == {1: 10990, 0: 5109}


@pytest.mark.slow
def test_quiz_comment_is_left_out_and_counted(loaded, context):
    assert len(loaded.prompts) == 16099
    assert any("1 comment(s) with more than 7 annotations" in note for note in loaded.notes)
    assert any("14 span(s) with a blank" in note for note in loaded.notes)
    everything = load_dataset("toxicspans?max_annotations=400", context)
    assert len(everything.prompts) == 16100


def test_classes(loaded):
    assert Counter(p.category for p in loaded.prompts) == {"insult": 8861, "none": 5109, "other": 1521,
                                                           "obscenity": 608}  # fmt: skip
    assert all((p.category == "none") == (p.label == 0) for p in loaded.prompts)
    first = loaded.prompts[0]
    assert (first.id, first.label, first.category, first.lang) == ("239607", 1, "insult", "en")
    assert first.attributes == {"toxic_votes": "2/3", "span_classes": "insult:2"}


def _a(all_toxic=False, not_toxic=False, spans=()):
    return Annotation(all_toxic, not_toxic, marked=len(spans), spans=list(spans))


def test_votes_and_label_rule():
    assert _a(spans=[("insult", 4)]).toxic_vote and _a(all_toxic=True).toxic_vote
    assert not _a(all_toxic=True, not_toxic=True).toxic_vote  # both ticked: counts as not toxic
    assert not _a(not_toxic=True, spans=[("insult", 4)]).toxic_vote
    assert not _a().toxic_vote  # nothing marked
    toxic, clean = _a(spans=[("insult", 3)]), _a(not_toxic=True)
    assert comment_label([toxic, toxic, clean]) == 1
    assert comment_label([toxic, clean, clean]) == 0
    assert comment_label([toxic, toxic, clean, clean]) == 0  # half is not a majority


def test_class_rule_and_ties():
    one = _a(spans=[("insult", 5), ("obscenity", 4), ("obscenity", 4)])
    assert comment_class([one]) == "obscenity"  # most spans
    tie = _a(spans=[("insult", 5), ("obscenity", 9)])
    assert comment_class([tie]) == "obscenity"  # tie on spans: more characters
    full_tie = _a(spans=[("other", 5), ("obscenity", 5), ("insult", 5)])
    assert comment_class([full_tie]) == "insult"  # then the order insult, obscenity, other
    ignored = _a(not_toxic=True, spans=[("other", 50)])
    assert comment_class([_a(spans=[("insult", 1)]), ignored]) == "insult"  # spans of non-toxic votes do not count
    assert comment_class([_a(all_toxic=True)]) == "other"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("Insult", "insult"), ("Insu", "insult"), ("Profane/Obscene", "obscenity"), ("Identity based", "other"),
     ("Threat", "other"), ("", None), ("   ", None), ("Zzz", None)],
)  # fmt: skip
def test_span_types(raw, expected):
    assert span_class(raw) == expected


@pytest.mark.slow
def test_semeval_split_membership(context, data_dir):
    test = load_dataset("toxicspans?split=test", context)
    semeval = set(pd.read_csv(data_dir / "toxic_spans" / "SemEval2021" / "tsd_test.csv")["text"])
    assert {p.text for p in test.prompts} <= {t.strip() for t in semeval}
    assert len(test.prompts) == 2005  # 2,000 texts, a few of them posted under several comment ids
    assert "toxicspans/SemEval2021/tsd_test.csv" in test.sources
    only = load_dataset("toxicspans?split=test&categories=obscenity", context)
    assert {p.category for p in only.prompts} == {"obscenity"}


@pytest.mark.slow
def test_bad_options(context):
    with pytest.raises(UsageError, match="no split 'dev'"):
        load_dataset("toxicspans?split=dev", context)
    with pytest.raises(UsageError, match="no class"):
        load_dataset("toxicspans?categories=threat", context)


def test_a_broken_flag_names_line_and_field(tmp_path, data_dir):
    raw = tmp_path / "mirror" / "toxic_spans" / "raw"
    raw.mkdir(parents=True)
    for name in ("comments.csv", "spans.csv"):
        os.symlink(data_dir / "toxic_spans" / "raw" / name, raw / name)
    lines = (data_dir / "toxic_spans" / "raw" / "annotations.csv").read_text().splitlines()
    lines[3] = lines[3].rsplit(",", 1)[0] + ",maybe"
    (raw / "annotations.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as caught:
        load_dataset("toxicspans", DataContext(data_dir=tmp_path / "mirror", allow_unpinned=True))
    assert "annotations.csv, line 4, field 'not toxic': expected True or False, found 'maybe'" in str(caught.value)
