"""The hf classifier scorer on a tiny random BERT classifier built offline (labels 0 safe, 1 offensive)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from fixtures.tiny_models import build_tiny_bert_classifier
from trusteval.benchmarks.common import text_task
from trusteval.errors import BackendError, UsageError
from trusteval.scorers import ScorerContext, TextScorer, load_scorer
from trusteval.scorers.hf_classifier import CALL_BATCHES, DEFAULT_MODEL, languages_option
from trusteval.specs import Spec

TEXTS = [
    "",
    "你好 hello",
    "It's wrong to lie to your parents.",
    "请不要说冒犯别人的话",
    "the quick brown fox",
    "今天天气很好",
    "这个地区的人都很友好 " * 80,  # longer than the model's 128 positions: truncated
]


def scorer_for(folder: Path, options: str = ""):
    return load_scorer(f"hf:{folder}{options}", ScorerContext())


def values(outcomes) -> list[float]:
    assert all(o.status == "ok" and o.value is not None for o in outcomes)
    return [o.value for o in outcomes]


def reference_logits(folder: Path, texts: list[str], max_length: int = 128) -> np.ndarray:
    """Logits from the model called directly, one text at a time (no padding), as float64."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    rows = []
    with torch.no_grad():
        for text in texts:
            encoded = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
            rows.append(model(**encoded).logits[0].double().numpy())
    return np.array(rows)


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def scorer(tiny_bert_classifier_dir: Path):
    return scorer_for(tiny_bert_classifier_dir)


@pytest.mark.slow
def test_satisfies_the_scorer_protocol(scorer, tiny_bert_classifier_dir: Path) -> None:
    assert isinstance(scorer, TextScorer)
    assert scorer.kind == "toxicity"
    assert scorer.threshold == 0.5
    assert (scorer.model_batch_size, scorer.batch_size) == (32, 32 * CALL_BATCHES)
    assert scorer.languages == frozenset()
    assert scorer.id == f"hf:{tiny_bert_classifier_dir.name}@{scorer.version}#label=1&max_length=128"
    described = scorer.describe()
    assert described["label"] == "1 (offensive)"
    assert described["version"] == scorer.version and len(scorer.version) == 12
    assert (described["threshold"], described["probability"]) == (0.5, "softmax")


@pytest.mark.slow
def test_scores_equal_a_softmax_computed_from_the_model_directly(scorer, tiny_bert_classifier_dir) -> None:
    outcomes = scorer.score(TEXTS)
    expected = softmax(reference_logits(tiny_bert_classifier_dir, TEXTS))[:, 1]
    got = values(outcomes)
    assert got == pytest.approx(expected.tolist(), abs=1e-5)
    assert all(0.0 <= v <= 1.0 for v in got)
    assert max(got) - min(got) > 0.1  # the texts really score differently, so the comparison means something
    assert [o.label for o in outcomes] == ["offensive" if v > 0.5 else "safe" for v in expected]


def test_batching_gives_the_same_scores_as_one_by_one(tiny_bert_classifier_dir: Path) -> None:
    batched = scorer_for(tiny_bert_classifier_dir, "?batch_size=3")
    one_by_one = [values(batched.score([text]))[0] for text in TEXTS]
    assert values(batched.score(TEXTS)) == pytest.approx(one_by_one, abs=1e-5)


@pytest.mark.slow
def test_label_by_name_or_index(scorer, tiny_bert_classifier_dir: Path) -> None:
    offensive = values(scorer.score(TEXTS))
    by_name = scorer_for(tiny_bert_classifier_dir, "?label=offensive")
    by_other_case = scorer_for(tiny_bert_classifier_dir, "?label=Offensive")
    safe = scorer_for(tiny_bert_classifier_dir, "?label=safe")
    assert values(by_name.score(TEXTS)) == pytest.approx(offensive, abs=1e-6)
    assert by_name.id == by_other_case.id == scorer.id
    assert values(safe.score(TEXTS)) == pytest.approx([1 - v for v in offensive], abs=1e-5)
    assert safe.id.endswith("#label=0&max_length=128") and safe.id != scorer.id
    assert values(scorer_for(tiny_bert_classifier_dir, "?label=0").score(TEXTS[:2])) == pytest.approx(
        values(safe.score(TEXTS[:2])), abs=1e-6
    )


@pytest.mark.parametrize("label", ["toxic", "7"])
def test_unknown_label_is_a_usage_error_listing_the_labels(tiny_bert_classifier_dir: Path, label) -> None:
    with pytest.raises(UsageError, match="the labels are 0=safe, 1=offensive"):
        scorer_for(tiny_bert_classifier_dir, f"?label={label}")


