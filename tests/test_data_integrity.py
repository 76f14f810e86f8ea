"""Data integrity: mirror files are checked against their pins, and an edited file never reuses stored prompts."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli
from trusteval.data import sources
from trusteval.data.sources import DataContext, cached_sha256, catalog, dataset_file
from trusteval.errors import DataError
from trusteval.records import GenerationParams, Prompt, Request
from trusteval.store import MIGRATIONS, STORE_FILENAME, Store


def test_every_pinned_file_in_the_real_mirror_matches_its_pin(data_dir, tmp_path):
    checked = 0
    for entry in catalog().values():
        for filename, pinned in entry["files"].items():
            path = data_dir / entry["folder"] / filename
            assert path.is_file(), f"the mirror lacks the pinned file {path}"
            assert cached_sha256(path, tmp_path) == pinned["sha256"], path
            checked += 1
    assert checked == 19  # COLD 3, HateXplain 5 (with the reconstructed train), ToxicSpans 6, SC101 subset 1, TisEval 4


def test_the_check_is_cached_by_size_and_mtime(tmp_path, monkeypatch):
    data = tmp_path / "f.txt"
    data.write_text("one")
    first = cached_sha256(data, tmp_path / "cache")
    monkeypatch.setattr(sources, "sha256_file", lambda path: pytest.fail("hashed again"))
    assert cached_sha256(data, tmp_path / "cache") == first
    monkeypatch.undo()
    data.write_text("two!")  # another size: hashed again
    assert cached_sha256(data, tmp_path / "cache") != first


def _tampered_mirror(data_dir: Path, tmp_path: Path) -> Path:
    mirror = tmp_path / "mirror"
    shutil.copytree(data_dir / "cold", mirror / "cold")
    return mirror


def _flip_labels(path: Path) -> None:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["label"] = "1" if row["label"] == "0" else "0"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_a_tampered_mirror_file_is_refused_unless_allowed(data_dir, tmp_path):
    mirror = _tampered_mirror(data_dir, tmp_path)
    test_csv = mirror / "cold" / "test.csv"
    _flip_labels(test_csv)
    with pytest.raises(DataError) as error:
        dataset_file("cold", "test.csv", DataContext(data_dir=mirror, cache_dir=tmp_path / "c"))
    message = str(error.value)
    assert message.startswith(f"{test_csv}: sha256 ") and "does not match the pinned b06d31481f0d" in message
    assert "--allow-unpinned-data" in message and "\n" not in message
    allowed = DataContext(data_dir=mirror, cache_dir=tmp_path / "c", allow_unpinned=True)
    assert dataset_file("cold", "test.csv", allowed) == test_csv
    assert len(allowed.unpinned) == 1 and allowed.unpinned[0].startswith(f"{test_csv}: sha256 ")


def _replay_file(mirror: Path, target: Path) -> Path:
    """Every COLD test text answered with itself: the answers do not change when the labels do."""
    with (mirror / "cold" / "test.csv").open(encoding="utf-8", newline="") as handle:
        texts = {row["TEXT"].strip() for row in csv.DictReader(handle)}
    target.write_text("".join(json.dumps({"prompt": t, "response": t}, ensure_ascii=False) + "\n" for t in texts))
    return target


def _run(mirror: Path, store: Path, replay: Path, cache_dir: Path, *extra: str):
    return run_cli(
        "run", "--benchmark", "trusteval-toxicity", "--dataset", "cold", "--model", f"replay:{replay}",
        "--prompt-toxicity", "label", "--limit", "60", "--seeds", "42", "--store", store, "--data-dir", mirror,
        "--cache-dir", cache_dir, "--json", "--no-progress", *extra,
    )  # fmt: skip


@pytest.mark.slow
def test_an_edited_mirror_gives_fresh_labels_and_true_provenance(data_dir, tmp_path, cache_dir):
    mirror = _tampered_mirror(data_dir, tmp_path)
    replay = _replay_file(mirror, tmp_path / "answers.jsonl")
    store = tmp_path / "ws"
    first = _run(mirror, store, replay, cache_dir)
    assert first.returncode == 0, first.stderr[-2000:]

    _flip_labels(mirror / "cold" / "test.csv")
    refused = _run(mirror, store, replay, cache_dir)
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"{mirror / 'cold' / 'test.csv'}: sha256 " in refused.stderr and "--allow-unpinned-data" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    edited = _run(mirror, store, replay, cache_dir, "--allow-unpinned-data")
    assert edited.returncode == 0, edited.stderr[-2000:]
    fresh = _run(mirror, tmp_path / "fresh", replay, cache_dir, "--allow-unpinned-data")
    out, fresh_out, first_out = edited.json(), fresh.json(), first.json()
    assert out["metrics"] == fresh_out["metrics"] != first_out["metrics"]
    overall = out["metrics"]["models"][f"replay:{replay}"]["overall"]
    first_overall = first_out["metrics"]["models"][f"replay:{replay}"]["overall"]
    assert overall["T2T"]["value"] == pytest.approx(first_overall["NT2T"]["value"])  # labels flipped
    assert out["reused"] == 60 and any("used because of --allow-unpinned-data" in n for n in out["notes"])

    opened = Store.open_read_only(store)
    data = opened.aggregate(out["run_id"], "data")
    assert data["sources"]["cold/test.csv"] == sources.sha256_file(mirror / "cold" / "test.csv")
    assert data["allow_unpinned_data"] is True and opened.run_info(out["run_id"])["spec"]["allow_unpinned_data"]
    assert any("does not match the pinned" in n for n in data["notes"])
    assert opened.aggregate(first_out["run_id"], "data")["allow_unpinned_data"] is False
    assert opened.count("prompts") == 120  # both versions of the 60 sampled prompts, neither overwritten
    opened.close()


def _plan(labels: list[int]) -> tuple[list[Prompt], list]:
    prompts = [Prompt(id=f"p{i}", dataset="d", text=f"text {i}", lang="en", label=v) for i, v in enumerate(labels)]
    items = [(Request.build("m", (("user", p.text),), GenerationParams(), 42), "m", p, {}) for p in prompts]
    return prompts, items


def test_the_same_run_on_edited_data_reads_the_new_prompts(tmp_path):
    store = Store.open(tmp_path)
    prompts, items = _plan([0, 1, 0])
    store.begin_run("r", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    edited, edited_items = _plan([1, 1, 1])
    store.begin_run("r", benchmark="b", dataset="d", spec={}, prompts=edited, items=edited_items)
    assert [(i.prompt.id, i.prompt.label) for i in store.run_items("r")] == [("p0", 1), ("p1", 1), ("p2", 1)]
    assert store.count("prompts") == 5  # p1 is the same in both versions and stored once
    store.begin_run("old", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    assert [i.prompt.label for i in store.run_items("old")] == [0, 1, 0]
    store.close()


def test_a_store_written_before_content_keys_stays_readable(tmp_path):
    """A store with only the first migration: prompts keyed by the dataset's id, no source_id column."""
    conn = sqlite3.connect(tmp_path / STORE_FILENAME)
    MIGRATIONS[0](conn)
    conn.executescript("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY);")
    conn.execute("INSERT INTO schema_migrations VALUES (1)")
    _, items = _plan([1])
    request = items[0][0]
    conn.execute("INSERT INTO runs VALUES ('r', 0, 0, 'b', 'd', '{}', 'complete')")
    conn.execute("INSERT INTO prompts VALUES ('d', 'p0', 'text 0', 'en', 1, NULL, '{}', 's')")
    conn.execute("INSERT INTO requests VALUES (?, 'm', '[]', '{}', 42)", (request.key,))
    conn.execute("INSERT INTO run_items VALUES ('r', ?, 'm', 42, 'd', 'p0', '{}')", (request.key,))
    conn.commit()
    conn.close()
    read_only = Store.open_read_only(tmp_path)
    assert [(i.prompt.id, i.prompt.label) for i in read_only.run_items("r")] == [("p0", 1)]
    read_only.close()
    store = Store.open(tmp_path)  # migrates: the old row is read as before, a new run adds a versioned row
    assert [(i.prompt.id, i.prompt.label) for i in store.run_items("r")] == [("p0", 1)]
    edited, edited_items = _plan([0])
    store.begin_run("r2", benchmark="b", dataset="d", spec={}, prompts=edited, items=edited_items)
    assert [(i.prompt.id, i.prompt.label) for i in store.run_items("r2")] == [("p0", 0)]
    assert [i.prompt.label for i in store.run_items("r")] == [1]
    store.close()


