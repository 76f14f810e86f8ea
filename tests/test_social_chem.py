"""SOCIAL-CHEM-101: the rot-judgment mapping, the loader on the real subset and on broken files, the download."""

from __future__ import annotations

import hashlib
import io
import shutil
import zipfile
from pathlib import Path

import pytest

from fixtures.llama_server import Reply, ScriptedOpenAIServer
from trusteval.data import load_dataset
from trusteval.data.social_chem import FULL_TSV, describe, map_judgment
from trusteval.data.sources import DataContext
from trusteval.errors import DataError, UsageError
from trusteval.specs import Spec

BROKEN = Path(__file__).parent / "data" / "social_chem"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("it's good", "good"),
        ("It's good.", "good"),
        ("It\u2019s wrong to lie!", "bad"),  # curly apostrophe folded, leading phrase
        ("you should say thanks", "good"),
        ("you shouldn't", "bad"),  # not the leading phrase "you should"
        ("You should not lie", "bad"),  # the longest phrase wins over "you should"
        ("it's not okay to yell", "bad"),
        ("it's ok", "okay"),
        ("it's okay to rest", "okay"),
        ("IT'S EXPECTED...", "okay"),
        ("it's okayish", None),  # a leading phrase ends at a word boundary
        ("it is fine", None),
        ("it's not good", None),
        ("people think it's good", None),  # only the whole text or its leading phrase
        ("", None),
    ],
)
def test_rot_judgment_mapping(text, expected):
    assert map_judgment(text) == expected


def _load(spec: str, data_dir: Path | None, tmp_path: Path, download: bool = False):
    return load_dataset(spec, DataContext(data_dir=data_dir, cache_dir=tmp_path / "cache", allow_download=download))


def test_subset_falls_back_to_the_sign_of_the_moral_judgment_and_says_so(data_dir, tmp_path):
    dataset = _load("social-chem-101", data_dir, tmp_path)
    classes = [p.category for p in dataset.prompts]
    # 500 rows, labels -2..2 x 100 each; two "bad" actions repeat, so 198 distinct bad norms.
    assert (len(dataset.prompts), classes.count("good"), classes.count("bad"), classes.count("okay")) == (
        498,
        200,
        198,
        100,
    )
    assert all(p.attributes["judgment_source"] == "action-moral-judgment" for p in dataset.prompts)
    notes = " ".join(dataset.notes)
    assert "sign of action-moral-judgment" in notes and "500-row subset" in notes
    assert "2 rows (action already kept" in notes
    first = dataset.prompts[0]
    assert (first.id, first.text, first.category) == ("subset:2", "saying things that are racist.", "bad")


def test_full_tsv_is_preferred_when_the_mirror_has_it(data_dir, tmp_path):
    mirror = tmp_path / "mirror" / "social_chem_101"
    mirror.mkdir(parents=True)
    shutil.copy(BROKEN / "judgments.tsv", mirror / FULL_TSV)
    shutil.copy(data_dir / "social_chem_101" / "social-chem-101.subset.tsv", mirror)
    with pytest.raises(DataError, match="no sha256 is pinned for the full social-chem-101 TSV"):
        _load("social-chem-101", mirror.parent, tmp_path)  # nothing to check the copy against: refused
    context = DataContext(data_dir=mirror.parent, cache_dir=tmp_path / "cache", allow_unpinned=True)
    dataset = load_dataset("social-chem-101", context)
    assert dataset.prompts[0].id == "v1.0:2" and dataset.prompts[0].attributes["rot_judgment"] == "It's good."
    assert context.unpinned == [f"{mirror / FULL_TSV}: the full social-chem-101 TSV has no pinned sha256; "
                                "used because of --allow-unpinned-data"]  # fmt: skip
    assert _load("social-chem-101?source=subset", mirror.parent, tmp_path).prompts[0].id == "subset:2"


