"""One small generic registry: a name maps to a factory, given directly or lazily as "module:attr".

Built-in parts are registered the same way plugins are; plugins come from the entry-point group
`trusteval.<kind>` and are loaded once, on the first lookup of that kind.
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from trusteval.errors import UsageError

T = TypeVar("T")


def import_target(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return f" Did you mean '{close[0]}'?" if close else ""


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._targets: dict[str, Callable[..., T] | str] = {}
        self._plugins_loaded = False

    def register(self, name: str, target: Callable[..., T] | str) -> None:
        if name in self._targets:
            raise ValueError(f"{self.kind} '{name}' is already registered")
        self._targets[name] = target

    def unregister(self, name: str) -> None:
        self._targets.pop(name, None)

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._targets)

    def get(self, name: str) -> Callable[..., T]:
        self._load_plugins()
        if name not in self._targets:
            raise UsageError(
                f"unknown {self.kind} '{name}'.{did_you_mean(name, list(self._targets))} "
                f"Known: {', '.join(sorted(self._targets))}."
            )
        target = self._targets[name]
        if isinstance(target, str):
            target = import_target(target)
            self._targets[name] = target
        return target

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for entry in installed_entry_points().select(group=f"trusteval.{self.kind.replace(' ', '_')}s"):
            if entry.name not in self._targets:
                self._targets[entry.name] = entry.value


@functools.cache
def installed_entry_points() -> Any:
    """Every installed distribution's entry points, read once per process: each `entry_points(group=...)` call
    reads every installed distribution's metadata again, and a run looks up four kinds of part."""
    from importlib.metadata import entry_points

    return entry_points()
