"""A stored run's toxicity pairs read in one SQL pass (benchmarks/toxicity_pairs.py) equal those built from
RunItems in Python (trusteval_toxicity.collect_pairs over a list), on a run with every kind of left-out item."""

from __future__ import annotations

import numpy as np
import pytest

from trusteval.benchmarks import trusteval_toxicity as toxicity
from trusteval.benchmarks.trusteval_toxicity import PROMPT_TASK, RESPONSE_TASK, collect_pairs, summarise, summary_json
from trusteval.records import Generation, GenerationParams, Prompt, Request, Score, text_subject
from trusteval.store import Store
from trusteval.store.views import RunItems, StoredScores

SCORER = "tox"
CLASSES = ("race", "gender", None, "")
# (response or None for a failed generation, response score: value, "unparsed" or None for none)
ANSWERS = [
    ("你们都是蠢货", 0.9),
    ("说得很好，谢谢", 0.1),
    (None, None),  # generation failed
    ("   ", None),  # empty
    ("\u3000\n", None),  # empty: ideographic space
    ("You are all idiots", 0.8),  # English in a Chinese run: off-language
    ("这是一个回答", "unparsed"),  # the scorer gave no value
    ("没有分数的回答", None),  # never scored
    ("12345 !!!", 0.2),  # no letter: cannot be told, in-language
    ("好的 OK", 0.7),
]


def _run(store: Store, models=("model-a", "model-b"), seeds=(42, 43)) -> None:
    prompts = [
        Prompt(id=f"p{i:02d}", dataset="d", text=f"第{i}句话", lang="zh", label=i % 2, category=CLASSES[i % 4])
        for i in range(20)
    ]
    items, generations, scores = [], [], []
    for m, model in enumerate(models):
        for i, prompt in enumerate(prompts):
            for s, seed in enumerate(seeds):
                request = Request.build(model, (("user", prompt.text),), GenerationParams(), seed)
                items.append((request, model, prompt, {}))
                response, value = ANSWERS[(i + 3 * m + s) % len(ANSWERS)]
                if response is None:
                    generations.append(Generation.failure(request.key, "boom"))
                    continue
                text = f"{response}{i}" if response.strip() else response
                generations.append(Generation(request.key, text))
                if value == "unparsed":
                    scores.append(Score(text_subject(text), SCORER, None, "unparsed"))
                elif value is not None:
                    scores.append(Score(text_subject(text), SCORER, value + i / 100))
    for i, prompt in enumerate(prompts):
        if i % 7:  # some prompts have no score
            scores.append(Score(text_subject(prompt.text), SCORER, 0.3 + (i % 5) / 10))
    store.begin_run("r1", benchmark="trusteval-toxicity", dataset="d", spec={}, prompts=prompts, items=items)
    store.add_generations(generations)
    store.add_scores(scores)


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "ws")
    _run(s)
    yield s
    s.close()


def _both(store: Store, prompt_source: str, policy: str):
    items = RunItems(store, "r1")
    book = {RESPONSE_TASK: StoredScores(store, SCORER), PROMPT_TASK: StoredScores(store, SCORER)}
    by_sql = collect_pairs(items, book, 0.5, prompt_source, policy)
    by_items = collect_pairs(list(items), book, 0.5, prompt_source, policy)  # a list: the RunItem pass
    return by_sql, by_items


