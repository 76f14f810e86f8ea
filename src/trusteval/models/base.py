"""The model backend protocol and the spec strings that choose a backend.

A model spec is `backend:name?option=value&...` (see `trusteval.specs`), for example
`hf:Qwen/Qwen2-0.5B-Instruct?dtype=bfloat16`,
`openai:gpt-4o-mini?base_url=https://api.openai.com/v1&api_key_env=OPENAI_API_KEY`,
`llamacpp:/models/x.gguf`, `replay:answers.jsonl`, or `default` for the embedded SmolLM2.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from trusteval.records import Generation, Request
from trusteval.registry import Registry
from trusteval.specs import OPERATIONAL_OPTIONS, Spec

ALIASES = {"default": "llamacpp:smollm2", "smollm2": "llamacpp:smollm2"}


class ModelSpec(Spec):
    """A Spec whose kind is a backend name; `default` and `smollm2` name the embedded model.

    Its `identity` is what keys answers (request keys), run ids and the rows of `trusteval tables`: the
    backend, the canonical model name, the options that change answers, and - where the backend has one - a
    hash of the weights or answers file. Each backend module declares `OPERATIONAL_OPTIONS` (options that
    change how it runs, not what it answers: URL, concurrency, threads, timeouts) and may define
    `identity_parts(spec) -> (name, extra options)` (see docs/design.md, "Model identity").
    """

    @classmethod
    def parse(cls, raw: str, *, aliases: dict[str, str] | None = None, bare: bool = False) -> ModelSpec:
        spec = Spec.parse(raw, aliases=aliases or ALIASES, bare=bare)
        return cls(kind=spec.kind, name=spec.name, options=spec.options, raw=spec.raw)

    @property
    def identity(self) -> str:
        return backend_identity(self)


@dataclass(frozen=True)
class BackendSettings:
    """What the run gives every backend: limits, and the environment to read API keys from (injected)."""

    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 6
    env: Mapping[str, str] = field(default_factory=dict)
    trust_remote_code: bool = False


@runtime_checkable
class Backend(Protocol):
    """Answers Requests. `batch_size` requests go into one `generate` call; the pipeline keeps at most
    `max_concurrency` calls in flight. A failed request comes back as a failed Generation, never raises."""

    batch_size: int
    max_concurrency: int

    async def generate(self, requests: Sequence[Request]) -> list[Generation]: ...

    async def aclose(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


@runtime_checkable
class HasAnswerStream(Protocol):
    """An optional hook of a Backend instance: `generate_stream(requests)` yields each request's Generation as
    it is answered, in any order, so the pipeline stores it at once (a killed run loses only the answers in
    progress, not a whole call's). A request it does not answer is stored as a failure, as with `generate`."""

    def generate_stream(self, requests: Sequence[Request]) -> AsyncIterator[Generation]: ...


# -- optional hooks of a backend's module ----------------------------------------------------------------
# A backend is registered as its factory (`module:create`); these module-level hooks are found on the
# factory's module by protocol (models/__init__.py). They act before any backend exists, so they are the
# module's, not the Backend instance's.


@runtime_checkable
class HasPreflight(Protocol):
    """`preflight(spec, settings)`, plain or async: cheap checks before a run writes anything."""

    def preflight(self, spec: ModelSpec, settings: BackendSettings) -> Awaitable[None] | None: ...


@runtime_checkable
class HasOperationalOptions(Protocol):
    """`OPERATIONAL_OPTIONS`: the options that change how a model runs, not what it answers (left out of its
    identity); without it, trusteval.specs.OPERATIONAL_OPTIONS."""

    OPERATIONAL_OPTIONS: frozenset[str]


@runtime_checkable
class HasIdentityParts(Protocol):
    """`identity_parts(spec) -> (name, extra)`: the name and extra fields the identity is made of (a file's
    hash instead of its path, say); without it, the spec's name."""

    def identity_parts(self, spec: ModelSpec) -> tuple[str, dict[str, str]]: ...


# The registry sits beside ModelSpec because a spec's identity follows its backend's own rules.
BACKENDS: Registry[Backend] = Registry("model backend")
BACKENDS.register("hf", "trusteval.models.hf:create")
BACKENDS.register("llamacpp", "trusteval.models.llamacpp:create")
BACKENDS.register("openai", "trusteval.models.openai:create")
BACKENDS.register("replay", "trusteval.models.replay:create")


def backend_module(backend: str) -> ModuleType | None:
    """The module of a backend's factory, where its optional hooks live (models/base.py: HasPreflight, ...)."""
    return sys.modules.get(BACKENDS.get(backend).__module__)


def backend_identity(spec: ModelSpec) -> str:
    """The spec's identity under its backend's own rules (OPERATIONAL_OPTIONS, identity_parts); a backend that
    declares none (a plugin, a test double) gets the shared list in trusteval.specs."""
    module = backend_module(spec.backend) if spec.backend in BACKENDS.names() else None
    operational = module.OPERATIONAL_OPTIONS if isinstance(module, HasOperationalOptions) else OPERATIONAL_OPTIONS
    name, extra = module.identity_parts(spec) if isinstance(module, HasIdentityParts) else (spec.name, {})
    return spec.identity_with(operational, name=name, extra=extra)
