"""Metrics: pure functions from arrays of scores to estimates. Intervals come only from `stats`.

(A run's metrics as a DataFrame are the API's `trusteval.run_metrics(store, run_id)`, docs/api.md.)
"""
