"""Metrics: pure functions from arrays of scores to estimates. Intervals come only from `stats`."""
