"""The fused encoder on real tokens only (scorers/hf_unpadded.py) against the eager model it replaces."""

from __future__ import annotations

import pytest

from helpers import TINY_ENCODER_SHAPE
from trusteval.scorers.hf_fused import available, fuse_linear_layers
from trusteval.scorers.hf_unpadded import unpad_encoder

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not available(torch), reason="this torch build has no oneDNN fused linear")

SHAPE = TINY_ENCODER_SHAPE
CONFIGS = {
    "bert": lambda **extra: transformers.BertConfig(**SHAPE, **extra),
    "roberta": lambda **extra: transformers.RobertaConfig(**SHAPE, pad_token_id=1, **extra),
    "xlm-roberta": lambda **extra: transformers.XLMRobertaConfig(**SHAPE, pad_token_id=1, **extra),
}


def model_pair(config, unpad: bool = True):
    torch.manual_seed(0)
    eager = transformers.AutoModelForSequenceClassification.from_config(config).eval()
    fast = transformers.AutoModelForSequenceClassification.from_config(config).eval()
    fast.load_state_dict(eager.state_dict())
    fuse_linear_layers(torch, fast)
    replaced = unpad_encoder(torch, fast) if unpad else False
    return eager, fast, replaced


def padded_batch(lengths: list[int], vocab: int, pad: int):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, vocab, (len(lengths), max(lengths)), generator=generator)
    mask = (torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]).long()
    return {"input_ids": ids.masked_fill(mask == 0, pad), "attention_mask": mask}


def largest_difference(eager, fast, batch) -> float:
    with torch.inference_mode():
        want, got = eager(**batch).logits, fast(**batch).logits
    assert want.std().item() > 0.1  # the rows really differ, so the comparison means something
    return (got - want).abs().max().item()


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("lengths", [[40, 33, 7, 1], [12, 12, 12]], ids=["padded", "no-padding"])
def test_unpadded_encoders_give_the_eager_logits(name: str, lengths: list[int]) -> None:
    config = CONFIGS[name]()
    eager, fast, replaced = model_pair(config)
    assert replaced
    assert type(fast.base_model.encoder).__name__ == "UnpaddedEncoder"
    batch = padded_batch(lengths, config.vocab_size, config.pad_token_id or 0)
    assert largest_difference(eager, fast, batch) < 1e-5


def test_eager_attention_masks_are_read_too() -> None:
    """With attn_implementation="eager" the encoder gets an additive float mask instead of SDPA's bool one."""
    config = CONFIGS["bert"]()
    config._attn_implementation = "eager"
    eager, fast, _ = model_pair(config)
    assert largest_difference(eager, fast, padded_batch([30, 9, 2], config.vocab_size, 0)) < 1e-5


def rows_seen_by_the_linear_layers(lengths: list[int]) -> list[int]:
    config = CONFIGS["bert"]()
    _, fast, _ = model_pair(config)
    seen: list[int] = []
    layer = fast.bert.encoder.layer[0]
    for module in (layer.attention.self.query.shared.joint, layer.attention.output, layer.intermediate, layer.output):
        module.register_forward_pre_hook(lambda _module, args: seen.append(args[0].numel() // args[0].shape[-1]))
    with torch.inference_mode():
        fast(**padded_batch(lengths, config.vocab_size, 0))
    return seen


def test_the_linear_layers_see_real_tokens_only() -> None:
    """The point of it: a batch of lengths 40, 33, 7 and 1 multiplies 81 rows per layer, not 4 x 40 = 160."""
    assert rows_seen_by_the_linear_layers([40, 33, 7, 1]) == [81, 81, 81, 81]


def test_a_batch_with_little_padding_runs_padded() -> None:
    """Below MIN_PADDING (1.1 padded per real token) the scatter around attention costs more than it saves:
    lengths 40 x 9 and 39 (1.003) run through the original encoder, 400 rows."""
    assert rows_seen_by_the_linear_layers([40] * 9 + [39]) == [400, 400, 400, 400]


def test_a_layer_that_was_not_fully_fused_keeps_the_padded_encoder() -> None:
    """A tanh GELU is not fused (hf_fused), so the encoder is left as it was, and still gives the eager logits."""
    config = CONFIGS["bert"](hidden_act="gelu_new")
    eager, fast, replaced = model_pair(config)
    assert not replaced
    assert type(fast.bert.encoder).__name__ == "BertEncoder"
    assert largest_difference(eager, fast, padded_batch([20, 5], config.vocab_size, 0)) < 1e-5


def test_unfused_models_are_left_alone() -> None:
    torch.manual_seed(0)
    model = transformers.AutoModelForSequenceClassification.from_config(CONFIGS["bert"]()).eval()
    assert not unpad_encoder(torch, model)
    assert type(model.bert.encoder).__name__ == "BertEncoder"