@pytest.mark.parametrize("prompt_source", ["scorer", "label"])
@pytest.mark.parametrize("policy", ["keep", "exclude"])
def test_sql_pairs_equal_the_run_item_pairs(store, monkeypatch, prompt_source, policy):
    by_sql, by_items = _both(store, prompt_source, policy)
    assert list(by_sql) == list(by_items) == ["model-a", "model-b"]
    for model, want in by_items.items():
        got = by_sql[model]
        assert list(got.skipped.items()) == list(want.skipped.items())  # same counts, same key order
        assert list(got.off_language.items()) == list(want.off_language.items())
        assert list(got.checked.items()) == list(want.checked.items())
        assert got.lang == want.lang == "zh"
        assert got.categories.tolist() == want.categories.tolist()
        assert got.pairs.seeds.tolist() == want.pairs.seeds.tolist()
        assert got.pairs.prompt_toxic.tolist() == want.pairs.prompt_toxic.tolist()
        assert got.pairs.response_toxic.tolist() == want.pairs.response_toxic.tolist()
        # prompt ids are ranks of the ids: they group and sort as the ids do
        assert np.unique(got.pairs.prompt_ids, return_inverse=True)[1].tolist() == (
            np.unique(want.pairs.prompt_ids, return_inverse=True)[1].tolist()
        )
        assert summary_json(got, *summarise(got, 50), policy) == summary_json(want, *summarise(want, 50), policy)
    # model-a's 40 items: 4 failed, 8 empty, 4 unparsed + 4 unscored responses, 4 in English (off-language)
    left_out = {"generation failed": 4, "empty response": 8, "response not scored": 8}
    if policy == "exclude":
        left_out["off-language response"] = 4
    if prompt_source == "scorer":  # prompts p00, p07, p14 have no score
        left_out["prompt not scored"] = 3 if policy == "exclude" else 4
    assert dict(by_sql["model-a"].skipped) == left_out
    assert len(by_sql["model-a"].pairs) == 40 - sum(left_out.values())
    assert dict(by_sql["model-a"].off_language) == {"race": 1, "gender": 1, "all": 2}


def test_a_stored_run_is_not_read_as_run_items(store, monkeypatch):
    def no_items(*args, **kwargs):
        raise AssertionError("read RunItems")

    monkeypatch.setattr(Store, "iter_run_items", no_items)
    monkeypatch.setattr(toxicity, "_item_rows", no_items)
    by_sql = collect_pairs(RunItems(store, "r1"), {RESPONSE_TASK: StoredScores(store, SCORER)}, 0.5, "label", "keep")
    assert sum(len(p.pairs) for p in by_sql.values()) == 2 * 40 - sum(sum(p.skipped.values()) for p in by_sql.values())


def test_an_empty_run_has_no_pairs(tmp_path):
    store = Store.open(tmp_path / "ws")
    book = {RESPONSE_TASK: StoredScores(store, SCORER), PROMPT_TASK: StoredScores(store, SCORER)}
    assert collect_pairs(RunItems(store, "none"), book, 0.5, "scorer", "keep") == {}
    store.close()


def test_trustgpt_answers_of_a_stored_run_read_scores_per_chunk_not_per_subject(store, monkeypatch):
    from trusteval.benchmarks import trustgpt_common as common

    items = list(RunItems(store, "r1"))
    pairs = [text_subject(i.prompt.text, i.response) for i in items if i.response is not None]
    store.add_scores([Score(subject, "refusal", float(n % 3 == 0)) for n, subject in enumerate(pairs)])
    tasks = {common.RESPONSE_TOXICITY: SCORER, common.REFUSAL: "refusal"}
    plain = {task: dict(store.scores(scorer, StoredScores(store, scorer))) for task, scorer in tasks.items()}
    need = (common.REFUSAL, common.RESPONSE_TOXICITY)
    want = common.collect_answers(items, plain, need=need, pair_refusal=True)

    def one_by_one(*args):
        raise AssertionError("a score looked up per subject")

    monkeypatch.setattr(Store, "score", one_by_one)
    views = {task: StoredScores(store, scorer) for task, scorer in tasks.items()}
    got = common.collect_answers(items, views, need=need, pair_refusal=True)
    assert got == want
    assert sum(len(a) for a in got[0].values()) == 46  # refusals (every third answer) need no toxicity
    assert dict(got[1]["model-a"]) == {
        "generation failed": 4,
        "empty response": 8,
        "toxicity not scored": 2,
        "toxicity not scored (unparsed)": 2,
    }


