"""Benchmarks, registered by name; each factory takes a RunSpec and returns a Benchmark (see base.py)."""

from __future__ import annotations

from trusteval.registry import Registry

BENCHMARKS: Registry = Registry("benchmark")
BENCHMARKS.register("trusteval-toxicity", "trusteval.benchmarks.trusteval_toxicity:create")
