"""The score stages: every scoring task scores the subjects it has not stored yet (scorers/scoring.py), then
the scorer bias control's group-swapped copies (metrics/scorer_bias.py)."""

from __future__ import annotations

from collections.abc import Sequence

from trusteval.benchmarks.base import Benchmark
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import ProgressSink
from trusteval.records import TaskSubject, text_subject
from trusteval.scorers.base import Inputs, ScoringTask
from trusteval.scorers.language import is_empty
from trusteval.scorers.scoring import ScoreCounts, score_missing
from trusteval.store import RunItem, Store
from trusteval.store_views import RunItems

CONTROL_TASK = "response_toxicity"  # the scoring task whose scorer rescores the scorer bias control's copies
SHUFFLE_SEED = 0  # judges must not see pairs in a systematic order (position effects)


async def score_stage(
    store: Store, items: Sequence[RunItem], task: ScoringTask, progress: ProgressSink, summary: RunSummary
) -> None:
    stage = f"score {task.name}"
    counts = stored_counts(store, items, task)
    if counts is None:  # something is left to score: read the items
        counts = await score_missing(
            store, task, task_inputs(items, task), progress, stage, shuffle_seed=SHUFFLE_SEED, in_flight=task.in_flight
        )
    else:
        progress.start(stage, 0)
        progress.finish(stage)
    summary.scored += counts.scored
    summary.scores_reused += counts.reused
    summary.score_failures += counts.failures
    summary.unparsed += counts.unparsed


def stored_counts(store: Store, items: Sequence[RunItem], task: ScoringTask) -> ScoreCounts | None:
    """What score_missing would count when every subject of a stored-text task (text_task) has a final score
    already (a resumed or repeated run), counted in SQL without reading the items; None when some subject
    is left to score, or when the task's subjects are not the stored ones."""
    if not (task.stored_text and isinstance(items, RunItems)):
        return None
    skip = is_empty if task.skip_empty else _never
    total, missing, unparsed = store.task_subjects(
        items.run_id, task.scorer_id, prompts=task.subject_kind == TaskSubject.PROMPT, skip=skip
    )
    return None if missing else ScoreCounts(reused=total, unparsed=unparsed)


def _never(text: str) -> bool:
    return False


def task_inputs(items: Sequence[RunItem], task: ScoringTask) -> dict[str, Inputs]:
    """The task's inputs by subject; a stored-text task's subject is the item's stored one (no re-hashing)."""
    inputs: dict[str, Inputs] = {}
    for item in items:
        selected = task.select(item)
        if selected is None:
            continue
        if not task.stored_text:
            inputs.setdefault(text_subject(*selected), selected)
        elif task.subject_kind == TaskSubject.PROMPT:
            inputs.setdefault(item.prompt_subject, selected)
        else:
            inputs.setdefault(item.response_subject or text_subject(*selected), selected)
    return inputs


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
