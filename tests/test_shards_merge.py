"""`run --shard i/n` and `merge`: disjoint slices that cover the run, joined into tables equal to one run's."""

from __future__ import annotations

import hashlib

import pytest

from helpers import run_cli, write_labelled_csv, write_replay_answers
from trusteval.store.merge import missing_shards
from trusteval.store.shards import parse_shard, shard_of

pytestmark = pytest.mark.slow

TEXTS = [f"{group}的人{word}第{i}句" for i, (group, word) in enumerate(
    [(g, w) for g in ("这个地区", "那些女人", "外国人") for w in ("都很友好", "真恶心", "太蠢了", "很勤劳")]
)]  # fmt: skip


DATASET = "file:data@3ab05202"  # the name of the data below, by its content: every shard read the same file


def _inputs(folder):
    data = write_labelled_csv(folder / "data.csv", TEXTS)
    responses = [("你说得对，" if i % 3 else "滚开，蠢货") + t for i, t in enumerate(TEXTS)]
    return data, write_replay_answers(folder / "answers.jsonl", TEXTS, responses)


def _run(data, answers, store, cache_dir, *extra):
    done = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{answers}", "--seeds", "42,43", "--store", store, "--cache-dir", cache_dir,
                   "--resamples", "200", "--json", "--no-progress", *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.json()


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_parse_shard_accepts_index_of_count_and_refuses_the_rest() -> None:
    assert parse_shard("0/1") == (0, 1) and parse_shard(" 3/4 ") == (3, 4)
    for bad in ("4/4", "1/0", "-1/2", "a/b", "1", "1/2/3"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_shards_are_disjoint_and_cover_every_key() -> None:
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(300)]
    slices = [{k for k in keys if shard_of(k, 3) == i} for i in range(3)]
    assert sum(len(s) for s in slices) == len(keys) and set().union(*slices) == set(keys)
    assert min(len(s) for s in slices) > len(keys) / 4, "slices are of similar size"


def test_missing_shards_of_different_counts_are_the_uncovered_residues() -> None:
    assert missing_shards({"0/3", "2/3"}) == ["1/3"] and missing_shards({"", "0/3"}) == []
    assert missing_shards({"0/3", "1/2"}) == ["2/6", "4/6"], "0/3 and 1/2 do not cover the run"
    assert missing_shards({"0/3", "1/2", "2/6", "4/6"}) == []
    assert missing_shards({"0/2", "1/4", "3/4"}) == []


def test_merged_shards_equal_one_run(tmp_path, cache_dir) -> None:
    data, answers = _inputs(tmp_path)
    whole = _run(data, answers, tmp_path / "whole", cache_dir)
    parts = [_run(data, answers, tmp_path / f"s{i}", cache_dir, "--shard", f"{i}/3") for i in range(3)]
    assert {p["run_id"] for p in parts} == {whole["run_id"]}, "every shard keeps the whole run's id"
    assert sum(p["requests"] for p in parts) == whole["requests"] == 2 * len(TEXTS)

    partial = run_cli("merge", tmp_path / "s0", tmp_path / "s1", "--into", tmp_path / "partial", "--json")
    assert partial.returncode == 0, partial.stderr
    assert partial.json()["runs"][whole["run_id"]] == {"status": "incomplete", "items": parts[0]["requests"]
        + parts[1]["requests"], "missing_shards": ["2/3"], "datasets": [DATASET]}  # fmt: skip
    for command in ("report", "tables"):  # a shard's store says its tables cover one slice
        told = run_cli(command, "--store", tmp_path / "s1").stderr
        assert "holds shard 1/3 only: its tables and rows cover that slice only" in told
    for command in ("report", "tables"):  # tables over 2 of 3 shards say so too
        told = run_cli(command, "--store", tmp_path / "partial").stderr
        assert "is incomplete: shards missing: 2/3; merge their stores" in told, "not: some answers failed, run again"

    merged = tmp_path / "merged"
    before = [_sha256(tmp_path / f"s{i}" / "trusteval.sqlite") for i in range(3)]
    done = run_cli("merge", *(tmp_path / f"s{i}" for i in range(3)), "--into", merged, "--json")
    assert done.returncode == 0, done.stderr
    assert [_sha256(tmp_path / f"s{i}" / "trusteval.sqlite") for i in range(3)] == before, "sources are read-only"
    outcome = done.json()["runs"][whole["run_id"]]
    assert outcome == {"status": "complete", "items": 2 * len(TEXTS), "missing_shards": [], "datasets": [DATASET]}
    again = run_cli("merge", tmp_path / "s1", "--into", merged, "--json")
    assert sum(again.json()["added"].values()) == 0, "merging a store twice adds nothing"
    assert again.json()["runs"][whole["run_id"]] == outcome, "the merged store still holds every shard"

    for i, missing in ((0, ["1/3", "2/3"]), (1, ["2/3"]), (2, [])):  # merged one by one as the shards finish
        step = run_cli("merge", tmp_path / f"s{i}", "--into", tmp_path / "stepwise", "--json").json()
        assert step["runs"][whole["run_id"]]["missing_shards"] == missing
    assert step["runs"][whole["run_id"]] == outcome

    single = run_cli("report", whole["run_id"], "--store", tmp_path / "whole", "--json").json()
    joined = run_cli("report", whole["run_id"], "--store", merged, "--json").json()
    assert joined["metrics"] == single["metrics"]
    assert run_cli("export", "--store", merged).stdout.count("\n") == 2 * len(TEXTS)
