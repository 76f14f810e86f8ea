"""trusteval: measure how trustworthy a large language model is (TrustGPT and TrustEval, end to end).

The Python API (docs/api.md) is imported on first use, so `import trusteval` stays cheap:
`trusteval.runs(store)`, `trusteval.rows(store, run_id)`, `trusteval.metrics(store, run_id)`, `trusteval.run(spec)`.
"""

from __future__ import annotations

import types
from typing import Any

from trusteval import metrics as _metrics_package

__version__ = "0.1.0"
__all__ = ["__version__", "metrics", "rows", "run", "runs"]
_API = {"rows", "run", "runs", "run_coroutine"}  # `metrics` is the callable package (below)


def __getattr__(name: str) -> Any:
    if name in _API:
        from trusteval import api

        return getattr(api, name)
    raise AttributeError(f"module 'trusteval' has no attribute {name!r}")


class _CallableMetrics(types.ModuleType):
    """The metrics package, callable as the API's `metrics(store, run_id)`: both have the name
    `trusteval.metrics`, and once the package is imported its module is what that name holds."""

    def __call__(self, store: Any, run_id: str) -> Any:
        from trusteval.api import metrics

        return metrics(store, run_id)


_metrics_package.__class__ = _CallableMetrics
