"""Metrics: pure functions from arrays of scores to estimates. Intervals come only from `stats`.

`trusteval.metrics` is also the API call `trusteval.metrics(store, run_id)` (docs/api.md): the top-level
package (trusteval/__init__.py) makes this package callable; nothing here knows of the API.
"""