@pytest.mark.slow
def test_id_follows_the_weights_not_the_folder(tiny_bert_classifier_dir: Path, tmp_path, scorer) -> None:
    copy = shutil.copytree(tiny_bert_classifier_dir, tmp_path / "copy" / tiny_bert_classifier_dir.name)
    assert scorer_for(copy).id == scorer.id
    retrained = build_tiny_bert_classifier(tmp_path / "retrained", seed=1)
    weights = copy / "model.safetensors"
    assert (retrained / "model.safetensors").stat().st_size == weights.stat().st_size
    shutil.copyfile(retrained / "model.safetensors", weights)  # same names, same sizes, other weights
    changed = scorer_for(copy)
    assert changed.version != scorer.version and changed.id != scorer.id
    assert values(changed.score(TEXTS[:3])) != pytest.approx(values(scorer.score(TEXTS[:3])), abs=1e-3)


def test_multi_label_models_use_a_sigmoid(tiny_bert_classifier_dir: Path, tmp_path: Path) -> None:
    folder = shutil.copytree(tiny_bert_classifier_dir, tmp_path / "multi-label")
    config = json.loads((folder / "config.json").read_text())
    config["problem_type"] = "multi_label_classification"
    (folder / "config.json").write_text(json.dumps(config))
    multi = scorer_for(folder)
    expected = 1 / (1 + np.exp(-reference_logits(tiny_bert_classifier_dir, TEXTS)[:, 1]))
    assert multi.describe()["probability"] == "sigmoid"
    assert values(multi.score(TEXTS)) == pytest.approx(expected.tolist(), abs=1e-5)


def test_options_reach_the_scorer(tiny_bert_classifier_dir: Path) -> None:
    custom = scorer_for(tiny_bert_classifier_dir, "?threshold=0.7&lang=zh,en&max_length=8&batch_size=2")
    assert (custom.threshold, custom.model_batch_size, custom.max_length) == (0.7, 2, 8)
    assert custom.languages == frozenset({"zh", "en"})
    assert custom.id.endswith("#label=1&max_length=8")
    expected = softmax(reference_logits(tiny_bert_classifier_dir, TEXTS[-2:], max_length=8))[:, 1]
    assert values(custom.score(TEXTS[-2:])) == pytest.approx(expected.tolist(), abs=1e-5)


