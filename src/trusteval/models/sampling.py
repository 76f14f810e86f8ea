"""One sampling description per model of a run, as values: what reached the model, and where a value is the
server's and not sent, `unknown: server default` (docs/backends-openai.md, "Backend x parameter").

Built from the spec and the run's settings alone (no model is loaded, no server asked), stored with the run
(`RunRecord.sampling`) and shown by `trusteval runs` and compared by `sampling_differences`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trusteval.models.base import ModelSpec

SERVER_DEFAULT = "unknown: server default"
PARAMETERS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "typical_p",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "max_new_tokens",
    "seed",
    "stop",
    "sampler",
)
# Llama.create_chat_completion's defaults, which the in-process llamacpp backend samples with
LLAMACPP_FIXED: dict[str, Any] = {
    "top_k": 40,
    "min_p": 0.05,
    "typical_p": 1.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "stop": "the chat template's end of turn",
    "sampler": "llama.cpp sampler chain (top-k, typical, top-p, min-p, temperature), llama.cpp RNG seeded by seed",
}
HF_FIXED: dict[str, Any] = {
    "top_k": "off (not applied)",
    "min_p": "off (not applied)",
    "typical_p": "off (not applied)",
    "repetition_penalty": "off (the model's generation_config is dropped)",
    "presence_penalty": "off (not applied)",
    "frequency_penalty": "off (not applied)",
    "stop": "the model's end-of-sequence tokens",
    "sampler": "torch, temperature then top-p, per row RNG seeded by seed and request key; "
    "cannot sample like llamacpp (other cut-offs, other RNG)",
}
OPENAI_PRESETS: dict[str, dict[str, Any]] = {
    "standard": {"top_k": SERVER_DEFAULT, "min_p": SERVER_DEFAULT, "repetition_penalty": SERVER_DEFAULT},
    "neutral": {"top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0},
    "llamacpp": {"top_k": 40, "min_p": 0.05, "repetition_penalty": 1.0},  # sent as repeat_penalty
}


def sampling_description(spec: ModelSpec, temperature: float, top_p: float, max_new_tokens: int,
                         seeds: Sequence[int]) -> dict[str, Any]:  # fmt: skip
    """Every PARAMETERS entry for this model: a value, `unknown: server default`, or what the backend does."""
    sent = {"temperature": temperature, "top_p": top_p, "max_new_tokens": max_new_tokens, "seed": list(seeds)}
    if spec.kind == "llamacpp":
        return ordered({**sent, **LLAMACPP_FIXED})
    if spec.kind == "hf":
        return ordered({**sent, **HF_FIXED})
    if spec.kind == "openai":
        preset = spec.options.get("sampling", "standard")
        return ordered({**sent, "presence_penalty": 0.0, "frequency_penalty": 0.0, "typical_p": SERVER_DEFAULT,
                        "stop": SERVER_DEFAULT, "sampler": f"the server's (sampling={preset})",
                        **OPENAI_PRESETS.get(preset, {})})  # fmt: skip
    return ordered({name: f"unknown: answers from the {spec.kind} backend" for name in PARAMETERS})


def ordered(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: values.get(name, SERVER_DEFAULT) for name in PARAMETERS}


def sampling_differences(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """The settings two models were sampled with differently, as `name: A vs B` lines."""
    return [f"{name}: {first.get(name)} vs {second.get(name)}"
            for name in PARAMETERS if first.get(name) != second.get(name)]  # fmt: skip


def one_line(description: Mapping[str, Any]) -> str:
    """`temperature=0.7, top_p=0.9, ...` without the sampler's prose."""
    return ", ".join(f"{name}={description[name]}" for name in PARAMETERS if name != "sampler" and name in description)
