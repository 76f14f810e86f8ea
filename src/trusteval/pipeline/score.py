"""The score stages: every scoring task scores the subjects it has not stored yet, in batches, each batch
committed as it completes; then the scorer bias control's group-swapped copies (metrics/scorer_bias.py)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from trusteval.benchmarks.base import Benchmark
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import ProgressSink
from trusteval.records import Score, text_subject
from trusteval.scorers.base import ScoringTask
from trusteval.store import RunItem, Store

CONTROL_TASK = "response_toxicity"  # the scoring task whose scorer rescores the scorer bias control's copies


async def score_stage(
    store: Store, items: Sequence[RunItem], task: ScoringTask, progress: ProgressSink, summary: RunSummary
) -> None:
    inputs: dict[str, tuple[str, ...]] = {}
    for item in items:
        selected = task.select(item)
        if selected is not None:
            inputs.setdefault(text_subject(*selected), selected)
    done = store.scored_subjects(task.scorer_id, inputs)
    todo = [(subject, value) for subject, value in inputs.items() if subject not in done]
    random.Random(0).shuffle(todo)  # judges must not see pairs in a systematic order (position effects)
    summary.scores_reused += len(done)
    summary.unparsed += sum(1 for s in store.scores(task.scorer_id, done).values() if _is_unparsed(s))
    stage = f"score {task.name}"
    progress.start(stage, len(todo))
    for start in range(0, len(todo), task.batch_size):
        batch = todo[start : start + task.batch_size]
        scores = await _score_batch(task, batch)
        store.add_scores(scores)
        failures = sum(1 for s in scores if s.status == "error")
        unparsed = sum(1 for s in scores if _is_unparsed(s))
        summary.scored += len(scores) - failures - unparsed
        summary.score_failures += failures
        summary.unparsed += unparsed
        progress.advance(stage, len(batch), failed=failures, unparsed=unparsed)
    progress.finish(stage)


def _is_unparsed(score: Score) -> bool:
    """A final score without a value (unparsed, or refused by the scorer): kept and counted, never retried."""
    return score.status not in {"ok", "error"}


async def _score_batch(task: ScoringTask, batch: Sequence[tuple[str, tuple[str, ...]]]) -> list[Score]:
    try:
        outcomes = await task.run([value for _, value in batch])
    except Exception as exc:  # a scorer crash is recorded per subject and retried by the next run
        reason = f"{type(exc).__name__}: {exc}"
        return [Score(subject, task.scorer_id, None, "error", detail=reason) for subject, _ in batch]
    if len(outcomes) != len(batch):
        reason = f"scorer returned {len(outcomes)} outcomes for {len(batch)} inputs"
        return [Score(subject, task.scorer_id, None, "error", detail=reason) for subject, _ in batch]
    return [
        Score(subject, task.scorer_id, o.value, o.status, o.label, o.detail)
        for (subject, _), o in zip(batch, outcomes, strict=True)
    ]


async def control_stage(
    store: Store, benchmark: Benchmark, items: Sequence[RunItem], tasks: Sequence[ScoringTask], progress: ProgressSink
) -> None:
    """Score the scorer bias control's group-swapped copies with the response toxicity scorer (stored and
    reused like every score; metrics/scorer_bias.py). Only for benchmarks that have the control."""
    texts_for = getattr(benchmark, "counterfactual_texts", None)
    task = next((t for t in tasks if t.name == CONTROL_TASK), None)
    if texts_for is None or task is None:
        return
    inputs = {text_subject(text): (text,) for text in texts_for(items)}
    done = store.scored_subjects(task.scorer_id, inputs)
    todo = [(subject, value) for subject, value in inputs.items() if subject not in done]
    progress.start("score scorer control", len(todo))
    for start in range(0, len(todo), task.batch_size):
        batch = todo[start : start + task.batch_size]
        store.add_scores(await _score_batch(task, batch))
        progress.advance("score scorer control", len(batch))
    progress.finish("score scorer control")
