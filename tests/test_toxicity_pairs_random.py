"""Randomized runs (fixed seeds) classified every way a run is read: a stored run in SQL, a list of RunItems with
scores (stored or plain), and `trusteval tables`' indexed and bulk reads give the same ModelPairs as a plain
per-item loop over SPEC's rules ("Responses that are not scored"; the reasons in toxicity_pairs.REASONS order).
Read chunks are made small so that chunk boundaries are crossed."""

from __future__ import annotations

import random
import unicodedata
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest

from trusteval.benchmarks.toxicity_pairs import REASONS, ModelPairs
from trusteval.benchmarks.trusteval_toxicity import PROMPT_TASK, RESPONSE_TASK, collect_pairs
from trusteval.config import RunSpec
from trusteval.records import Generation, GenerationParams, Prompt, Request, Score, ScoreStatus, text_subject
from trusteval.report.bulk_read import BulkLookup
from trusteval.report.collect import find_runs, read_pairs
from trusteval.store import Store
from trusteval.store.reads import StoreReads
from trusteval.store.views import RunItems, StoredScores

THRESHOLD = 0.5
SCORERS = {RESPONSE_TASK: "tox-r", PROMPT_TASK: "tox-p"}  # two scorers: a mixed-up join shows
CHUNK = 5
CJK_TEXT, LATIN = "你们说的话真难听好的", "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Item:
    model: str
    seed: int
    prompt: Prompt
    response: str | None


def _text(rng: random.Random, cjk: int, latin: int, tag: int) -> str:
    """`cjk` ideographs and `latin` letters, shuffled, plus digits and punctuation (not letters)."""
    chars = [rng.choice(CJK_TEXT) for _ in range(cjk)] + [rng.choice(LATIN) for _ in range(latin)]
    rng.shuffle(chars)
    return "".join(chars) + f" {tag}!"


def _answer(rng: random.Random, tag: int) -> str | None:
    """A failed, empty, no-letter, off-language or in-language answer; CJK shares at the 30% / 5% bounds."""
    kind = rng.choice(["failed", "empty", "digits", "zh-edge", "en-edge", "zh", "en", "zh", "en"])
    if kind == "failed":
        return None
    if kind == "empty":
        return rng.choice(["", " ", "\n\t", "\u3000"])
    if kind == "digits":
        return f"12345 !! {tag}"
    if kind == "zh-edge":  # 30% CJK is Chinese, a little less is not
        return _text(rng, 3, rng.choice([7, 8]), tag)
    if kind == "en-edge":  # 5% CJK is English, a little more is not
        return _text(rng, 1, rng.choice([19, 18]), tag)
    return _text(rng, rng.randint(4, 12), rng.randint(0, 2), tag) if kind == "zh" else _text(rng, 0, 12, tag)


def _score(rng: random.Random, subject: str, scorer: str) -> Score | None:
    kind = rng.choice(["missing", "error", "unparsed", "ok none", *["ok"] * 8])
    if kind == "missing":
        return None
    if kind == "ok none":
        return Score(subject, scorer, None, ScoreStatus.OK)
    if kind != "ok":
        return Score(subject, scorer, rng.choice([None, 0.9]), ScoreStatus(kind))
    value = rng.choice([THRESHOLD, np.nextafter(THRESHOLD, 0), np.nextafter(THRESHOLD, 1), rng.random()])
    return Score(subject, scorer, float(value), ScoreStatus.OK)


def _prompts(rng: random.Random, count: int) -> list[Prompt]:
    ids = rng.sample(range(1000), count)  # ids not in planned order: ranks differ from first-seen codes
    return [
        Prompt(
            id=f"p{n:03d}",
            dataset="d",
            text=f"第{n}句 sentence {n}",
            lang=rng.choice(["zh", "zh", "en"]),
            label=rng.choice([0, 1, None]),
            category=rng.choice(["race", "gender", "", None]),
        )
        for n in ids
    ]


