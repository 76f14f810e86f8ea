"""trusteval: measure how trustworthy a large language model is (TrustGPT and TrustEval, end to end).

The Python API (docs/api.md) is imported on first use, so `import trusteval` stays cheap:
`trusteval.runs(store)`, `trusteval.rows(store, run_id)`, `trusteval.run_metrics(store, run_id)`,
`trusteval.run(spec)`.
"""

from __future__ import annotations

from typing import Any

from trusteval._version import __version__

__all__ = ["__version__", "rows", "run", "run_metrics", "runs"]
_API = {"rows", "run", "runs", "run_metrics", "run_coroutine"}


def __getattr__(name: str) -> Any:
    if name in _API:
        from trusteval import api

        return getattr(api, name)
    raise AttributeError(f"module 'trusteval' has no attribute {name!r}")
