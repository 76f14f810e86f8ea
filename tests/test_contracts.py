"""Contract tests over every registered plugin, the way garak tests every probe.

Each backend, scorer, dataset and benchmark in the registries is built offline and put through the same small
checks: it describes itself, refuses an unknown option (with a did-you-mean where a known option is close),
handles an empty input, and what it produces round-trips through the store unchanged. A part that cannot be
built offline is skipped with the reason. A new registry entry without a case here fails
`test_every_registered_part_has_a_contract_case`, so no plugin goes unchecked.
"""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trusteval.benchmarks import BENCHMARKS
from trusteval.config import RunSpec
from trusteval.data import DATASETS, LoadedDataset, load_dataset
from trusteval.data.sources import DataContext
from trusteval.errors import DataError, UsageError
from trusteval.models import BACKENDS, BackendSettings, ModelSpec, load_backend
from trusteval.pipeline.run import record_run
from trusteval.records import Generation, GenerationParams, Request, Score, text_subject
from trusteval.scorers import SCORERS, ScorerContext, load_scorer
from trusteval.store import Store

PARAMS = GenerationParams(temperature=0.0, top_p=1.0, max_new_tokens=4)
SAY_HI = (("user", "Say hi."),)


@pytest.fixture
def store(tmp_path: Path):
    opened = Store.open(tmp_path / "store")
    yield opened
    opened.close()


def _data(data_dir: Path) -> DataContext:
    return DataContext(data_dir=data_dir)


# -- backends -----------------------------------------------------------------------------------------------


def _replay_file(folder: Path) -> str:
    answers = folder / "answers.jsonl"
    answers.write_text(json.dumps({"prompt": "Say hi.", "response": "hi"}) + "\n", encoding="utf-8")
    return f"replay:{answers}"


BACKEND_CASES: dict[str, tuple[Callable[[Any], str], str, str]] = {
    # name: (spec maker from a request fixture, a typo of a known option, that option)
    "replay": (lambda r: _replay_file(r.getfixturevalue("tmp_path")), "prompt_feld", "prompt_field"),
    "hf": (lambda r: f"hf:{r.getfixturevalue('tiny_gpt2_dir')}", "dtyp", "dtype"),
    "llamacpp": (lambda r: "llamacpp:smollm2?n_threads=2&n_ctx=512", "n_ctxx", "n_ctx"),
    "openai": (lambda r: f"openai:{r.getfixturevalue('llama_server').model}?base_url="
               f"{r.getfixturevalue('llama_server').base_url}&api_key_env=", "timout", "timeout"),
}  # fmt: skip


def _with_option(raw: str, key: str) -> str:
    return f"{raw}{'&' if '?' in raw else '?'}{key}=1"


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS.names())
def test_backend_contract(name: str, request: pytest.FixtureRequest, store: Store) -> None:
    make_spec, typo, known = BACKEND_CASES[name]
    raw = make_spec(request)
    settings = BackendSettings(concurrency=1, timeout_s=60, max_retries=0)
    with pytest.raises(UsageError, match=f"Did you mean '{known}'"):
        load_backend(ModelSpec.parse(_with_option(raw, typo)), settings)
    spec = ModelSpec.parse(raw)
    req = Request.build(spec.identity, SAY_HI, PARAMS, seed=42)

    async def exercise() -> tuple[dict[str, Any], list[Generation], list[Generation]]:
        backend = load_backend(spec, settings)  # in the loop that uses it, as the pipeline does
        try:
            return backend.describe(), await backend.generate([]), await backend.generate([req])
        finally:
            await backend.aclose()

    described, empty, [generation] = asyncio.run(exercise())
    assert described["backend"] == name and json.dumps(described)
    assert empty == []
    assert generation.key == req.key and generation.error is None and isinstance(generation.text, str)
    store.add_generations([generation])
    assert store.stored_generation_keys([req.key]) == {req.key}
    row = store.conn.execute("SELECT text FROM generations WHERE key=?", (req.key,)).fetchone()
    assert row["text"] == generation.text


# -- scorers ------------------------------------------------------------------------------------------------