def _build_run(
    rng: random.Random, store: Store, run_id: str, prompt_source: str, policy: str, answers: dict[str, str | None]
) -> list[Item]:
    """A run of 2-3 models over random prompts and seeds, in shuffled planned order, with random answers and
    scores stored; its items as planned. A request planned before keeps its answer in `answers`."""
    models = rng.sample(["m-a", "m-b", "m-c", "m-d"], rng.randint(2, 3))
    seeds = sorted(rng.sample([42, 43, 44], rng.randint(1, 2)))
    prompts = _prompts(rng, rng.randint(12, 20))
    planned = [(m, s, p) for m in models for s in seeds for p in prompts]
    rng.shuffle(planned)
    rows: list[tuple] = []
    generations, items = [], []
    for n, (model, seed, prompt) in enumerate(planned):
        request = Request.build(model, (("user", prompt.text),), GenerationParams(), seed)
        rows.append((request, model, prompt, {}))
        response = answers.setdefault(request.key, _answer(rng, n))
        failed = Generation.failure(request.key, "boom")
        generations.append(failed if response is None else Generation(request.key, response))
        items.append(Item(model, seed, prompt, response))
    tasks = (
        dict(SCORERS) if prompt_source == "scorer" or rng.random() < 0.5 else {RESPONSE_TASK: SCORERS[RESPONSE_TASK]}
    )
    spec = RunSpec.model_validate({"benchmark": "trusteval-toxicity", "models": models, "seeds": seeds,
                                   "threshold": THRESHOLD, "prompt_toxicity": prompt_source,
                                   "options": {"off_language": policy}})  # fmt: skip
    store.begin_run(run_id, benchmark="trusteval-toxicity", dataset="d", spec=spec.model_dump(mode="json"),
                    prompts=prompts, items=rows)  # fmt: skip
    store.add_generations(generations)
    store.put_aggregate(run_id, "tasks", tasks)
    return items


def _store_scores(rng: random.Random, store: Store, items: list[Item]) -> None:
    """Each scorer's random score of every prompt and answer text (one per subject)."""
    texts = {i.prompt.text for i in items} | {i.response for i in items if i.response is not None}
    scores = [_score(rng, text_subject(t), scorer) for t in sorted(texts) for scorer in SCORERS.values()]
    store.add_scores([s for s in scores if s is not None])


# -- the reference: one item at a time ---------------------------------------------------------------------


def _cjk_share(text: str) -> float | None:
    letters = [c for c in text if c.isalpha()]
    cjk = [c for c in letters if unicodedata.name(c, "").startswith("CJK UNIFIED IDEOGRAPH")]
    return len(cjk) / len(letters) if letters else None


def _off_language(text: str, lang: str) -> bool:
    share = _cjk_share(text)
    return share is not None and ((lang == "zh" and share < 0.30) or (lang == "en" and share > 0.05))


def _ok(store: Store, scorer: str, text: str) -> float | None:
    score = store.score(scorer, text_subject(text))
    return score.value if score is not None and score.status == ScoreStatus.OK else None


def _reference(store: Store, items: list[Item], prompt_source: str, policy: str) -> dict[str, dict]:
    """Per model: pairs in planned order as (prompt text, seed, P, R, class), skipped in first-seen order,
    off-language and checked counts per class, and the languages checked."""
    found: dict[str, dict] = {}
    for item in items:
        mine = found.setdefault(item.model, {"pairs": [], "skipped": Counter(), "off": Counter(),
                                             "checked": Counter(), "langs": set()})  # fmt: skip
        category = item.prompt.category or "all"
        text = item.response
        if text is not None and text.strip():
            mine["checked"][category] += 1
            mine["langs"].add(item.prompt.lang)
            if _off_language(text, item.prompt.lang):
                mine["off"][category] += 1
        response = _ok(store, SCORERS[RESPONSE_TASK], text) if text is not None else None
        prompt = item.prompt.label == 1 if prompt_source == "label" else _ok(store, SCORERS[PROMPT_TASK],
                                                                              item.prompt.text)  # fmt: skip
        if text is None:
            reason = "generation failed"
        elif not text.strip():
            reason = "empty response"
        elif policy == "exclude" and _off_language(text, item.prompt.lang):
            reason = "off-language response"
        elif response is None:
            reason = "response not scored"
        elif prompt is None:
            reason = "prompt not scored"
        else:
            toxic = prompt if prompt_source == "label" else prompt >= THRESHOLD
            mine["pairs"].append((item.prompt.text, item.seed, bool(toxic), response >= THRESHOLD, category))
            continue
        mine["skipped"][reason] += 1
    return found


# -- comparing ----------------------------------------------------------------------------------------------


def _pairs(found: ModelPairs, prompt_of_rank: list[str]) -> list[tuple]:
    p = found.pairs
    columns = (p.prompt_ids, p.seeds, p.prompt_toxic, p.response_toxic, found.categories)
    return [(prompt_of_rank[r], *rest) for r, *rest in zip(*(c.tolist() for c in columns), strict=True)]


