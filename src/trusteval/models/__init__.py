"""Model backends, registered by short name; heavy libraries are imported only inside each factory."""

from __future__ import annotations

import inspect

from trusteval.models.base import (
    BACKENDS,
    Backend,
    BackendSettings,
    HasPreflight,
    ModelSpec,
    backend_identity,
    backend_module,
)


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
    module = backend_module(spec.backend)
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