SCORER_CASES: dict[str, tuple[Callable[[Any], str], str | None, str | None]] = {
    # name: (spec maker, a typo of a known option, that option); None when the scorer takes no option
    "keywords-exact": (lambda r: "keywords-exact", None, None),
    "keywords-folded": (lambda r: "keywords-folded", None, None),
    "keywords-strict": (lambda r: "keywords-strict", None, None),
    "en-tfidf": (lambda r: "en-tfidf", "treshold", "threshold"),
    "cold-tfidf": (lambda r: "cold-tfidf", "treshold", "threshold"),
    "hf": (lambda r: f"hf:{r.getfixturevalue('tiny_bert_classifier_dir')}?lang=en", "lnag", "lang"),
    "perspective": (lambda r: "perspective", "api_key_envv", "api_key_env"),
}
NEEDS_NETWORK = {"perspective": "scores through the Perspective API (network and a key); only the offline checks run"}
TEXTS = ["I'm sorry, but I cannot help with that.", "You are a wonderful person."]


@pytest.mark.slow
@pytest.mark.parametrize("name", SCORERS.names())
def test_scorer_contract(name: str, request: pytest.FixtureRequest, store: Store, data_dir: Path, cache_dir: Path):
    make_spec, typo, known = SCORER_CASES[name]
    raw = make_spec(request)
    context = ScorerContext(env={"PERSPECTIVE_API_KEY": "offline-test-key"}, data_dir=data_dir, cache_dir=cache_dir)
    with pytest.raises(UsageError, match=f"Did you mean '{known}'" if known else "unknown option"):
        load_scorer(_with_option(raw, typo or "bogus"), context)
    scorer = load_scorer(raw, context)
    described = scorer.describe()
    assert isinstance(described, dict) and json.dumps(described) and scorer.id
    assert scorer.score([]) == []
    if name in NEEDS_NETWORK:
        pytest.skip(NEEDS_NETWORK[name])
    outcomes = scorer.score(TEXTS)
    assert len(outcomes) == len(TEXTS)
    pairs = zip(TEXTS, outcomes, strict=True)
    scores = [Score(text_subject(t), scorer.id, o.value, o.status, o.label, o.detail) for t, o in pairs]
    store.register_scorer(scorer.id, described)
    store.add_scores(scores)
    assert store.scores(scorer.id, [s.subject for s in scores]) == {s.subject: s for s in scores}
    assert store.scorer_info(scorer.id) == json.loads(json.dumps(described))


# -- datasets -----------------------------------------------------------------------------------------------


def _csv(folder: Path, rows: list[list[str]]) -> Path:
    path = folder / "data.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


DATASET_CASES: dict[str, tuple[Callable[[Path], str], str, str, Callable[[Path], str] | None]] = {
    # name: (spec maker, typo, known option, maker of a spec with an empty input or None if the set is fixed)
    "cold": (lambda d: "cold", "splt", "split", None),
    "hatexplain": (lambda d: "hatexplain", "splt", "split", None),
    "toxicspans": (lambda d: "toxicspans", "splt", "split", None),
    "hatexplain-en": (lambda d: "hatexplain-en", "splt", "split", None),
    "toxicspans-en": (lambda d: "toxicspans-en", "splt", "split", None),
    "tiseval-hatexplain": (lambda d: "tiseval-hatexplain", "splt", "split", None),
    "tiseval-toxicspans": (lambda d: "tiseval-toxicspans", "splt", "split", None),
    "social-chem-101": (
        lambda d: "social-chem-101",
        "pth",
        "path",
        lambda d: f"social-chem-101?path={_copy_header(d)}",
    ),
    "hf": (lambda d: _saved_hf(d), "splt", "split", None),
    "file": (
        lambda d: f"file:{_csv(d, [['text', 'label'], ['hello', '0'], ['you idiot', '1']])}?lang=en",
        "labl",
        "label",
        lambda d: f"file:{_csv(d, [['text', 'label']])}?lang=en",
    ),
}


def _saved_hf(folder: Path) -> str:
    from datasets import Dataset

    saved = folder / "saved"
    Dataset.from_dict({"text": ["hello", "you idiot"], "label": [0, 1]}).save_to_disk(str(saved))
    return f"hf:{saved}?lang=en"


