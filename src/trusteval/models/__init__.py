"""Model backends, registered by short name; heavy libraries are imported only inside each factory."""

from __future__ import annotations

import inspect
import sys
from types import ModuleType

from trusteval.models.base import (
    Backend,
    BackendSettings,
    HasIdentityParts,
    HasOperationalOptions,
    HasPreflight,
    ModelSpec,
)
from trusteval.registry import Registry
from trusteval.specs import OPERATIONAL_OPTIONS

BACKENDS: Registry[Backend] = Registry("model backend")
BACKENDS.register("hf", "trusteval.models.hf:create")
BACKENDS.register("llamacpp", "trusteval.models.llamacpp:create")
BACKENDS.register("openai", "trusteval.models.openai:create")
BACKENDS.register("replay", "trusteval.models.replay:create")


def _backend_module(backend: str) -> ModuleType | None:
    """The module of a backend's factory, where its optional hooks live (models/base.py: HasPreflight, ...)."""
    return sys.modules.get(BACKENDS.get(backend).__module__)


def backend_identity(spec: ModelSpec) -> str:
    """The spec's identity under its backend's own rules (OPERATIONAL_OPTIONS, identity_parts); a backend that
    declares none (a plugin, a test double) gets the shared list in trusteval.specs."""
    module = _backend_module(spec.backend) if spec.backend in BACKENDS.names() else None
    operational = module.OPERATIONAL_OPTIONS if isinstance(module, HasOperationalOptions) else OPERATIONAL_OPTIONS
    name, extra = module.identity_parts(spec) if isinstance(module, HasIdentityParts) else (spec.name, {})
    return spec.identity_with(operational, name=name, extra=extra)


def model_identity(raw: str) -> str:
    return check_spec(raw).identity


def check_spec(raw: str) -> ModelSpec:
    """Parse a spec and check that its backend exists, without loading anything."""
    spec = ModelSpec.parse(raw)
    if spec.backend not in BACKENDS.names():
        BACKENDS.get(spec.backend)  # raises with a did-you-mean suggestion
    return spec


def load_backend(spec: ModelSpec, settings: BackendSettings) -> Backend:
    return BACKENDS.get(spec.backend)(spec, settings)


async def preflight(spec: ModelSpec, settings: BackendSettings) -> None:
    """Cheap checks before a run writes anything: the file exists, the key is set, the server answers.

    A backend module may define `preflight(spec, settings)` (plain or async); without one, nothing is checked
    until the backend loads.
    """
    module = _backend_module(spec.backend)
    if not isinstance(module, HasPreflight):
        return
    result = module.preflight(spec, settings)
    if inspect.isawaitable(result):
        await result


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendSettings",
    "ModelSpec",
    "backend_identity",
    "check_spec",
    "load_backend",
    "model_identity",
    "preflight",
]
