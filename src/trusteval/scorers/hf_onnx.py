"""ONNX Runtime for the hf scorer (`runtime=onnx`, the `onnx` extra): the classifier exported with
torch.onnx (dynamic batch and length) and run by onnxruntime's CPU provider, optionally with int8 weights
(onnxruntime's dynamic quantization, with 7-bit weights per channel: `INT8_WEIGHTS`).

Measured on the project's 2-core CPU (docs/performance.md): float32 runs no faster than the scorer's fused
torch path, so it is there for machines where ORT is faster; int8 is 1.6-1.8x faster than torch's int8 and
about 2.5x faster than the fused float path, scores within 0.01 of float.
"""

from __future__ import annotations

import inspect
import logging
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from trusteval.errors import missing_extra

OPSET = 17
# onnxruntime's u8s8 int8 kernels on x86-64 CPUs without VNNI (AVX2, AVX-512 before VNNI) multiply with
# VPMADDUBSW, whose 16-bit sums of two u8 x s8 products saturate for 8-bit weights. Weights in [-64, 64]
# (reduce_range: 255 x 64 x 2 < 2**15) cannot saturate there, and a scale per output channel wins back most of
# the lost bit, so the same file scores the same on every x86-64 CPU. On the test suite's tiny BERT: 8-bit
# weights 0.0048 from float with VNNI and 0.0721 without (QEMU -cpu EPYC-Rome and Haswell); these weights 0.0064
# on both, at the same speed (docs/reliability.md). Its name is part of the scorer id.
INT8_WEIGHTS = "7bit-per-channel"


class OnnxClassifier:
    """Called like the transformers model (`model(**encoded).logits`), so the scorer's batching is the same."""

    def __init__(self, torch: Any, session: Any, input_names: list[str], config: Any) -> None:
        self._torch = torch
        self._session = session
        self._input_names = input_names
        self.config = config

    def __call__(self, **encoded: Any) -> Any:
        feeds = {name: encoded[name].cpu().numpy() for name in self._input_names}
        (logits,) = self._session.run(["logits"], feeds)
        return SimpleNamespace(logits=self._torch.from_numpy(logits))


def onnx_classifier(torch: Any, model: Any, tokenizer: Any, quantize: str | None) -> OnnxClassifier:
    """Export `model` to ONNX (int8-quantized if asked) in a scratch folder and load it into onnxruntime."""
    try:
        import onnxruntime
    except ImportError:
        raise missing_extra("onnxruntime", "onnx") from None
    sample = dict(tokenizer(["a b c", "a"], padding=True, return_tensors="pt"))
    # in forward()'s order: the exporter names the graph's inputs positionally
    names = [name for name in inspect.signature(model.forward).parameters if name in sample]
    with tempfile.TemporaryDirectory(prefix="trusteval-onnx-") as scratch:
        path = export(torch, model, {name: sample[name] for name in names}, Path(scratch) / "model.onnx")
        if quantize == "int8":
            path = int8_weights(path)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = torch.get_num_threads()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return OnnxClassifier(torch, session, names, model.config)


def export(torch: Any, model: Any, sample: dict[str, Any], path: Path) -> Path:
    axes = {name: {0: "batch", 1: "length"} for name in sample} | {"logits": {0: "batch"}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes on transformers' shape checks; the axes are dynamic
        torch.onnx.export(
            model,
            (dict(sample),),  # a trailing dict: keyword arguments of forward()
            str(path),
            input_names=list(sample),
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    return path


def int8_weights(path: Path) -> Path:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise missing_extra("onnx", "onnx") from None
    quantized = path.with_name("model.int8.onnx")
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # its advice to pre-process the model, logged on the root logger each time
    try:
        quantize_dynamic(str(path), str(quantized), weight_type=QuantType.QInt8, reduce_range=True, per_channel=True)
    finally:
        logging.disable(previous)
    return quantized
