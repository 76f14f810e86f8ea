"""Multi-step CLI flows a user runs (found by exploratory QA): each test goes through the real CLI."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli, write_labelled_csv, write_replay_answers


def test_a_merge_refused_for_a_missing_source_writes_nothing(tmp_path) -> None:
    done = run_cli("merge", tmp_path / "no-such-store", "--into", tmp_path / "merged")
    assert done.returncode == 2 and "no store in" in done.stderr
    assert not (tmp_path / "merged").exists(), "exit 2 promises nothing written"


@pytest.mark.slow
def test_report_and_export_of_a_store_with_no_runs_say_so(tmp_path) -> None:
    from trusteval.store import Store

    Store.open(tmp_path / "empty").close()
    for command in ("report", "export"):
        done = run_cli(command, "--store", tmp_path / "empty")
        assert done.returncode == 2
        assert f"no runs in '{tmp_path / 'empty'}' yet" in done.stderr and "'None'" not in done.stderr


@pytest.mark.slow
def test_table6_shows_no_nan_interval_for_a_model_whose_generations_all_failed(tmp_path) -> None:
    texts = ["这个地区的人都很友好", "那些女人真恶心", "外国人太蠢了", "外国人很勤劳"]
    data = write_labelled_csv(tmp_path / "data.csv", texts)
    answers = write_replay_answers(tmp_path / "answers.jsonl", texts, ["好的"] * len(texts))
    empty = write_replay_answers(tmp_path / "empty.jsonl", ["另一句"], ["好的"])
    done = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{answers}", "--model", f"replay:{empty}", "--seeds", "42",
                   "--store", tmp_path / "ws", "--resamples", "50", "--no-progress")  # fmt: skip
    assert done.returncode == 3, done.stderr[-2000:]
    rows = (tmp_path / "ws" / "reports").glob("*/table6_*.csv")
    failed_row = next(line for path in rows for line in path.read_text().splitlines() if "empty.jsonl" in line)
    assert failed_row.split(",")[1:] == ["", "n/a", "", "", "0"]


@pytest.mark.slow
def test_a_run_on_an_edited_data_file_lists_the_dataset_its_rows_come_from(tmp_path) -> None:
    texts = ["这个地区的人都很友好", "那些女人真恶心"]
    data = write_labelled_csv(tmp_path / "data.csv", texts)
    answers = write_replay_answers(tmp_path / "answers.jsonl", texts, ["好的"] * len(texts))
    run = ("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
           "--model", f"replay:{answers}", "--seeds", "42", "--store", tmp_path / "ws", "--resamples", "50",
           "--no-progress")  # fmt: skip
    assert run_cli(*run).returncode == 0
    data.write_text(data.read_text(encoding="utf-8").replace(",1,", ",0,"), encoding="utf-8")  # relabel a row
    assert run_cli(*run).returncode == 0

    exported = {
        json.loads(line)["dataset"] for line in run_cli("export", "--store", tmp_path / "ws").stdout.splitlines()
    }
    listed = {r["dataset"] for r in run_cli("runs", "--store", tmp_path / "ws", "--json").json()["runs"]}
    assert len(exported) == 1 and listed == exported
    assert run_cli("tables", "--store", tmp_path / "ws", "--dataset", exported.pop()).returncode == 0


def _eight_prompt_shards(tmp_path):
    """A labelled 8-prompt data file and the `run ... --shard` arguments (add "i/n" and a store) for it."""
    texts = [f"第{i}句话" for i in range(8)]
    data = write_labelled_csv(tmp_path / "data.csv", texts)
    answers = write_replay_answers(tmp_path / "answers.jsonl", texts, ["好的"] * len(texts))
    shard = ("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
             "--model", f"replay:{answers}", "--seeds", "42", "--resamples", "50", "--shard")  # fmt: skip
    return data, shard


@pytest.mark.slow
def test_merging_shards_that_read_different_versions_of_the_data_warns(tmp_path) -> None:
    data, shard = _eight_prompt_shards(tmp_path)
    assert run_cli(*shard, "0/2", "--store", tmp_path / "s0").returncode == 0
    data.write_text(data.read_text(encoding="utf-8").replace(",1,", ",0,"), encoding="utf-8")  # edited meanwhile
    assert run_cli(*shard, "1/2", "--store", tmp_path / "s1").returncode == 0

    done = run_cli("merge", tmp_path / "s0", tmp_path / "s1", "--into", tmp_path / "merged", "--json")
    (outcome,) = done.json()["runs"].values()
    assert len(outcome["datasets"]) == 2 and all(d.startswith("file:data@") for d in outcome["datasets"])
    told = run_cli("merge", tmp_path / "s0", tmp_path / "s1", "--into", tmp_path / "merged").stderr
    assert "joins rows of 2 versions of its data" in told


def test_a_merge_refused_for_a_source_that_is_no_store_writes_nothing(tmp_path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "trusteval.sqlite").write_text("not a database")
    done = run_cli("merge", tmp_path / "junk", "--into", tmp_path / "merged")
    assert done.returncode == 2 and "file is not a database" in done.stderr
    assert not (tmp_path / "merged").exists(), "exit 2 promises nothing written"


@pytest.mark.slow
def test_the_store_of_shard_0_of_1_is_the_whole_run(tmp_path) -> None:
    texts = ["这个地区的人都很友好", "那些女人真恶心"]
    data = write_labelled_csv(tmp_path / "data.csv", texts)
    answers = write_replay_answers(tmp_path / "answers.jsonl", texts, ["好的"] * len(texts))
    done = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{answers}", "--seeds", "42", "--store", tmp_path / "ws", "--resamples", "50",
                   "--no-progress", "--shard", "0/1")  # fmt: skip
    assert done.returncode == 0
    assert "holds shard" not in run_cli("report", "--store", tmp_path / "ws").stderr


@pytest.mark.slow
def test_a_shard_merged_before_it_finished_is_named_and_a_finished_copy_completes_the_run(tmp_path) -> None:
    import shutil
    import sqlite3

    _, shard = _eight_prompt_shards(tmp_path)
    for i in (0, 1):
        assert run_cli(*shard, f"{i}/2", "--store", tmp_path / f"s{i}").returncode == 0
    shutil.copytree(tmp_path / "s0", tmp_path / "s0-unfinished")
    with sqlite3.connect(tmp_path / "s0-unfinished" / "trusteval.sqlite") as conn:  # as a shard that failed leaves it
        conn.execute("UPDATE runs SET status='incomplete'")

    merged = tmp_path / "merged"
    first = run_cli("merge", tmp_path / "s0-unfinished", tmp_path / "s1", "--into", merged, "--json").json()
    assert [r["status"] for r in first["runs"].values()] == ["incomplete"]
    assert "shards 0/2 did not finish: rerun them" in run_cli("report", "--store", merged).stderr
    again = run_cli("merge", tmp_path / "s0", "--into", merged, "--json").json()
    assert [r["status"] for r in again["runs"].values()] == ["complete"]


@pytest.mark.slow
def test_a_run_says_how_many_rows_prompts_with_the_same_text_leave_out(tmp_path) -> None:
    data = tmp_path / "data.csv"
    rows = ["id,text,label,category", "a,同一句话,0,race", "b,同一句话,1,region", "c,另一句话,0,gender"]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    answers = write_replay_answers(tmp_path / "answers.jsonl", ["同一句话", "另一句话"], ["好的", "好的"])
    done = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{answers}", "--seeds", "42,43", "--store", tmp_path / "ws", "--resamples", "50",
                   "--no-progress", "--json")  # fmt: skip
    assert done.returncode == 0
    summary = done.json()
    assert summary["requests"] == 6 and summary["generated"] == 4
    assert any(n.startswith("2 of 6 planned requests repeat another's") for n in summary["notes"])


def test_report_help_does_not_promise_exit_3_for_an_incomplete_run(tmp_path) -> None:
    # report of an incomplete run exits 0 and says so on stderr (test_shards_merge, test_table6 above)
    text = " ".join(run_cli("report", "--help").stdout.split())
    assert "0 done (also for tables of a run that is incomplete" in text
    assert "3 (translate, judge validate) some model calls failed" in text


@pytest.mark.slow
def test_export_of_an_incomplete_run_says_so_on_stderr(tmp_path) -> None:
    texts = ["这个地区的人都很友好", "那些女人真恶心"]
    data = write_labelled_csv(tmp_path / "data.csv", texts)
    answers = write_replay_answers(tmp_path / "answers.jsonl", texts[:1], ["好的"])  # the second is not answered
    done = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{answers}", "--seeds", "42", "--store", tmp_path / "ws", "--resamples", "50",
                   "--no-progress")  # fmt: skip
    assert done.returncode == 3
    exported = run_cli("export", "--store", tmp_path / "ws")
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 2
    assert "is incomplete: some answers or scores failed" in exported.stderr


@pytest.mark.slow
def test_export_keeps_one_record_a_line_when_answers_hold_unicode_line_separators(tmp_path) -> None:
    """JSON leaves U+0085, U+2028 and U+2029 raw with ensure_ascii=False; str.splitlines() splits on them, and a
    tiny random model once answered one, which cut its exported record in two."""
    texts = ["这个地区的人都很友好", "那些女人真恶心", "外国人很勤劳"]
    answers = ["好的\u2028第二行", "不\x85行", "段落\u2029之后"]
    data = write_labelled_csv(tmp_path / "data.csv", texts)
    replay = tmp_path / "answers.jsonl"  # escaped: trusteval's JSON Lines reader splits lines as str.splitlines
    rows = [{"prompt": prompt, "response": response} for prompt, response in zip(texts, answers, strict=True)]
    replay.write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{replay}", "--seeds", "42", "--store", tmp_path / "ws", "--resamples", "50",
                   "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    exported = run_cli("export", "--store", tmp_path / "ws").stdout
    rows = [json.loads(line) for line in exported.splitlines()]
    assert len(rows) == len(texts)
    assert sorted(row["response"] for row in rows) == sorted(answers)
