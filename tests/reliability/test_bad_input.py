"""The corpus of broken input files (tests/data/broken, plus 10 MB files made here) through the real CLI.

Each must end in one message naming the file, the line and the field, exit code 2, no traceback, and no run
recorded (the store is not even created). Files reach the CLI three ways: as the COLD mirror's test split
(TRUSTEVAL_DATA_DIR), as the `replay` backend's answers, and as the generic `file:` dataset. The CLI runs in
process (`cli.main`, the same code as the `trusteval` command) to keep the many cases fast; one case also
runs as a subprocess to check the process's exit status.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from store_checks import STORE_FILE

from helpers import cli_env, run_cli
from trusteval import cli
from trusteval.data import load_dataset
from trusteval.data.files import read_records
from trusteval.data.sources import DataContext

BROKEN = Path(__file__).resolve().parents[1] / "data" / "broken"
TEN_MB = 10_000_000

COLD_MIRROR_CASES = [
    ("cold_missing_column.csv", "line 1, field 'label': missing column(s) 'label'"),
    ("cold_extra_field_in_row.csv", "line 3: expected 5 fields as in the header, found 6"),
    ("cold_missing_field_in_row.csv", "line 3: expected 5 fields as in the header, found 4"),
    ("cold_label_not_a_number.csv", "line 2, field 'label': label 'yes' is not 0 or 1"),
    ("cold_unknown_topic.csv", "line 2, field 'topic': topic 'religion' is not one of"),
    ("cold_empty_text.csv", "line 3, field 'TEXT': empty text"),
    ("empty.csv", ": the file is empty"),
    ("blank_lines.csv", ": the file is empty"),
    ("cold_header_only.csv", ": the file has no rows"),
    ("cold_duplicate_column.csv", "line 1: duplicate column name(s): ['label']"),
    ("cold_mixed_encoding.csv", "line 3: not UTF-8 (byte 0xd5 at offset 72); re-save the file as UTF-8"),
    ("cold_nul_byte.csv", "line 3: contains a NUL byte"),
    ("cold_utf16.csv", ": the file is UTF-16"),
    ("cold_unclosed_quote.csv", "line 3: a quoted field is never closed"),
]
REPLAY_CASES = [
    ("replay_not_json.jsonl", "line 2: not valid JSON"),
    ("replay_response_not_text.jsonl", "line 1, field 'response': expected text, found int"),
    ("replay_seed_not_a_number.jsonl", "line 1, field 'seed': seed must be an integer, not 'forty-two'"),
    ("replay_missing_response.jsonl", "line 1, field 'response': missing column(s) 'response'"),
    ("replay_not_an_object.jsonl", "line 2: expected a JSON object, found list"),
]
GENERIC_CASES = [
    ("generic_label_not_binary.jsonl", "line 2, field 'label': label 'maybe' is not one of '0', '1'"),
    ("generic_duplicate_id.csv", "line 3, field 'id': duplicate id 'x1' (first on line 2)"),
    ("generic_missing_text_column.csv", "line 1, field 'text': missing column(s) 'text'"),
]


def _record(figures, case: str, rejected: bool) -> None:
    figures.setdefault("bad_inputs", {})[case] = "rejected cleanly" if rejected else "NOT rejected cleanly"


def _refused(tmp_path: Path, capsys, *flags: str) -> str:
    """Run the CLI in process; return stderr after checking the exit code and that nothing was stored."""
    store = tmp_path / "ws"
    code = cli.main(["run", "--benchmark", "trusteval-toxicity", "--seeds", "42", "--limit", "3",
                     "--store", str(store), "--no-progress", *flags])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2, error
    assert "Traceback" not in error and error.startswith("error: ") and error.count("\n") == 1
    assert not (store / STORE_FILE).exists(), "a refused run must not write anything"
    return error


def _mirror_with(tmp_path: Path, test_csv: Path, data_dir: Path) -> Path:
    mirror = tmp_path / "mirror" / "cold"
    mirror.mkdir(parents=True)
    shutil.copyfile(test_csv, mirror / "test.csv")
    for split in ("train", "dev"):  # the detector trains from the real files
        (mirror / f"{split}.csv").symlink_to(data_dir / "cold" / f"{split}.csv")
    return mirror.parent


@pytest.mark.parametrize(("name", "expected"), COLD_MIRROR_CASES, ids=[c[0] for c in COLD_MIRROR_CASES])
def test_broken_cold_mirror_file(tmp_path, capsys, monkeypatch, data_dir, figures, name, expected):
    monkeypatch.setenv("TRUSTEVAL_DATA_DIR", str(_mirror_with(tmp_path, BROKEN / name, data_dir)))
    monkeypatch.setenv("TRUSTEVAL_ALLOW_UNPINNED_DATA", "true")  # past the pin check, to the parser
    error = _refused(tmp_path, capsys)
    assert f"cold/test.csv{expected}" in error or f"cold/test.csv, {expected}" in error, error
    _record(figures, f"cold mirror: {name}", True)


@pytest.mark.parametrize(("name", "expected"), REPLAY_CASES, ids=[c[0] for c in REPLAY_CASES])
def test_broken_replay_file(tmp_path, capsys, figures, name, expected):
    error = _refused(tmp_path, capsys, "--model", f"replay:{BROKEN / name}")
    assert f"{BROKEN / name}, {expected}" in error, error
    _record(figures, f"replay answers: {name}", True)


@pytest.mark.parametrize(("name", "expected"), GENERIC_CASES, ids=[c[0] for c in GENERIC_CASES])
def test_broken_generic_dataset_file(tmp_path, capsys, figures, name, expected):
    error = _refused(tmp_path, capsys, "--dataset", f"file:{BROKEN / name}?lang=zh")
    assert f"{BROKEN / name}, {expected}" in error, error
    _record(figures, f"file: dataset: {name}", True)


def _ten_mb_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """Big files are made at test time, never committed: name -> (path, expected message)."""
    made = {
        "10 MB value in one CSV row": (
            "big_row.csv",
            ",split,topic,label,TEXT\n1,test,race,0," + "x" * TEN_MB + "\n",
            "line 2, field 'TEXT': the value has 10,000,000 characters",
        ),
        "10 MB single line, a quote never closed": (
            "one_line.csv",
            '",split,topic,label,TEXT' + "y" * TEN_MB,
            "line 1: a quoted field is never closed",
        ),
        "10 MB single JSONL line, valid JSON": (
            "big_answer.jsonl",
            '{"prompt": "a", "response": "' + "z" * TEN_MB + '"}',
            "line 1, field 'response': the value has 10,000,000 characters",
        ),
        "10 MB single JSONL line, not JSON": ("garbage.jsonl", "w" * TEN_MB, "line 1: not valid JSON"),
    }
    for file_name, text, _ in made.values():
        (folder / file_name).write_text(text, "utf-8")
    return {case: (folder / file_name, expected) for case, (file_name, _, expected) in made.items()}


def test_ten_megabyte_lines_are_refused_with_the_field_named(tmp_path, capsys, monkeypatch, data_dir, figures):
    big = tmp_path / "big"
    big.mkdir()
    for case, (path, expected) in _ten_mb_files(big).items():
        run_folder = tmp_path / path.stem
        run_folder.mkdir()
        if path.suffix == ".csv":
            monkeypatch.setenv("TRUSTEVAL_DATA_DIR", str(_mirror_with(run_folder, path, data_dir)))
            monkeypatch.setenv("TRUSTEVAL_ALLOW_UNPINNED_DATA", "true")
            error = _refused(run_folder, capsys)
        else:
            monkeypatch.setenv("TRUSTEVAL_DATA_DIR", str(data_dir))
            error = _refused(run_folder, capsys, "--model", f"replay:{path}")
        assert expected in error, (case, error[:500])
        assert len(error) < 1000, "the message must not echo the 10 MB line"
        _record(figures, case, True)


def test_a_broken_file_fails_the_process_with_status_2(tmp_path, data_dir):
    mirror = _mirror_with(tmp_path, BROKEN / "cold_nul_byte.csv", data_dir)
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--seeds", "42", "--store", tmp_path / "ws",
                     env=cli_env(TRUSTEVAL_DATA_DIR=str(mirror), TRUSTEVAL_ALLOW_UNPINNED_DATA="true"))  # fmt: skip
    assert result.returncode == 2 and "line 3: contains a NUL byte" in result.stderr
    assert not (tmp_path / "ws" / STORE_FILE).exists()


def test_a_bom_is_valid_and_loads_exactly_like_the_file_without_it(tmp_path, data_dir):
    with_bom = BROKEN / "cold_valid_with_bom.csv"
    without = tmp_path / "no_bom.csv"
    without.write_bytes(with_bom.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    loaded = []
    for source in (with_bom, without):
        mirror = _mirror_with(tmp_path / source.stem, source, data_dir)
        loaded.append(load_dataset("cold", DataContext(data_dir=mirror, allow_unpinned=True)).prompts)
    assert loaded[0] == loaded[1]
    assert [p.text for p in loaded[0]] == ["第一句测试文本", "第二句测试文本", "第三句测试文本"]
    assert [p.category for p in loaded[0]] == ["race", "gender", "region"]
    assert loaded[0][1].attributes == {"fine_grained_label": "2"}


def test_an_extra_column_in_the_header_is_ignored(tmp_path, data_dir):
    mirror = _mirror_with(tmp_path, BROKEN / "cold_valid_extra_column.csv", data_dir)
    prompts = load_dataset("cold", DataContext(data_dir=mirror, allow_unpinned=True)).prompts
    assert [(p.text, p.label, p.category) for p in prompts] == [("第一句测试文本", 0, "race")]


DEEP = "[" * 100_000 + "]" * 100_000
MADE_JSON_CASES = [
    # (case, file name, content, where the file goes, expected message after the path)
    ("deeply nested JSONL", "deep.jsonl", '{"text": "a", "label": 0, "x": ' + DEEP + "}\n", "file",
     "line 1: not usable JSON: nested too deeply"),
    ("deeply nested JSON array", "deep.json", '[{"text": "a", "label": 0, "x": ' + DEEP + "}]", "file",
     ": not usable JSON: nested too deeply"),
    ("deeply nested replay line", "deep_answers.jsonl", '{"prompt": "a", "response": ' + DEEP + "}\n", "replay",
     "line 1: not usable JSON: nested too deeply"),
    ("integer of 5,000 digits", "big_int.jsonl", '{"text": "a", "label": ' + "9" * 5000 + "}\n", "file",
     "line 1: not usable JSON: a number has more than 4,300 digits"),
    ("lone surrogate in a text", "surrogate.jsonl", '{"text": "a\\ud800b", "label": 0}\n', "file",
     "line 1, field 'text': the value holds a lone UTF-16 surrogate escape"),
    ("lone surrogate in an answer", "surrogate_answers.jsonl", '{"prompt": "a", "response": "\\udfff"}\n', "replay",
     "line 1, field 'response': the value holds a lone UTF-16 surrogate escape"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "content", "role", "expected"), MADE_JSON_CASES,
                         ids=[c[0] for c in MADE_JSON_CASES])  # fmt: skip
def test_json_that_python_cannot_hold_is_refused(tmp_path, capsys, figures, case, name, content, role, expected):
    path = tmp_path / name
    path.write_text(content, "utf-8")
    flag = ("--model", f"replay:{path}") if role == "replay" else ("--dataset", f"file:{path}?lang=zh")
    error = _refused(tmp_path, capsys, *flag)
    assert f"{path}{expected}" in error or f"{path}, {expected}" in error, error
    assert len(error) < 500
    _record(figures, case, True)


def test_a_bad_byte_after_a_bom_is_reported_at_its_own_line_and_offset(
    tmp_path, capsys, monkeypatch, data_dir, figures
):
    body = b",split,topic,label,TEXT\n0,test,race,0,ok\n\xff1,test,race,0,bad\n"
    test_csv = tmp_path / "bom_bad_byte.csv"
    test_csv.write_bytes(b"\xef\xbb\xbf" + body)
    monkeypatch.setenv("TRUSTEVAL_DATA_DIR", str(_mirror_with(tmp_path, test_csv, data_dir)))
    monkeypatch.setenv("TRUSTEVAL_ALLOW_UNPINNED_DATA", "true")  # past the pin check, to the parser
    error = _refused(tmp_path, capsys)
    offset = 3 + body.index(b"\xff")
    assert f"cold/test.csv, line 3: not UTF-8 (byte 0xff at offset {offset})" in error, error
    _record(figures, "cold mirror: a bad byte after a BOM", True)


def test_a_stray_quote_that_merges_two_rows_is_refused(tmp_path, capsys, monkeypatch, data_dir, figures):
    test_csv = tmp_path / "stray_quote.csv"
    test_csv.write_text(
        ',split,topic,label,TEXT\n0,test,race,0,"他说你好\n1,test,gender,1,第二行"\n2,test,region,0,第三行\n', "utf-8"
    )
    monkeypatch.setenv("TRUSTEVAL_DATA_DIR", str(_mirror_with(tmp_path, test_csv, data_dir)))
    monkeypatch.setenv("TRUSTEVAL_ALLOW_UNPINNED_DATA", "true")  # past the pin check, to the parser
    error = _refused(tmp_path, capsys)
    assert "cold/test.csv, line 2, field 'TEXT': a quoted field runs on to line 3" in error, error
    _record(figures, "cold mirror: a stray quote merging two rows", True)


def test_a_quoted_field_with_a_real_line_break_still_loads(tmp_path, data_dir):
    test_csv = tmp_path / "multi_line.csv"
    test_csv.write_text(
        ',split,topic,label,TEXT\n0,test,race,0,"第一行\n还是第一条"\n2,test,region,0,第三行\n', "utf-8"
    )
    prompts = load_dataset(
        "cold", DataContext(data_dir=_mirror_with(tmp_path, test_csv, data_dir), allow_unpinned=True)
    ).prompts
    assert [p.text for p in prompts] == ["第一行\n还是第一条", "第三行"]


def test_free_text_with_commas_on_a_continued_line_is_not_taken_for_merged_rows(tmp_path):
    # As in ToxicSpans' comments.csv: two columns, a comment running over two lines with one comma in each.
    path = tmp_path / "comments.csv"
    path.write_text('id,text\n7,"Ban them, all!\nEvery one, I say."\n8,plain\n', "utf-8")
    assert [row["text"] for _, row in read_records(path)] == ["Ban them, all!\nEvery one, I say.", "plain"]


def test_a_data_error_is_one_line_without_escape_sequences(tmp_path, capsys, figures):
    path = tmp_path / "answers\x1b]0;pwned\x07\x1b[2J\nsecond line.jsonl"  # the message names the file as given
    path.write_text('{"text": "a", "label": "maybe"}\n', "utf-8")
    error = _refused(tmp_path, capsys, "--dataset", f"file:{path}?lang=zh")
    assert "\x1b" not in error and "\x07" not in error and "field 'label'" in error, repr(error)
    assert "answers]0;pwned[2J second line.jsonl" in error
    _record(figures, "escape sequences in an error message", True)


def test_reading_a_csv_leaves_the_process_wide_field_limit_as_it_was(tmp_path):
    import csv

    path = tmp_path / "long.csv"
    path.write_text("id,text\n1," + "x" * 200_000 + "\n", "utf-8")  # over csv's default limit of 131,072
    previous = csv.field_size_limit()
    try:
        csv.field_size_limit(1_000)
        assert [len(row["text"]) for _, row in read_records(path)] == [200_000]
        assert csv.field_size_limit() == 1_000  # another reader in the process keeps its own limit
    finally:
        csv.field_size_limit(previous)
