"""The hf backend on tiny random Llama and GPT-2 models built offline (tests/fixtures/tiny_models.py)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from trusteval.errors import BackendError, UsageError
from trusteval.models import Backend, BackendSettings, ModelSpec, load_backend
from trusteval.models.hf import PLAIN_CHAT_FORMAT, TEMPLATE_CHAT_FORMAT, RowPlan, RowSampler
from trusteval.records import Generation, GenerationParams, Request

pytestmark = [
    pytest.mark.slow,  # a real model or a trained detector in most tests (seconds each)
    pytest.mark.skipif(
        find_spec("torch") is None or find_spec("transformers") is None,
        reason="the hf backend needs torch and transformers (pip install torch 'trusteval[hf]')",
    ),
]

SAMPLED = GenerationParams(temperature=1.0, top_p=0.9, max_new_tokens=24)
GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_new_tokens=12)


def load(folder: Path, options: str = "", settings: BackendSettings | None = None):
    return load_backend(ModelSpec.parse(f"hf:{folder}{options}"), settings or BackendSettings())


def ask(text: str, params: GenerationParams = SAMPLED, seed: int = 42) -> Request:
    return Request.build("hf:tiny", (("user", text),), params, seed)


def generate(backend, requests: list[Request]) -> list[Generation]:
    return asyncio.run(backend.generate(requests))


def record_generate_calls(backend, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Wrap the model's generate() so a test can see the tensors the backend passed to it."""
    calls: list[dict] = []
    real = backend.model.generate

    def spy(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(backend.model, "generate", spy)
    return calls


@pytest.fixture(scope="module", params=["tiny_llama_dir", "tiny_gpt2_dir"])
def backend(request: pytest.FixtureRequest):
    return load(request.getfixturevalue(request.param))


def test_satisfies_the_backend_protocol(backend) -> None:
    assert isinstance(backend, Backend)
    assert backend.batch_size == 16
    assert backend.max_concurrency == 1
    described = backend.describe()
    assert described["backend"] == "hf"
    assert described["chat_format"] == TEMPLATE_CHAT_FORMAT
    assert described["dtype"] == "float32"
    assert described["device"] == "cpu"
    assert described["trust_remote_code"] is False


def test_batch_answers_every_request_in_order(backend) -> None:
    requests = [ask(f"question {i}: " + "你好 hello " * i) for i in range(5)]
    generations = generate(backend, requests)
    assert [g.key for g in generations] == [r.key for r in requests]
    for generation in generations:
        assert generation.ok, generation.error
        assert isinstance(generation.text, str)
        assert generation.finish_reason in {"stop", "length"}
        assert generation.prompt_tokens > 0
        assert 1 <= generation.completion_tokens <= SAMPLED.max_new_tokens
        assert generation.latency_s > 0
    prompt_tokens = [g.prompt_tokens for g in generations]
    assert prompt_tokens == sorted(prompt_tokens) and len(set(prompt_tokens)) == 5


def test_pads_on_the_left(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = record_generate_calls(backend, monkeypatch)
    generate(backend, [ask("hi"), ask("a much longer question about the weather " * 3)])
    input_ids, mask = calls[0]["input_ids"], calls[0]["attention_mask"]
    pad = backend.tokenizer.pad_token_id
    assert mask[:, -1].tolist() == [1, 1]  # every prompt ends in the last column
    assert mask[0, 0].item() == 0 and input_ids[0, 0].item() == pad
    assert mask[1].sum().item() == input_ids.shape[1]


def test_max_new_tokens_is_respected_per_request(backend) -> None:
    limits = [1, 3, 7]
    requests = [ask("count", GenerationParams(1.0, 1.0, limit), seed=1) for limit in limits]
    for limit, generation in zip(limits, generate(backend, requests), strict=True):
        assert generation.completion_tokens <= limit
        if generation.finish_reason == "length":
            assert generation.completion_tokens == limit


def test_each_row_of_a_batch_gets_its_own_latency(backend) -> None:
    short = GenerationParams(temperature=1.0, top_p=0.9, max_new_tokens=1)
    long = GenerationParams(temperature=0.0, top_p=1.0, max_new_tokens=48)
    generations = generate(backend, [ask("a", short), ask("b", long)])
    assert generations[0].completion_tokens <= 2 and generations[1].completion_tokens > 8
    # The one-token row ends at its first step; the batch (and the long row) goes on for many more.
    assert generations[0].latency_s < generations[1].latency_s / 2


def test_same_seed_gives_the_same_text_alone_and_in_a_mixed_batch(backend) -> None:
    target = ask("Say something benign when helping a friend move house.")
    others = [
        ask("hi", seed=7),
        ask("请不要说冒犯别人的话，尊重每一个人。" * 3, seed=8),
        ask("greedy one", GREEDY, seed=9),
        ask("short limit", GenerationParams(0.7, 0.9, 5), seed=10),
    ]
    alone = generate(backend, [target])[0]
    mixed = generate(backend, [others[0], others[1], target, others[2], others[3]])[2]
    reversed_batch = generate(backend, [target, *others[::-1]])[0]
    assert alone.ok and alone.completion_tokens > 5
    assert mixed.text == alone.text == reversed_batch.text
    assert mixed.completion_tokens == alone.completion_tokens


def test_every_request_of_a_batch_matches_its_answer_alone(backend) -> None:
    prompts = ["hi", "请不要说冒犯别人的话", "Say something toxic when lying. " * 4, "今天天气很好"]
    params = [GenerationParams(1.0, 0.9, 32), GenerationParams(0.7, 1.0, 32), GenerationParams(1.3, 0.5, 32)]
    requests = [ask(p, params[i % 3], seed=i) for i, p in enumerate(prompts * 3)]
    batched = generate(backend, requests)
    alone = [generate(backend, [request])[0] for request in requests]
    assert all(g.ok for g in batched)
    assert [g.text for g in batched] == [g.text for g in alone]


def test_different_seeds_give_different_texts(backend) -> None:
    generations = generate(backend, [ask("tell me a story", seed=s) for s in range(4)])
    assert all(g.ok for g in generations)
    assert len({g.text for g in generations}) == 4


def test_temperature_zero_is_greedy_and_ignores_the_seed(backend) -> None:
    first = generate(backend, [ask("what is fair?", GREEDY, seed=s) for s in (1, 2, 3)])
    again = generate(backend, [ask("what is fair?", GREEDY, seed=1)])
    assert all(g.ok for g in [*first, *again])
    assert len({g.text for g in first}) == 1
    assert again[0].text == first[0].text
    sampled = generate(backend, [ask("what is fair?", GenerationParams(1.0, 1.0, 12), seed=1)])
    assert sampled[0].text != first[0].text


def sample_tokens(plan: RowPlan, logits, steps: int) -> list[int]:
    """Run a one-row RowSampler for `steps` steps on fixed logits; return the token it forced each step."""
    import torch

    sampler = RowSampler([plan], prompt_width=3, eos_id=0, device="cpu")
    picks = []
    for step in range(steps):
        forced = sampler(torch.zeros((1, 3 + step), dtype=torch.long), logits.clone().unsqueeze(0))
        assert (forced[0] == 0).sum().item() == 1  # every other token is masked to -inf
        picks.append(int(forced[0].argmax()))
    return picks


def test_sampler_draws_from_the_temperature_and_top_p_distribution() -> None:
    import numpy as np
    import torch

    logits = torch.log(torch.tensor([0.05, 0.15, 0.3, 0.5]))
    counts = np.bincount(sample_tokens(RowPlan(1.0, 1.0, 10_000, seed=1), logits, 4000), minlength=4)
    assert counts / 4000 == pytest.approx([0.05, 0.15, 0.3, 0.5], abs=0.025)
    hot = np.exp(np.log([0.05, 0.15, 0.3, 0.5]) / 2.0)
    counts = np.bincount(sample_tokens(RowPlan(2.0, 1.0, 10_000, seed=2), logits, 4000), minlength=4)
    assert counts / 4000 == pytest.approx(hot / hot.sum(), abs=0.025)
    counts = np.bincount(sample_tokens(RowPlan(1.0, 0.7, 10_000, seed=3), logits, 4000), minlength=4)
    assert counts[:2].sum() == 0  # the nucleus of mass 0.7 is {0.5, 0.3}, renormalised to 0.625 / 0.375
    assert counts[2:] / 4000 == pytest.approx([0.375, 0.625], abs=0.025)


def test_sampler_forces_eos_past_the_row_limit_and_is_greedy_at_zero() -> None:
    import torch

    logits = torch.tensor([0.0, 1.0, 3.0, 2.0])
    assert sample_tokens(RowPlan(0.0, 1.0, 3, seed=1), logits, 5) == [2, 2, 2, 0, 0]


def test_sampler_ignores_rounding_noise_between_near_equal_tokens() -> None:
    """Padding changes logits by ~1e-7; near-equal tokens must not swap the pick (they would in sorted order)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(512, generator=generator) * 1e-4
    noisy = logits + torch.randn(512, generator=generator) * 1e-7
    plan = RowPlan(1.0, 0.9, 10_000, seed=5)
    assert sample_tokens(plan, logits, 300) == sample_tokens(plan, noisy, 300)


def test_stops_at_eos_and_drops_it(tiny_gpt2_eos_dir: Path) -> None:
    backend = load(tiny_gpt2_eos_dir)
    greedy = generate(backend, [ask("anything", GREEDY)])[0]
    assert (greedy.text, greedy.finish_reason, greedy.completion_tokens) == ("", "stop", 1)
    sampled = generate(backend, [ask("anything", GenerationParams(1.0, 1.0, 40), seed=s) for s in range(16)])
    stopped = [g for g in sampled if g.finish_reason == "stop"]
    assert any(g.completion_tokens > 1 and g.text for g in stopped)
    for generation in sampled:
        assert "<|eos|>" not in generation.text
        assert generation.completion_tokens == 40 or generation.finish_reason == "stop"


def test_a_prompt_longer_than_the_context_fails_alone(tiny_gpt2_dir: Path) -> None:
    backend = load(tiny_gpt2_dir)  # n_positions = 256
    too_long = ask("the quick brown fox jumps over the lazy dog " * 60)
    generations = generate(backend, [ask("hi"), too_long, ask("bye")])
    assert [g.ok for g in generations] == [True, False, True]
    assert generations[1].key == too_long.key
    assert "context is 256" in generations[1].error


def test_an_exception_in_generate_becomes_failed_generations(
    tiny_llama_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = load(tiny_llama_dir)

    def broken(**kwargs):
        raise RuntimeError("out of memory (simulated)")

    monkeypatch.setattr(backend.model, "generate", broken)
    requests = [ask("one"), ask("two")]
    generations = generate(backend, requests)
    assert [g.key for g in generations] == [r.key for r in requests]
    assert all(not g.ok and "out of memory (simulated)" in g.error for g in generations)


def test_plain_prompt_format_without_a_chat_template(
    tiny_gpt2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = shutil.copytree(tiny_gpt2_dir, tmp_path / "no-template")
    (folder / "chat_template.jinja").unlink()
    backend = load(folder)
    assert backend.describe()["chat_format"] == PLAIN_CHAT_FORMAT
    calls = record_generate_calls(backend, monkeypatch)
    chat = (("system", "be kind"), ("user", "hi"))
    assert generate(backend, [Request.build("hf:tiny", chat, GREEDY, 1)])[0].ok
    prompt = backend.tokenizer.decode(calls[0]["input_ids"][0])
    assert prompt == "system: be kind\nuser: hi\nassistant:"


def test_bfloat16_loads_and_generates(tiny_llama_dir: Path) -> None:
    import torch

    backend = load(tiny_llama_dir, "?dtype=bfloat16&batch_size=4")
    assert next(backend.model.parameters()).dtype == torch.bfloat16
    assert backend.batch_size == 4
    assert generate(backend, [ask("hi", GREEDY)])[0].ok


def test_missing_path_is_a_clear_backend_error(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"no model folder at .*does-not-exist.*does not exist"):
        load(tmp_path / "does-not-exist")


def test_folder_without_config_is_not_a_model_folder(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"not a model folder \(no config.json\)"):
        load(tmp_path)


def test_unknown_hub_id_offline_says_where_it_looked() -> None:
    with pytest.raises(BackendError, match="looked up on the Hugging Face hub"):
        load("nobody-here/no-such-model-xyz")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("?dtyp=float32", "unknown option"),
        ("?dtype=float8", "option 'dtype' must be one of float32, bfloat16, float16, not 'float8'"),
        ("?batch_size=0", "option 'batch_size' must be a whole number >= 1, not '0'"),
    ],
)
def test_bad_options_are_usage_errors(tiny_llama_dir: Path, options: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load(tiny_llama_dir, options)


@pytest.fixture
def remote_code_model(tiny_llama_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A model folder whose config maps to custom code that, when imported, writes a marker file."""
    import transformers.dynamic_module_utils as dynamic_modules

    monkeypatch.setattr(dynamic_modules, "HF_MODULES_CACHE", str(tmp_path / "modules"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = shutil.copytree(tiny_llama_dir, tmp_path / "remote-code")
    marker = tmp_path / "custom-code-ran"
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "trusteval_marker"
    config["auto_map"] = {"AutoConfig": "marker.MarkerConfig", "AutoModelForCausalLM": "marker.MarkerModel"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "marker.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('ran')\n"
        "from transformers import LlamaConfig, LlamaForCausalLM\n"
        "class MarkerConfig(LlamaConfig):\n    model_type = 'trusteval_marker'\n"
        "class MarkerModel(LlamaForCausalLM):\n    config_class = MarkerConfig\n"
    )
    return folder, marker


def test_remote_code_is_refused_by_default(remote_code_model) -> None:
    folder, marker = remote_code_model
    with pytest.raises(BackendError, match="trust_remote_code=1"):
        load(folder)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("options", "settings"),
    [("?trust_remote_code=1", BackendSettings()), ("", BackendSettings(trust_remote_code=True))],
)
def test_remote_code_runs_only_when_trusted(remote_code_model, options: str, settings) -> None:
    folder, marker = remote_code_model
    backend = load(folder, options, settings)
    assert marker.read_text() == "ran"
    assert backend.describe()["trust_remote_code"] is True
    assert backend.spec.identity == f"hf:{folder}"  # trust is operational: it does not change the identity
