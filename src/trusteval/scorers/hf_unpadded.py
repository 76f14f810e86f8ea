"""The fused encoder's per-token work on real tokens only (the hf scorer's float32 CPU path).

A batch of texts is padded to its longest text, and the eager encoder multiplies every padded position through
every linear layer, layer norm and GELU, then throws those rows away: sorted batches of 32 COLD comments still
carry 4-8% padding (bench/bench_hf_scorer.py), and the linear layers are over 90% of the time. Everything in a
BERT-style layer except attention works on one token at a time, so `UnpaddedEncoder` keeps the hidden states
as one (real tokens x hidden) matrix: the joint query/key/value matmul, the attention output, the GELU
intermediate and the output layers (`hf_fused`'s oneDNN modules) run on it; only attention scatters query, key
and value into the padded (batch, heads, length, head size) layout, calls torch's scaled_dot_product_attention
with the key mask, and gathers the real rows back. The last hidden states are scattered back into the padded
layout for the model's own pooler and head (they read the first token; padded rows are zeros, which no
classifier head reads). The scatter and gather around attention cost about as much as a few percent of
padding saves, so a batch with less than MIN_PADDING padded tokens per real token (most batches of a run's
length-sorted calls of 1,024 texts) runs through the original, padded encoder. The arithmetic per real token
is the eager model's: scores move by float32 rounding (tests/test_hf_unpadded.py holds BERT, RoBERTa and XLM-R
logits to 1e-5 of eager).

Only an encoder whose every layer `hf_fused` rewrote completely (and which is not a decoder and has no
cross-attention or feed-forward chunking) is replaced; any other keeps its own forward.
"""

from __future__ import annotations

from typing import Any

from trusteval.scorers.hf_fused import PROJECTIONS

MIN_PADDING = 1.1  # padded per real token from which a batch runs unpadded (below it the scatter costs more)


def unpad_encoder(torch: Any, model: Any) -> bool:
    """Replace the fused model's encoder by an UnpaddedEncoder; True if it was replaced."""
    base: Any = getattr(model, "base_model", None)
    encoder = getattr(base, "encoder", None)
    config = getattr(model, "config", None)
    if encoder is None or config is None or getattr(config, "is_decoder", False):
        return False
    layers = getattr(encoder, "layer", None)
    if not layers or not all(_fused_layer(layer) for layer in layers):
        return False
    base.encoder = _encoder_type(torch)(encoder)
    return True


def _fused_layer(layer: Any) -> bool:
    """A layer of exactly attention (self, output), intermediate and output, all rewritten by hf_fused."""
    children = {name for name, _ in layer.named_children()}
    chunked = bool(getattr(layer, "chunk_size_feed_forward", 0))
    if children != {"attention", "intermediate", "output"} or chunked:
        return False
    attention = layer.attention
    own = getattr(attention, "self", None)
    names = [type(getattr(own, name, None)).__name__ for name in PROJECTIONS]  # views of one joint projection
    return (
        names == ["Third"] * 3
        and _heads_split_evenly(own)
        and not getattr(attention, "is_cross_attention", False)
        and not getattr(own, "is_causal", False)
        and type(getattr(attention, "output", None)).__name__ == "LinearResidualNorm"
        and type(layer.intermediate).__name__ == "LinearGelu"
        and type(layer.output).__name__ == "LinearResidualNorm"
    )


def _heads_split_evenly(own: Any) -> bool:
    """Query, key and value are each heads x head size wide, and the attention says how to scale."""
    heads: Any = getattr(own, "num_attention_heads", None)
    size: Any = getattr(own, "attention_head_size", None)
    widths = getattr(getattr(own.query, "shared", None), "widths", None)
    return bool(heads and size) and widths == [heads * size] * 3 and hasattr(own, "scaling")


def real_token_mask(torch: Any, mask: Any, batch: int, length: int) -> Any:
    """(batch, length) bool: which positions are real tokens, from the encoder's 4-D bidirectional mask (bool
    for SDPA, additive float for eager attention) or None (no padding)."""
    if mask is None:
        return torch.ones(batch, length, dtype=torch.bool)
    keys = mask[:, 0, 0, :] if mask.dim() == 4 else mask
    return keys if keys.dtype == torch.bool else keys == 0


def _encoder_type(torch: Any) -> type:
    functional = torch.nn.functional

    class UnpaddedEncoder(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.layer = encoder.layer
            self.config = getattr(encoder, "config", None)
            self.padded_encoder = [encoder]  # in a list, so its modules are not registered twice
            self.output_type = _output_type()

        def forward(self, hidden_states: Any, attention_mask: Any = None, *args: Any, **kwargs: Any) -> Any:
            batch, length, width = hidden_states.shape
            real = real_token_mask(torch, attention_mask, batch, length)
            flat = real.reshape(-1)
            if batch * length < MIN_PADDING * int(flat.sum()):
                return self.padded_encoder[0](hidden_states, attention_mask, *args, **kwargs)
            rows = Rows(flat.nonzero().squeeze(1), (~flat).nonzero().squeeze(1), batch, length)
            keys = real[:, None, None, :]
            x = hidden_states.reshape(-1, width).index_select(0, rows.real)
            for layer in self.layer:
                x = self._layer(layer, x, rows, keys)
            return self.output_type(last_hidden_state=rows.padded(x).view(batch, length, width))

        def _layer(self, layer: Any, x: Any, rows: Any, keys: Any) -> Any:
            attended = self._attention(layer.attention.self, x, rows, keys)
            after = layer.attention.output(attended, x)
            return layer.output(layer.intermediate(after), after)

        def _attention(self, own: Any, x: Any, rows: Any, keys: Any) -> Any:
            heads, size = own.num_attention_heads, own.attention_head_size
            padded = rows.padded(own.query.shared.joint(x)).view(rows.batch, rows.length, 3, heads, size)
            query, key, value = padded.permute(2, 0, 3, 1, 4).unbind(0)
            out = functional.scaled_dot_product_attention(query, key, value, attn_mask=keys, scale=own.scaling)
            return out.transpose(1, 2).reshape(rows.batch * rows.length, heads * size).index_select(0, rows.real)

    class Rows:
        """Where a batch's real tokens sit among its (batch x length) positions."""

        def __init__(self, real: Any, padding: Any, batch: int, length: int) -> None:
            self.real, self.padding, self.batch, self.length = real, padding, batch, length

        def padded(self, x: Any) -> Any:
            """The real tokens' rows at their positions, zeros at the padding (masked keys must be finite)."""
            out = x.new_empty(self.batch * self.length, x.shape[1]).index_copy_(0, self.real, x)
            return out.index_fill_(0, self.padding, 0) if len(self.padding) else out

    return UnpaddedEncoder


def _output_type() -> Any:
    from transformers.modeling_outputs import BaseModelOutputWithPastAndCrossAttentions

    return BaseModelOutputWithPastAndCrossAttentions
