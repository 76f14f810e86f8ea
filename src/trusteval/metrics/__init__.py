"""Metrics: pure functions from arrays of scores to estimates. Intervals come only from `stats`.

`trusteval.metrics` is also the API call `trusteval.metrics(store, run_id)` (docs/api.md): this package and
that function share the name, so the package itself is callable and hands the call to `trusteval.api.metrics`.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, store: Any, run_id: str) -> Any:
        from trusteval.api import metrics

        return metrics(store, run_id)


sys.modules[__name__].__class__ = _CallablePackage