@pytest.mark.slow
def test_a_text_that_cannot_be_scored_fails_alone(scorer) -> None:
    outcomes = scorer.score(["fine", None, "also fine"])  # type: ignore[list-item]
    assert [o.status for o in outcomes] == ["ok", "error", "ok"]
    assert outcomes[1].value is None and scorer.id in outcomes[1].detail


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("?threshold=2", "between 0 and 1"),
        ("?batch_size=0", "whole number >= 1"),
        ("?labl=1", "unknown option"),
        ("?quantize=int4", "option 'quantize' must be"),
        ("?runtime=tensorrt", "option 'runtime' must be"),
    ],
)
def test_bad_options_are_usage_errors(tiny_bert_classifier_dir: Path, options: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        scorer_for(tiny_bert_classifier_dir, options)


def test_default_model_is_roberta_base_cold_for_chinese() -> None:
    pytest.importorskip("transformers", reason="the hf extra is not installed")
    from huggingface_hub import try_to_load_from_cache

    assert languages_option(Spec.parse("hf", bare=True), DEFAULT_MODEL) == frozenset({"zh"})
    assert languages_option(Spec.parse("hf:x?lang=en", bare=True), DEFAULT_MODEL) == frozenset({"en"})
    if isinstance(try_to_load_from_cache(DEFAULT_MODEL, "config.json"), str):
        default = load_scorer("hf", ScorerContext())
        assert default.id.startswith(f"hf:{DEFAULT_MODEL}@") and default.id.endswith("#label=1")
        assert default.languages == frozenset({"zh"})
    else:
        with pytest.raises(BackendError, match="cannot load the config of 'thu-coai/roberta-base-cold'"):
            load_scorer("hf", ScorerContext())


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the hf extra is not installed")
    with pytest.raises(BackendError, match="no model folder at"):
        scorer_for(tmp_path / "nothing-here")


def test_remote_code_message_names_only_what_a_scorer_accepts(tiny_bert_classifier_dir: Path, tmp_path) -> None:
    folder = shutil.copytree(tiny_bert_classifier_dir, tmp_path / "remote-code")
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "trusteval_custom"  # no class of that type in transformers: only the folder's code
    config["auto_map"] = {"AutoConfig": "custom.CustomConfig"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(BackendError) as refused:
        scorer_for(folder)
    assert "trust_remote_code=1" in str(refused.value)
    assert "--trust-remote-code" not in str(refused.value), "scorers take no --trust-remote-code flag"


def padded_and_real_tokens(scorer, calls: list[list[str]]) -> tuple[int, int]:
    """Tokens the model was given (padding included) and real tokens, over every forward pass of `calls`."""
    counts = [0, 0]

    def count(_module, _args, kwargs):
        counts[0] += kwargs["input_ids"].numel()
        counts[1] += int(kwargs["attention_mask"].sum())

    hook = scorer._model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        for texts in calls:
            scorer.score(texts)
    finally:
        hook.remove()
    return counts[0], counts[1]


@pytest.mark.slow
def test_pipeline_calls_carry_enough_texts_to_sort_by_length(tiny_bert_classifier_dir: Path) -> None:
    """The pipeline calls score() with task.batch_size texts at a time (in shuffled order); those calls must
    span many forward passes, or sorting by length cannot cut padding (issue 13: 2.4 padded per real token)."""
    import random

    scorer = scorer_for(tiny_bert_classifier_dir, "?batch_size=4")
    words = ["the", "quick", "brown", "fox", "你好", "hello", "今天", "天气", "很好"]
    rng = random.Random(0)
    texts = [" ".join(rng.choice(words) for _ in range(rng.choice([1, 2, 3, 40, 60, 90]))) for _ in range(64)]
    task = text_task("response", scorer, "response")
    calls = [texts[start : start + task.batch_size] for start in range(0, len(texts), task.batch_size)]
    padded, real = padded_and_real_tokens(scorer, calls)
    assert padded / real < 1.1, f"{padded / real:.2f} padded tokens per real token"
    expected = softmax(reference_logits(tiny_bert_classifier_dir, texts))[:, 1]
    assert [v for call in calls for v in values(scorer.score(call))] == pytest.approx(expected.tolist(), abs=1e-5)


@pytest.mark.slow
def test_int8_scores_are_within_0_01_of_float_and_say_so(scorer, tiny_bert_classifier_dir: Path) -> None:
    int8 = scorer_for(tiny_bert_classifier_dir, "?quantize=int8")
    assert int8.id == scorer.id + "&quantize=int8"
    assert int8.describe()["quantize"] == "int8" and scorer.describe()["quantize"] == "none"
    float_values, int8_values = values(scorer.score(TEXTS)), values(int8.score(TEXTS))
    assert int8_values == pytest.approx(float_values, abs=0.01)
    assert int8_values != pytest.approx(float_values, abs=1e-6)  # really quantized, not the float model
    assert scorer_for(tiny_bert_classifier_dir, "?quantize=none").id == scorer.id


@pytest.mark.slow
def test_fused_cpu_kernels_keep_the_eager_scores(scorer, tiny_bert_classifier_dir: Path) -> None:
    """Issue 13: the float32 CPU path runs the linear layers as oneDNN kernels with bias, GELU and residual
    add fused in (no separate bias copy, GELU or add passes); the scores stay within 1e-5 of the eager model."""
    import torch

    eager = scorer_for(tiny_bert_classifier_dir, "?fuse=0")
    assert eager.id == scorer.id  # the same scores, so the same stored rows
    assert eager.describe()["kernels"] == "eager"
    # 2 layers x 6, pooler, classifier; the padded layout by default (unpad=1 is opt-in, issue 24)
    assert scorer.describe()["kernels"] == "oneDNN fused (14 linear layers)"
    assert not [m for m in scorer._model.modules() if type(m) is torch.nn.Linear]
    assert values(scorer.score(TEXTS)) == pytest.approx(values(eager.score(TEXTS)), abs=1e-5)


@pytest.mark.slow
def test_unpadded_encoder_keeps_the_scores_of_the_eager_transformers_model(scorer, tiny_bert_classifier_dir) -> None:
    """Issue 24: with unpad=1 the fused encoder runs its per-token layers on real tokens only, not on the padding
    of a batch (texts of 1 to 128 tokens in one batch); the scores equal the eager transformers model called one
    text at a time to 1e-5, and those of the padded fused path (the default), which keeps the id."""
    padded = scorer
    scorer = scorer_for(tiny_bert_classifier_dir, "?unpad=1")
    assert padded.id == scorer.id
    assert scorer.describe()["kernels"] == "oneDNN fused (14 linear layers, real tokens only)"
    assert type(scorer._model.base_model.encoder).__name__ == "UnpaddedEncoder"
    texts = TEXTS + [text * 3 for text in TEXTS[1:6]]
    expected = softmax(reference_logits(tiny_bert_classifier_dir, texts))[:, 1]
    assert values(scorer.score(texts)) == pytest.approx(expected.tolist(), abs=1e-5)
    assert values(scorer.score(texts)) == pytest.approx(values(padded.score(texts)), abs=1e-6)


def test_quantized_models_are_not_fused(tiny_bert_classifier_dir: Path) -> None:
    assert scorer_for(tiny_bert_classifier_dir, "?quantize=int8").describe()["kernels"] == "eager"


@pytest.mark.slow
def test_onnx_runtime_float_scores_equal_torch_and_int8_stay_within_0_01(scorer, tiny_bert_classifier_dir) -> None:
    """runtime=onnx (the onnx extra): the exported float model gives torch's scores to 1e-5; with int8
    weights, within 0.01, and really quantized. Both say so in their ids, so their rows are stored apart."""
    pytest.importorskip("onnxruntime", reason="runtime=onnx needs the onnx extra (pip install 'trusteval[onnx]')")
    onnx = scorer_for(tiny_bert_classifier_dir, "?runtime=onnx")
    int8 = scorer_for(tiny_bert_classifier_dir, "?runtime=onnx&quantize=int8")
    assert onnx.id == scorer.id + "&runtime=onnx"
    assert int8.id == scorer.id + "&quantize=int8&runtime=onnx&int8_weights=7bit-per-channel"
    assert (onnx.describe()["runtime"], onnx.describe()["kernels"]) == ("onnx", "onnxruntime")
    assert int8.describe()["kernels"] == "onnxruntime, 7bit-per-channel int8 weights"
    float_values = values(scorer.score(TEXTS))
    assert values(onnx.score(TEXTS)) == pytest.approx(float_values, abs=1e-5)
    int8_values = values(int8.score(TEXTS))
    assert int8_values == pytest.approx(float_values, abs=0.01)
    assert int8_values != pytest.approx(float_values, abs=1e-6)
    assert [o.label for o in onnx.score(TEXTS)] == [o.label for o in scorer.score(TEXTS)]


def test_onnx_int8_weights_fit_in_7_bits_per_channel_so_no_cpu_saturates_them(
    tiny_bert_classifier_dir, tmp_path
) -> None:
    """onnxruntime's u8s8 kernels on CPUs without VNNI (VPMADDUBSW) saturate 16-bit sums of u8 x s8 products,
    which full-range 8-bit weights reach: the tiny model's int8 scores were 0.072 from float there (0.005 with
    VNNI). Weights in [-64, 64] cannot saturate (255 x 64 x 2 < 2**15), so the file is checked, not the CPU."""
    pytest.importorskip("onnxruntime", reason="runtime=onnx needs the onnx extra (pip install 'trusteval[onnx]')")
    import onnx
    from onnx import numpy_helper

    from trusteval.scorers import hf_onnx

    captured: list[Path] = []
    quantize = hf_onnx.int8_weights

    def keep(path: Path) -> Path:
        quantized = quantize(path)
        captured.append(Path(shutil.copy(quantized, tmp_path / "kept.onnx")))
        return quantized

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hf_onnx, "int8_weights", keep)
        scorer_for(tiny_bert_classifier_dir, "?runtime=onnx&quantize=int8")
    graph = onnx.load(captured[0]).graph
    multiplied = {name for node in graph.node if node.op_type == "MatMulInteger" for name in node.input}
    weights = {
        i.name: numpy_helper.to_array(i)
        for i in graph.initializer
        if i.name in multiplied and i.name.endswith("_quantized")
    }
    weight_scales = {name.removesuffix("_quantized") + "_scale" for name in weights}
    scales = [numpy_helper.to_array(i) for i in graph.initializer if i.name in weight_scales]
    assert len(weights) >= 12 and all(
        w.dtype == np.int8 and np.abs(w.astype(int)).max() <= 64 for w in weights.values()
    )
    assert len(scales) == len(weights) and all(s.size > 1 for s in scales)  # a scale per output channel


def test_onnx_runtime_without_onnxruntime_names_the_extra(tiny_bert_classifier_dir, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    with pytest.raises(BackendError, match=r"trusteval\[onnx\]"):
        scorer_for(tiny_bert_classifier_dir, "?runtime=onnx")