def test_avoidance_judgements_of_a_stored_run_read_verdicts_per_chunk_not_per_pair(store, monkeypatch):
    from trusteval.benchmarks.trusteval_avoidance import collect_judgements

    items = list(RunItems(store, "r1"))
    pairs = [text_subject(i.prompt.text, i.response) for i in items if i.response is not None]
    verdicts = [Score(s, "judge", float(n % 2), label="avoids" if n % 2 else "complies") for n, s in enumerate(pairs)]
    store.add_scores([*verdicts[:30], Score(pairs[30], "judge", None, "unparsed")])  # the rest not judged yet
    want = collect_judgements(items, dict(store.scores("judge", pairs)))

    def one_by_one(*args):
        raise AssertionError("a verdict looked up per pair")

    monkeypatch.setattr(Store, "score", one_by_one)
    got = collect_judgements(items, StoredScores(store, "judge"))
    assert list(got) == list(want) == ["model-a", "model-b"]
    for model, judgements in want.items():
        assert got[model].statuses.tolist() == judgements.statuses.tolist()
        assert np.array_equal(got[model].values, judgements.values, equal_nan=True)
    statuses = got["model-a"].statuses.tolist()  # its 36 answers are the first 36 pairs: 30 judged, 1 unparsed
    assert [statuses.count(s) for s in ("ok", "unparsed", "missing", "no response")] == [30, 1, 5, 4]


# (key, model, seed, prompt id, class, label is 1, language, script code, response ok value, prompt ok value):
# model m meets the reasons in the reverse of REASONS order; 0.0 is an English script in a Chinese run.
HAND_ROWS = [
    ("k0", "n", 0, "p1", "race", False, "zh", None, None, 0.2),  # generation failed
    ("k1", "m", 0, "p2", "race", True, "zh", 0.9, 0.7, None),  # prompt not scored
    ("k2", "m", 0, "p1", "race", False, "zh", 0.9, None, 0.2),  # response not scored
    ("k3", "m", 1, "p2", "gender", True, "zh", -1.0, None, None),  # empty response
    ("k4", "m", 1, "p1", "race", False, "zh", None, None, 0.2),  # generation failed
    ("k5", "m", 0, "p3", "gender", True, "zh", 0.0, 0.8, 0.6),  # off-language: a pair unless excluded
    ("k6", "m", 1, "p3", "race", False, "zh", 0.95, 0.1, 0.9),  # a pair
]


@pytest.mark.parametrize("policy", ["keep", "exclude"])
def test_one_classification_keys_the_left_out_counts_in_either_order(policy):
    from trusteval.benchmarks.toxicity_pairs import PairColumns, classify

    columns = PairColumns.from_rows([HAND_ROWS[:3], HAND_ROWS[3:]])  # two chunks
    assert columns.models == ("n", "m") and columns.prompt.tolist() == [0, 1, 0, 1, 0, 2, 2]  # ranks of the ids
    first_seen = classify(columns, 0.5, "scorer", policy, "first seen")
    fixed = classify(columns, 0.5, "scorer", policy, "fixed")
    off = ["off-language response"] if policy == "exclude" else []
    assert list(first_seen["m"].skipped) == ["prompt not scored", "response not scored", "empty response",
                                             "generation failed", *off]  # fmt: skip
    assert list(fixed["m"].skipped) == ["generation failed", "empty response", *off, "response not scored",
                                        "prompt not scored"]  # fmt: skip
    assert fixed["m"].skipped == first_seen["m"].skipped == dict.fromkeys(first_seen["m"].skipped, 1)
    assert list(first_seen) == list(fixed) == ["n", "m"] and dict(fixed["n"].skipped) == {"generation failed": 1}
    for found in (first_seen["m"], fixed["m"]):
        kept = slice(1, None) if policy == "exclude" else slice(None)
        assert found.pairs.prompt_ids.tolist() == [2, 2][kept] and found.pairs.seeds.tolist() == [0, 1][kept]
        assert found.pairs.prompt_toxic.tolist() == [True, True][kept]
        assert found.pairs.response_toxic.tolist() == [True, False][kept]
        assert found.categories.tolist() == ["gender", "race"][kept]
        assert dict(found.off_language) == {"gender": 1} and dict(found.checked) == {"race": 3, "gender": 1}
        assert found.lang == "zh"
    by_label = classify(columns, 0.5, "label", "keep", "first seen")["m"]  # k1's prompt needs no score now
    assert list(by_label.skipped) == ["response not scored", "empty response", "generation failed"]
    assert by_label.pairs.prompt_toxic.tolist() == [True, True, False]
    assert by_label.pairs.response_toxic.tolist() == [True, True, False]
