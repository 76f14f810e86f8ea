"""`file:` datasets: any CSV / TSV / JSONL / JSON / Parquet by column mapping, and its errors (file, line, field)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli
from trusteval.data import load_dataset
from trusteval.data.generic import parse_label_map
from trusteval.data.sources import DataContext, sha256_file
from trusteval.data.summary import count_summary
from trusteval.errors import DataError, UsageError

BAD = Path(__file__).parent / "data" / "bad_inputs"
ROWS = [
    {"id": "a1", "text": "you are great", "label": 0, "category": "gender"},
    {"id": "a2", "text": "you are an idiot", "label": 1, "category": "race"},
    {"id": "a3", "text": "他们都是垃圾", "label": 1, "category": "race"},
]


def _load(spec: str):
    return load_dataset(spec, DataContext())


def _write_all_formats(folder: Path) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = {ext: folder / f"rows.{ext}" for ext in ("csv", "tsv", "jsonl", "json", "parquet")}
    header = "id,text,label,category\n"
    paths["csv"].write_text(header + "".join(f"{r['id']},{r['text']},{r['label']},{r['category']}\n" for r in ROWS))
    paths["tsv"].write_text(paths["csv"].read_text().replace(",", "\t"))
    paths["jsonl"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS))
    paths["json"].write_text(json.dumps(ROWS, ensure_ascii=False))
    pq.write_table(pa.Table.from_pylist(ROWS), paths["parquet"])
    return paths


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "json", "parquet"])
def test_every_format_gives_the_same_prompts(tmp_path, ext):
    path = _write_all_formats(tmp_path)[ext]
    loaded = _load(f"file:{path}?lang=en")
    assert [(p.id, p.text, p.label, p.category, p.lang) for p in loaded.prompts] == [
        (r["id"], r["text"], r["label"], r["category"], "en") for r in ROWS
    ]
    assert loaded.sources == {f"file:rows.{ext}": sha256_file(path)}
    assert loaded.name.startswith("file:rows@") and all(p.dataset == loaded.name for p in loaded.prompts)


def test_column_mapping_label_map_attributes_and_line_ids():
    loaded = _load(f"file:{BAD / 'yes_no.csv'}?label=answer&label_map=yes:1,no:0&lang=en&attributes=id")
    assert [(p.id, p.label, p.attributes) for p in loaded.prompts] == [("a1", 0, {"id": "a1"}), ("a2", 1, {"id": "a2"})]
    no_ids = _load(f"file:{BAD / 'yes_no.csv'}?id=text&lang=en")
    assert [p.id for p in no_ids.prompts] == ["hello", "go away idiot"] and no_ids.prompts[0].label is None


def test_line_numbers_are_ids_without_an_id_column(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("text,label\nfirst,0\nsecond,1\n")
    assert [p.id for p in _load(f"file:{path}?lang=zh").prompts] == ["2", "3"]


def test_language_column_wins_and_a_language_is_required(tmp_path):
    path = tmp_path / "langs.jsonl"
    path.write_text('{"text": "hi", "lang": "en"}\n{"text": "你好", "lang": "zh"}\n')
    assert [p.lang for p in _load(f"file:{path}").prompts] == ["en", "zh"]
    bare = tmp_path / "bare.csv"
    bare.write_text("text\nhello\n")
    with pytest.raises(UsageError, match=r"add \?lang=en"):
        _load(f"file:{bare}")


def test_name_changes_with_content_and_mapping(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("text,label\nhello,0\n")
    first = _load(f"file:{path}?lang=en").name
    assert _load(f"file:{path}?lang=en").name == first
    assert _load(f"file:{path}?lang=zh").name != first
    path.write_text("text,label\nhello,1\n")
    assert _load(f"file:{path}?lang=en").name != first


def test_bom_is_read_as_utf8():
    loaded = _load(f"file:{BAD / 'bom.csv'}?lang=en")
    assert [(p.id, p.text, p.label) for p in loaded.prompts] == [("a1", "hello", 0), ("a2", "go away idiot", 1)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing_column.csv?lang=en", "missing_column.csv, line 1, field 'text': missing column(s) 'text'"),
        ("good.csv?lang=en&label=verdict", "good.csv, line 1, field 'verdict': missing column(s) 'verdict'"),
        ("bad_label.csv?lang=en", "bad_label.csv, line 4, field 'label': label '2' is not one of '0', '1'"),
        ("yes_no.csv?lang=en&label=answer&label_map=yes:1", "yes_no.csv, line 2, field 'answer': label 'no'"),
        ("empty_class.csv?lang=en", "empty_class.csv, line 3, field 'category': empty attribute class"),
        ("empty_text.jsonl?lang=en", "empty_text.jsonl, line 2, field 'text': empty text"),
        ("not_utf8.csv?lang=en", "not_utf8.csv, line 2: not UTF-8"),
        ("duplicate_id.csv?lang=en", "duplicate_id.csv, line 3, field 'id': duplicate id 'a1' (first on line 2)"),
        ("nowhere.csv?lang=en", "nowhere.csv: file not found"),
    ],
)
def test_bad_files_name_file_line_and_field(spec, message):
    with pytest.raises(DataError) as caught:
        _load(f"file:{BAD / spec}")
    assert message in str(caught.value)


def test_bad_label_map_and_options():
    with pytest.raises(UsageError, match="VALUE:0 or VALUE:1"):
        parse_label_map("yes:2")
    assert parse_label_map("yes:1, no :0") == {"yes": 1, "no": 0}
    with pytest.raises(UsageError, match="unknown option"):
        _load(f"file:{BAD / 'good.csv'}?lang=en&colum=x")


def test_count_summary_counts_classes_and_labels():
    summary = count_summary(_load(f"file:{BAD / 'good.csv'}?lang=en").prompts)
    lines = {line.split()[0]: line.split()[1:] for line in summary.splitlines()[2:]}
    assert lines == {"gender": ["0", "1", "0", "1"], "race": ["1", "0", "0", "1"], "all": ["1", "1", "0", "2"]}


def _runs_in(store: Path) -> int:
    if not (store / "trusteval.sqlite").exists():
        return 0
    with sqlite3.connect(store / "trusteval.sqlite") as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("good.csv?lang=en&text=body", "good.csv, line 1, field 'body': missing column(s) 'body'"),
        ("bad_label.csv?lang=en", "bad_label.csv, line 4, field 'label': label '2' is not one of '0', '1'"),
        ("empty_class.csv?lang=en", "empty_class.csv, line 3, field 'category': empty attribute class"),
    ],
)
@pytest.mark.slow
def test_bad_input_through_the_real_cli(tmp_path, spec, message):
    store = tmp_path / "ws"
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{BAD / spec}", "--limit", "2",
                     "--seeds", "42", "--store", store)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert _runs_in(store) == 0