def test_judgments_that_map_to_no_class_are_counted_never_dropped_silently(tmp_path):
    dataset = _load(f"social-chem-101?path={BROKEN / 'judgments.tsv'}", None, tmp_path)
    by_text = {p.text: p.category for p in dataset.prompts}
    assert by_text == {
        "helping a friend move house": "good",
        "lying to your parents": "bad",
        "saying thank you": "good",
        "yelling at a waiter": "bad",
        "wearing pajamas at home": "okay",
        "cutting in line": "bad",
    }
    left_out = next(n for n in dataset.notes if "left out" in n)
    for reason in ("1 rows (rot-judgment maps to no class)", "1 rows (empty action)", "1 rows (empty rot-judgment)",
                   "1 rows (action already kept"):  # fmt: skip
        assert reason in left_out
    assert "norms kept: 2 good, 3 bad, 1 okay" in dataset.notes[0]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("missing_action.tsv", "missing_action.tsv, line 1, field 'action': missing column(s) 'action'"),
        ("bad_moral_judgment.tsv", "bad_moral_judgment.tsv, line 3, field 'action-moral-judgment': 'very bad'"),
    ],
)
def test_broken_files_name_file_line_and_field(tmp_path, name, expected):
    with pytest.raises(DataError) as error:
        _load(f"social-chem-101?path={BROKEN / name}", None, tmp_path)
    assert expected in str(error.value)


def test_unknown_options_and_sources_are_refused(data_dir, tmp_path):
    with pytest.raises(UsageError, match="unknown option"):
        _load("social-chem-101?sorce=full", data_dir, tmp_path)
    with pytest.raises(UsageError, match="option 'source' must be one of auto, full, subset"):
        _load("social-chem-101?source=everything", data_dir, tmp_path)
    with pytest.raises(DataError, match="not available offline"):
        _load("social-chem-101?source=full", data_dir, tmp_path)


def test_describe_prints_the_mapping_and_the_counts(data_dir, tmp_path):
    context = DataContext(data_dir=data_dir, cache_dir=tmp_path)
    text = describe(Spec.parse("social-chem-101", bare=True), context)
    assert "| bad | it's wrong, it's bad, it's rude, it's not okay, it's not ok, it's mean," in text
    assert "| okay | it's okay, it's ok, it's fine, it's normal, it's expected," in text
    assert "norms kept: 200 good, 198 bad, 100 okay" in text and "class from action-moral-judgment" in text
    broken = describe(Spec.parse(f"social-chem-101?path={BROKEN / 'judgments.tsv'}", bare=True), context)
    assert "Most common unmapped judgments: 'it is fine' (1)" in broken


def test_download_is_refused_without_an_expected_sha256(tmp_path):
    with pytest.raises(UsageError, match="pins no sha256"):
        _load("social-chem-101?source=full", None, tmp_path, download=True)


def _zip_of(tsv: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr(f"social-chem-101/{FULL_TSV}", tsv)
    return buffer.getvalue()


def test_download_is_verified_extracted_and_cached(tmp_path):
    archive = _zip_of((BROKEN / "judgments.tsv").read_bytes())
    digest = hashlib.sha256(archive).hexdigest()
    with ScriptedOpenAIServer([Reply(body=archive)]) as server:
        url = f"http://127.0.0.1:{server.port}/social-chem-101.zip"
        with pytest.raises(DataError, match="sha256 mismatch"):
            _load(f"social-chem-101?source=full&url={url}&sha256={'0' * 64}", None, tmp_path, download=True)
        assert not (tmp_path / "cache" / "social_chem_101" / FULL_TSV).exists()
        dataset = _load(f"social-chem-101?source=full&url={url}&sha256={digest}", None, tmp_path, download=True)
        assert len(dataset.prompts) == 6 and dataset.prompts[0].id == "v1.0:2"
        assert server.served == 2
    again = _load("social-chem-101", None, tmp_path)  # the verified copy in the cache, no server needed
    assert [p.text for p in again.prompts] == [p.text for p in dataset.prompts]
