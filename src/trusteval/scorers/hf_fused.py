"""oneDNN-fused linear layers for the hf scorer's float32 CPU path (BERT-style encoders).

Eager torch computes `linear(x, W, b)` as `addmm`: it first copies the bias into every row of the output and
then accumulates the matmul onto it, an extra pass over the largest tensors of the model; GELU and the residual
add are two more passes. oneDNN applies the bias, the GELU and the residual add in the matmul's own epilogue
(`torch.ops.mkldnn._linear_pointwise`, what torch.compile's CPU backend emits), so only the matmul's own pass
remains. The weights are packed once into oneDNN's layout. The arithmetic is the same fp32 (scores move by
about 1e-7; tests/test_hf_fused.py and tests/test_hf_classifier.py hold them to 1e-5 of the eager model).

Modules are rewritten by shape, not by class name, so BERT, RoBERTa, XLM-R and their copies match:
- an attention's `query`, `key` and `value` Linears become one matmul over the concatenated weights (1.2x the
  rate of three narrow ones), of which each projection returns its third; attention itself stays the model's;
- an `*Intermediate` (a `dense` Linear and an exact-GELU `intermediate_act_fn`) becomes linear+GELU;
- an `*Output`/`*SelfOutput` (`dense`, `dropout`, `LayerNorm`, called with the residual) becomes linear+add,
  then the layer norm;
- every other Linear becomes a packed linear with the bias in the epilogue.
"""

from __future__ import annotations

import threading
from typing import Any

PROJECTIONS = ("query", "key", "value")
PACKING_BATCH_HINT = 1024  # rows per matmul oneDNN tunes the packed layout for (a batch: 32 texts x 30-50 tokens)


def available(torch: Any) -> bool:
    """This torch build has oneDNN and its fused linear ops (x86 and ARM builds of torch do)."""
    ops = getattr(torch.ops, "mkldnn", None)
    if not torch.backends.mkldnn.is_available() or ops is None:
        return False
    try:
        return hasattr(ops, "_linear_pointwise") and hasattr(ops, "_reorder_linear_weight")
    except RuntimeError:
        return False


def fuse_linear_layers(torch: Any, model: Any) -> int:
    """Rewrite the model's linear layers in place (float32 on the CPU only); return how many were rewritten.
    The model then serves inference only: its weights are packed and no longer trainable."""
    if not available(torch) or any(p.dtype != torch.float32 or p.device.type != "cpu" for p in model.parameters()):
        return 0
    return _rewrite(torch, _layer_types(torch), model)


def _rewrite(torch: Any, layers: dict[str, type], parent: Any) -> int:
    count = _fuse_projections(torch, layers, parent)
    for name, child in list(parent.named_children()):
        fused = _fused(torch, layers, child)
        if fused is None:
            count += _rewrite(torch, layers, child)
        else:
            setattr(parent, name, fused)
            count += 1
    return count


def _fused(torch: Any, layers: dict[str, type], module: Any) -> Any:
    children = dict(module.named_children())
    linear, norm = children.get("dense"), children.get("LayerNorm")
    if type(module) is torch.nn.Linear:
        return layers["plain"](module)
    if type(linear) is not torch.nn.Linear:
        return None
    if set(children) == {"dense", "intermediate_act_fn"} and _is_exact_gelu(torch, children["intermediate_act_fn"]):
        return layers["gelu"](linear)
    residual_output = type(module).__name__.endswith("Output") and set(children) == {"dense", "dropout", "LayerNorm"}
    if residual_output and type(norm) is torch.nn.LayerNorm:
        return layers["residual"](linear, norm)
    return None


def _fuse_projections(torch: Any, layers: dict[str, type], module: Any) -> int:
    children = dict(module.named_children())
    if not all(type(children.get(name)) is torch.nn.Linear for name in PROJECTIONS):
        return 0
    projections = [children[name] for name in PROJECTIONS]
    if len({(p.in_features, p.bias is None) for p in projections}) != 1:
        return 0
    shared = layers["qkv"](projections)
    for index, name in enumerate(PROJECTIONS):
        setattr(module, name, layers["third"](shared, index))
    return len(PROJECTIONS)


