"""Scorers, registered by short name. A scorer spec is `name` or `name:model?option=value` (trusteval.specs)."""

from __future__ import annotations

from trusteval.registry import Registry
from trusteval.scorers.base import Outcome, ScorerContext, TextScorer
from trusteval.specs import Spec

SCORERS: Registry[TextScorer] = Registry("scorer")
SCORERS.register("cold-tfidf", "trusteval.scorers.cold_detector:create")
SCORERS.register("hf", "trusteval.scorers.hf_classifier:create")
SCORERS.register("en-tfidf", "trusteval.scorers.english_detector:create")
SCORERS.register("perspective", "trusteval.scorers.perspective:create")
SCORERS.register("keywords-exact", "trusteval.scorers.refusal:create")
SCORERS.register("keywords-folded", "trusteval.scorers.refusal:create")
SCORERS.register("keywords-strict", "trusteval.scorers.refusal:create")


def parse_scorer_spec(raw: str) -> Spec:
    return Spec.parse(raw, bare=True)


def load_scorer(raw: str, context: ScorerContext) -> TextScorer:
    """Build a scorer from its spec; factories have the signature `create(spec, context)`."""
    spec = parse_scorer_spec(raw)
    return SCORERS.get(spec.kind)(spec, context)


__all__ = ["SCORERS", "Outcome", "ScorerContext", "TextScorer", "load_scorer", "parse_scorer_spec"]
