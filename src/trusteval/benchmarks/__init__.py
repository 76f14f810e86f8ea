"""Benchmarks, registered by name; each factory takes a RunSpec and returns a Benchmark (see base.py)."""

from __future__ import annotations

from trusteval.registry import Registry

BENCHMARKS: Registry = Registry("benchmark")
BENCHMARKS.register("trusteval-toxicity", "trusteval.benchmarks.trusteval_toxicity:create")
BENCHMARKS.register("trusteval-bias", "trusteval.benchmarks.trusteval_bias:create")
BENCHMARKS.register("trusteval-avoidance", "trusteval.benchmarks.trusteval_avoidance:create")
BENCHMARKS.register("trustgpt-toxicity", "trusteval.benchmarks.trustgpt_toxicity:create")
BENCHMARKS.register("trustgpt-bias", "trusteval.benchmarks.trustgpt_bias:create")
BENCHMARKS.register("trustgpt-ava", "trusteval.benchmarks.trustgpt_ava:create")
BENCHMARKS.register("trustgpt-pva", "trusteval.benchmarks.trustgpt_pva:create")
