"""The score stages: every scoring task scores the subjects it has not stored yet (scorers/scoring.py), then
the scorer bias control's group-swapped copies (metrics/scorer_bias.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from trusteval.benchmarks.base import Benchmark, HasScorerControl
from trusteval.pipeline.memory import release_free_memory
from trusteval.pipeline.seen import SeenSubjects
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import ProgressSink
from trusteval.records import TaskSubject, text_subject
from trusteval.scorers.base import Inputs, ScoringTask
from trusteval.scorers.language import is_empty
from trusteval.scorers.scoring import ScoreCounts, score_chunks, score_missing
from trusteval.store import RunItem, Store
from trusteval.store.views import RunItems, item_chunks

CONTROL_TASK = "response_toxicity"  # the scoring task whose scorer rescores the scorer bias control's copies
SHUFFLE_SEED = 0  # judges must not see pairs in a systematic order (position effects)


async def score_stage(
    store: Store, items: Sequence[RunItem], task: ScoringTask, progress: ProgressSink, summary: RunSummary
) -> None:
    stage = f"score {task.name}"
    found = subject_counts(store, items, task)
    if found is not None and not found[1]:  # every subject has a final score (a resumed or repeated run)
        counts = ScoreCounts(reused=found[0], unparsed=found[2])
        progress.start(stage, 0)
        progress.finish(stage)
    else:  # something is left to score: read the items, a chunk at a time
        counts = await score_chunks(
            store, task, input_chunks(items, task), progress, stage,
            total=found[1] if found else None, shuffle_seed=SHUFFLE_SEED, in_flight=task.in_flight,
        )  # fmt: skip
    summary.scored += counts.scored
    summary.scores_reused += counts.reused
    summary.score_failures += counts.failures
    summary.unparsed += counts.unparsed


def subject_counts(store: Store, items: Sequence[RunItem], task: ScoringTask) -> tuple[int, int, int] | None:
    """(subjects, those without a final score, those with one without a value) of a stored-text task
    (text_task), counted in SQL without reading the items; None when the task's subjects are not the stored
    ones, or when the task skips off-language responses (their language is the prompt's: the items are read)."""
    if not (task.stored_text and isinstance(items, RunItems)) or task.skip_off_language:
        return None
    skip = is_empty if task.skip_empty else _never
    return store.task_subjects(items.run_id, task.scorer_id, prompts=task.subject_kind == TaskSubject.PROMPT, skip=skip)


def _never(text: str) -> bool:
    return False


def task_inputs(items: Iterable[RunItem], task: ScoringTask) -> dict[str, Inputs]:
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


def input_chunks(items: Sequence[RunItem], task: ScoringTask) -> Iterator[dict[str, Inputs]]:
    """task_inputs of the items a chunk at a time, each subject in the chunk of its first item only: the
    chunks together are task_inputs(items), in the same order, without all of it held at once."""
    seen = SeenSubjects()
    for chunk in item_chunks(items):
        inputs = task_inputs(chunk, task)
        fresh = seen.add_new(list(inputs))
        yield inputs if len(fresh) == len(inputs) else {subject: inputs[subject] for subject in fresh}
        del chunk, inputs
        release_free_memory()


async def control_stage(
    store: Store, benchmark: Benchmark, items: Sequence[RunItem], tasks: Sequence[ScoringTask], progress: ProgressSink
) -> None:
    """Score the scorer bias control's group-swapped copies with the response toxicity scorer (stored and
    reused like every score; metrics/scorer_bias.py). Only for benchmarks that have the control; its counts
    stay out of the run summary, which counts the run's own items."""
    task = next((t for t in tasks if t.name == CONTROL_TASK), None)
    if not isinstance(benchmark, HasScorerControl) or task is None:
        return
    inputs = {text_subject(text): (text,) for text in benchmark.counterfactual_texts(items)}
    await score_missing(store, task, inputs, progress, "score scorer control", in_flight=task.in_flight)