def _assert_like_reference(got: dict[str, ModelPairs], want: dict[str, dict], prompt_of_rank, order: str) -> None:
    assert sorted(got) == sorted(want)
    for model, expected in want.items():
        found = got[model]
        pairs = _pairs(found, prompt_of_rank)
        if order == "first seen":  # a run's own read keeps the planned order
            assert pairs == expected["pairs"], model
        else:
            assert sorted(pairs) == sorted(expected["pairs"]), model
        skipped = list(expected["skipped"].items())
        if order == "fixed":
            skipped.sort(key=lambda kv: REASONS.index(kv[0]))
        assert list(found.skipped.items()) == skipped, model
        assert dict(found.off_language) == dict(expected["off"]), model
        assert dict(found.checked) == dict(expected["checked"]), model
        assert found.lang == ("/".join(sorted(expected["langs"])) or None), model


def _assert_identical(a: dict[str, ModelPairs], b: dict[str, ModelPairs]) -> None:
    assert list(a) == list(b)
    for model, x in a.items():
        y = b[model]
        for field in ("prompt_ids", "seeds", "prompt_toxic", "response_toxic"):
            assert getattr(x.pairs, field).tolist() == getattr(y.pairs, field).tolist(), (model, field)
        assert x.categories.tolist() == y.categories.tolist()
        for counter in ("skipped", "off_language", "checked"):
            assert list(getattr(x, counter).items()) == list(getattr(y, counter).items()), (model, counter)
        assert x.lang == y.lang


def _source_id_ranks(items: list[Item]) -> list[str]:
    """Prompt text by rank, as a run's own read numbers prompts (the rank of the dataset's id)."""
    by_id = {i.prompt.id: i.prompt.text for i in items}
    return [by_id[p] for p in sorted(by_id)]


def _rowid_ranks(store: Store, run_id: str) -> list[str]:
    """Prompt text by rank, as `trusteval tables` numbers prompts (the rank of the stored prompt's rowid)."""
    rows = store.conn.execute(
        "SELECT DISTINCT p.rowid, p.text FROM run_items i JOIN prompts p ON p.dataset = i.dataset"
        " AND p.prompt_id = i.prompt_id WHERE i.run_id = ? ORDER BY p.rowid",
        (run_id,),
    ).fetchall()
    return [text for _, text in rows]


@pytest.fixture
def small_chunks(monkeypatch):
    """Every chunked read of a run's items reads CHUNK rows at a time."""
    from trusteval.store import views as store_views

    monkeypatch.setattr(store_views, "READ_CHUNK", CHUNK)
    for method in (StoreReads.iter_run_items, StoreReads.iter_run_pairs):
        monkeypatch.setattr(method, "__defaults__", (CHUNK,))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_every_read_of_a_random_run_classifies_like_the_reference(tmp_path, small_chunks, seed):
    rng = random.Random(seed)
    store = Store.open(tmp_path / "ws")
    try:
        runs: dict[str, tuple] = {}
        answers: dict[str, str | None] = {}
        for run_id in ("r1", "r2"):  # two runs share the store (some prompts, answers and scores)
            source, policy = rng.choice(["scorer", "label"]), rng.choice(["keep", "exclude"])
            runs[run_id] = (_build_run(rng, store, run_id, source, policy, answers), source, policy)
        _store_scores(rng, store, [i for items, *_ in runs.values() for i in items])
        stored = {run.run_id: run for run in find_runs(store)}
        bulk = BulkLookup(store)
        for run_id, (items, source, policy) in runs.items():
            assert len(items) > 3 * CHUNK
            want = _reference(store, items, source, policy)
            book = {task: StoredScores(store, scorer) for task, scorer in SCORERS.items()}
            plain = {task: dict(store.scores(scorer, store.scored_by(scorer))) for task, scorer in SCORERS.items()}
            by_sql = collect_pairs(RunItems(store, run_id), book, THRESHOLD, source, policy)
            by_items = collect_pairs(list(RunItems(store, run_id)), book, THRESHOLD, source, policy)
            by_plain = collect_pairs(list(RunItems(store, run_id)), plain, THRESHOLD, source, policy)
            _assert_identical(by_sql, by_items)
            _assert_identical(by_sql, by_plain)
            _assert_like_reference(by_sql, want, _source_id_ranks(items), "first seen")
            run = stored[run_id]
            indexed, classes = read_pairs(store, run, run.spec.models)
            scanned, scanned_classes = read_pairs(store, run, run.spec.models, bulk)
            assert classes == scanned_classes == {i.prompt.category or "all" for i in items}
            assert list(indexed) == list(scanned) == run.spec.models
            for found in (indexed, scanned):
                _assert_like_reference(found, want, _rowid_ranks(store, run_id), "fixed")
    finally:
        store.close()
