"""oneDNN-fused linear layers (scorers/hf_fused.py) against the eager model they replace."""

from __future__ import annotations

import pytest

from helpers import TINY_ENCODER_SHAPE
from trusteval.scorers.hf_fused import available, fuse_linear_layers

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not available(torch), reason="this torch build has no oneDNN fused linear")

SHAPE = TINY_ENCODER_SHAPE


def model_pair(config):
    torch.manual_seed(0)
    eager = transformers.AutoModelForSequenceClassification.from_config(config).eval()
    fused = transformers.AutoModelForSequenceClassification.from_config(config).eval()
    fused.load_state_dict(eager.state_dict())
    return eager, fused


def padded_batch(lengths: list[int], vocab: int, pad: int):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, vocab, (len(lengths), max(lengths)), generator=generator)
    mask = (torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]).long()
    return {"input_ids": ids.masked_fill(mask == 0, pad), "attention_mask": mask}


@pytest.mark.parametrize(
    ("config", "fused_count"),
    [
        (transformers.BertConfig(**SHAPE), 2 * 6 + 2),  # q, k, v, 2 residual outputs, GELU; pooler, classifier
        (transformers.RobertaConfig(**SHAPE, pad_token_id=1), 2 * 6 + 2),  # head: dense, out_proj
        (transformers.XLMRobertaConfig(**SHAPE, pad_token_id=1), 2 * 6 + 2),
    ],
    ids=["bert", "roberta", "xlm-roberta"],
)
def test_fused_encoders_give_the_eager_logits(config, fused_count: int) -> None:
    eager, fused = model_pair(config)
    assert fuse_linear_layers(torch, fused) == fused_count
    assert not [m for m in fused.modules() if type(m) is torch.nn.Linear]
    batch = padded_batch([40, 33, 7, 1], config.vocab_size, config.pad_token_id or 0)
    with torch.inference_mode():
        want, got = eager(**batch).logits, fused(**batch).logits
    assert got.shape == want.shape == (4, 3)
    assert (got - want).abs().max().item() < 1e-5
    assert want.std().item() > 0.1  # the rows really differ, so the comparison means something


def test_a_tanh_gelu_is_not_fused_into_the_matmul_but_its_linear_is_packed() -> None:
    config = transformers.BertConfig(**SHAPE, hidden_act="gelu_new")
    eager, fused = model_pair(config)
    fuse_linear_layers(torch, fused)
    assert type(fused.bert.encoder.layer[0].intermediate).__name__ == "BertIntermediate"
    batch = padded_batch([12, 5], config.vocab_size, 0)
    with torch.inference_mode():
        assert (fused(**batch).logits - eager(**batch).logits).abs().max().item() < 1e-5


def test_half_precision_models_are_left_alone() -> None:
    eager, _ = model_pair(transformers.BertConfig(**SHAPE))
    assert fuse_linear_layers(torch, eager.to(torch.bfloat16)) == 0
    assert [m for m in eager.modules() if type(m) is torch.nn.Linear]


def test_joint_query_key_value_projection_follows_its_input() -> None:
    """query, key and value share one matmul whose result is kept for the next two calls; a call with another
    input (or a fourth call) must compute afresh, not hand back a stale slice."""
    eager, fused = model_pair(transformers.BertConfig(**SHAPE))
    fuse_linear_layers(torch, fused)
    want, got = eager.bert.encoder.layer[0].attention.self, fused.bert.encoder.layer[0].attention.self
    first, second = torch.randn(2, 5, 64), torch.randn(2, 5, 64)
    with torch.inference_mode():
        calls = [("query", first), ("key", second), ("value", second), ("query", second), ("value", first)]
        calls += [("query", second), ("key", second), ("value", second)]
        for name, x in calls:
            assert (getattr(got, name)(x) - getattr(want, name)(x)).abs().max().item() < 1e-5, name
    assert got.query.joint[0]._kept.parts == []  # nothing held after the three calls of one forward pass


def test_fused_model_gives_the_eager_logits_from_two_threads_at_once() -> None:
    """The joint projection keeps its result per thread: the pipeline scores on worker threads."""
    from concurrent.futures import ThreadPoolExecutor

    eager, fused = model_pair(transformers.BertConfig(**SHAPE))
    fuse_linear_layers(torch, fused)
    batches = [padded_batch([30 - i, 9 + i], SHAPE["vocab_size"], 0) for i in range(8)]

    def logits(model, batch):
        with torch.inference_mode():
            return model(**batch).logits

    with ThreadPoolExecutor(max_workers=2) as pool:
        got = list(pool.map(lambda batch: logits(fused, batch), batches))
    for batch, fused_logits in zip(batches, got, strict=True):
        assert (fused_logits - logits(eager, batch)).abs().max().item() < 1e-5