def _copy_header(folder: Path) -> Path:
    import os

    mirror = Path(os.environ["TRUSTEVAL_DATA_DIR"]) / "social_chem_101" / "social-chem-101.subset.tsv"
    with mirror.open(encoding="utf-8") as handle:
        header = handle.readline()
    path = folder / "empty.tsv"
    path.write_text(header, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", DATASETS.names())
def test_dataset_contract(name: str, tmp_path: Path, data_dir: Path, store: Store) -> None:
    make_spec, typo, known, make_empty = DATASET_CASES[name]
    raw = make_spec(tmp_path)
    with pytest.raises(UsageError, match=f"Did you mean '{known}'"):
        load_dataset(_with_option(raw, typo), _data(data_dir))
    dataset = load_dataset(raw, _data(data_dir))
    assert isinstance(dataset, LoadedDataset) and dataset.name and dataset.prompts
    assert dataset.sources and all(len(digest) == 64 for digest in dataset.sources.values())
    assert len({(p.dataset, p.id) for p in dataset.prompts}) == len(dataset.prompts), "prompt ids are unique"
    _round_trip_prompts(store, dataset)
    if make_empty is None:
        return
    with pytest.raises((UsageError, DataError), match="has no rows") as error:
        load_dataset(make_empty(tmp_path), _data(data_dir))
    assert str(tmp_path) in str(error.value), "the error names the file"


def _round_trip_prompts(store: Store, dataset: LoadedDataset) -> None:
    # prompts with the same text are one request (docs/data.md), so the round trip takes 50 distinct texts
    first = {p.text: p for p in reversed(dataset.prompts)}
    prompts = [p for p in dataset.prompts if first[p.text] is p][:50]
    spec = RunSpec(benchmark="contract", models=["replay:x"], seeds=[1])
    items = [(Request.build("replay:x", ((("user", p.text),)), PARAMS, 1), "replay:x", p, {}) for p in prompts]
    store.begin_run("run-1", benchmark="contract", dataset=dataset.name, spec=spec.model_dump(), prompts=prompts,
                    items=items)  # fmt: skip
    assert [item.prompt for item in store.run_items("run-1")] == prompts


# -- benchmarks ---------------------------------------------------------------------------------------------

BENCHMARK_CASES: dict[str, tuple[dict[str, Any], str | None, str | None]] = {
    # name: (RunSpec fields that keep the plan small, a typo of a known option, that option)
    "trusteval-toxicity": ({"limit": 3}, None, None),
    "trusteval-bias": ({"limit": 3}, None, None),
    "trusteval-avoidance": ({"per_category": 1}, None, None),
    "trustgpt-toxicity": ({"options": {"norms": "2"}}, "word", "words"),
    "trustgpt-bias": ({"options": {"norms": "2"}}, "grups", "groups"),
    "trustgpt-ava": ({"options": {"norms": "2"}}, "label", "labels"),
    "trustgpt-pva": ({"options": {"norms": "2"}}, "refusl", "refusal"),
}


@pytest.mark.parametrize("name", BENCHMARKS.names())
def test_benchmark_contract(name: str, data_dir: Path, store: Store, tmp_path: Path) -> None:
    fields, typo, known = BENCHMARK_CASES[name]
    answers = tmp_path / "answers.jsonl"  # a replay model's identity includes its file's hash: the file must exist
    answers.write_text('{"prompt": "p", "response": "r"}\n', "utf-8")
    base = {"benchmark": name, "models": [f"replay:{answers}"], "seeds": [42], **fields}
    bad_options = {**base.get("options", {}), typo or "bogus": "1"}
    with pytest.raises(UsageError, match=f"Did you mean '{known}'" if known else f"{name}: unknown option"):
        BENCHMARKS.get(name)(RunSpec(**{**base, "options": bad_options}))
    spec = RunSpec(**base)
    benchmark = BENCHMARKS.get(name)(spec)
    assert benchmark.name == name
    plan = benchmark.plan(_data(data_dir))
    assert plan.items and plan.prompts
    empty = benchmark.results([], {}, {})
    assert isinstance(empty.metrics, dict) and json.dumps(empty.metrics, allow_nan=True)
    record_run(store, spec, plan, [])
    stored = store.run_items(spec.run_id)
    assert [i.request_key for i in stored] == [i.request.key for i in plan.items]
    assert [i.prompt for i in stored] == [i.prompt for i in plan.items]
    assert [i.variant for i in stored] == [i.variant for i in plan.items]


# -- coverage -----------------------------------------------------------------------------------------------


def test_every_registered_part_has_a_contract_case() -> None:
    assert set(BACKENDS.names()) <= set(BACKEND_CASES), "add a BACKEND_CASES entry for the new backend"
    assert set(SCORERS.names()) <= set(SCORER_CASES), "add a SCORER_CASES entry for the new scorer"
    assert set(DATASETS.names()) <= set(DATASET_CASES), "add a DATASET_CASES entry for the new dataset"
    assert set(BENCHMARKS.names()) <= set(BENCHMARK_CASES), "add a BENCHMARK_CASES entry for the new benchmark"
