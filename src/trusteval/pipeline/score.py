"""The score stages: every scoring task scores the subjects it has not stored yet (scorers/scoring.py), then
the scorer bias control's group-swapped copies (metrics/scorer_bias.py)."""

from __future__ import annotations

from collections.abc import Sequence

from trusteval.benchmarks.base import Benchmark
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import ProgressSink
from trusteval.records import text_subject
from trusteval.scorers.base import Inputs, ScoringTask
from trusteval.scorers.scoring import score_missing
from trusteval.store import RunItem, Store

CONTROL_TASK = "response_toxicity"  # the scoring task whose scorer rescores the scorer bias control's copies
SHUFFLE_SEED = 0  # judges must not see pairs in a systematic order (position effects)


async def score_stage(
    store: Store, items: Sequence[RunItem], task: ScoringTask, progress: ProgressSink, summary: RunSummary
) -> None:
    inputs: dict[str, Inputs] = {}
    for item in items:
        selected = task.select(item)
        if selected is not None:
            inputs.setdefault(text_subject(*selected), selected)
    stage = f"score {task.name}"
    counts = await score_missing(
        store, task, inputs, progress, stage, shuffle_seed=SHUFFLE_SEED, in_flight=task.in_flight
    )
    summary.scored += counts.scored
    summary.scores_reused += counts.reused
    summary.score_failures += counts.failures
    summary.unparsed += counts.unparsed


async def control_stage(
    store: Store, benchmark: Benchmark, items: Sequence[RunItem], tasks: Sequence[ScoringTask], progress: ProgressSink
) -> None:
    """Score the scorer bias control's group-swapped copies with the response toxicity scorer (stored and
    reused like every score; metrics/scorer_bias.py). Only for benchmarks that have the control; its counts
    stay out of the run summary, which counts the run's own items."""
    texts_for = getattr(benchmark, "counterfactual_texts", None)
    task = next((t for t in tasks if t.name == CONTROL_TASK), None)
    if texts_for is None or task is None:
        return
    inputs = {text_subject(text): (text,) for text in texts_for(items)}
    await score_missing(store, task, inputs, progress, "score scorer control", in_flight=task.in_flight)