def test_shards_in_one_store_replace_only_their_own_slice(tmp_path):
    from trusteval.store.shards import in_shard, shard_of

    store = Store.open(tmp_path)
    prompts, items = _plan([0, 1, 0, 1, 0, 1, 0, 1])
    for index in (0, 1):
        mine = [item for item in items if shard_of(item[0].key, 2) == index]
        store.begin_run("r", benchmark="b", dataset="d", spec={}, prompts=prompts, items=mine,
                        replaces=in_shard(f"{index}/2"))  # fmt: skip
    assert sorted(i.prompt.id for i in store.run_items("r")) == [f"p{i}" for i in range(8)]
    edited, edited_items = _plan([1] * 8)
    again = [item for item in edited_items if shard_of(item[0].key, 2) == 0]
    store.begin_run("r", benchmark="b", dataset="d", spec={}, prompts=edited, items=again, replaces=in_shard("0/2"))
    labels = {i.prompt.id: (i.prompt.label, shard_of(i.request_key, 2)) for i in store.run_items("r")}
    assert len(labels) == 8 and all(label == 1 for label, shard in labels.values() if shard == 0)
    assert [label for label, shard in labels.values() if shard == 1] == [
        v for i, v in enumerate([0, 1] * 4) if shard_of(items[i][0].key, 2) == 1
    ]
    store.close()