def _is_exact_gelu(torch: Any, activation: Any) -> bool:
    """transformers' "gelu" (GELUActivation over torch's erf GELU), which oneDNN's "gelu"/"none" computes."""
    if isinstance(activation, torch.nn.GELU):
        return activation.approximate == "none"
    return type(activation).__name__ == "GELUActivation" and getattr(activation, "act", None) is (
        torch.nn.functional.gelu
    )


def _layer_types(torch: Any) -> dict[str, type]:
    """The fused modules, defined here so that importing this file does not import torch."""
    linears = _linear_types(torch)
    return {**linears, **_projection_types(torch, linears["plain"])}


def _linear_types(torch: Any) -> dict[str, type]:
    """A linear layer with its weight packed for oneDNN, alone or fused with GELU or with residual + norm."""
    mkldnn = torch.ops.mkldnn

    class PackedLinear(torch.nn.Module):
        def __init__(self, linear: Any) -> None:
            super().__init__()
            self.out_features = linear.out_features
            self.register_buffer("weight", mkldnn._reorder_linear_weight(linear.weight.detach(), PACKING_BATCH_HINT))
            self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())

        def rows(self, x: Any) -> Any:
            return x.reshape(-1, x.shape[-1])

        def shaped(self, out: Any, x: Any) -> Any:
            return out.view(*x.shape[:-1], self.out_features)

        def forward(self, x: Any) -> Any:
            return self.shaped(mkldnn._linear_pointwise(self.rows(x), self.weight, self.bias, "none", [], ""), x)

    class LinearGelu(PackedLinear):
        def forward(self, x: Any) -> Any:
            return self.shaped(mkldnn._linear_pointwise(self.rows(x), self.weight, self.bias, "gelu", [], "none"), x)

    class LinearResidualNorm(PackedLinear):
        def __init__(self, linear: Any, norm: Any) -> None:
            super().__init__(linear)
            self.LayerNorm = norm

        def forward(self, x: Any, residual: Any) -> Any:  # type: ignore[override]
            summed = mkldnn._linear_pointwise.binary(
                self.rows(x), self.rows(residual).contiguous(), self.weight, self.bias, "add"
            )
            return self.LayerNorm(self.shaped(summed, x))

    return {"plain": PackedLinear, "gelu": LinearGelu, "residual": LinearResidualNorm}


def _projection_types(torch: Any, packed_linear: type) -> dict[str, type]:
    """Query, key and value projections computed in one packed matmul (`qkv`), each seen through a `third`."""

    class JointProjection(torch.nn.Module):
        """query, key and value in one matmul. The attention calls its three projections one after another on
        the same input: the first computes all three, the others take their slice of the kept result."""

        def __init__(self, linears: list[Any]) -> None:
            super().__init__()
            self.joint = packed_linear(_concatenated(torch, linears))
            self.widths = [linear.out_features for linear in linears]
            self._kept = threading.local()  # per thread: a scorer may run on a worker thread

        def part(self, x: Any, index: int) -> Any:
            kept = self._kept
            if getattr(kept, "input", None) is not x or kept.taken == len(self.widths):
                kept.input, kept.taken = x, 0
                kept.parts = list(self.joint(x).split(self.widths, dim=-1))
            kept.taken += 1
            out = kept.parts[index]
            if kept.taken == len(self.widths):
                kept.input, kept.parts = None, []  # hold no activations between forward passes
            return out

    class Third(torch.nn.Module):
        def __init__(self, joint: Any, index: int) -> None:
            super().__init__()
            self.joint = [joint]  # a list, so the module is not registered three times
            self.index = index
            if index == 0:
                self.shared = joint

        def forward(self, x: Any) -> Any:
            return self.joint[0].part(x, self.index)

    return {"qkv": JointProjection, "third": Third}


def _concatenated(torch: Any, linears: list[Any]) -> Any:
    joint = torch.nn.Linear(linears[0].in_features, sum(p.out_features for p in linears), bias=False)
    joint.weight = torch.nn.Parameter(torch.cat([p.weight.detach() for p in linears]), requires_grad=False)
    if linears[0].bias is not None:
        joint.bias = torch.nn.Parameter(torch.cat([p.bias.detach() for p in linears]), requires_grad=False)
    return joint
