"""Metrics: pure functions from arrays of scores to estimates. Intervals come only from `stats`.

`trusteval.metrics` is also the API call `trusteval.metrics(store, run_id)` (docs/api.md): this package and
that function share the name, so the package itself is callable and hands the call to `trusteval.api.metrics`.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from trusteval.api import StoreLike


class _CallablePackage(types.ModuleType):
    def __call__(self, store: StoreLike, run_id: str) -> pd.DataFrame:
        from trusteval.api import metrics

        return metrics(store, run_id)


sys.modules[__name__].__class__ = _CallablePackage
