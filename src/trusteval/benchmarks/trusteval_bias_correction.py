"""The class-wise validation behind option misclassification=rogan-gladen of `trusteval-bias`
(metrics/misclassification.py): the run's labelled prompts of each class, scored by the run's response scorer
(`trusteval scorers validate` on the dataset stores those scores; so does prompt_toxicity=scorer with the same
scorer), called toxic at the run's threshold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from trusteval.metrics.misclassification import CorrectedBias, corrected_bias
from trusteval.store import RunItem

NO_VALIDATION = (
    "no class-wise validation of this scorer on this data (none of the run's labelled prompts has a score from it); "
    "`trusteval scorers validate --scorer S --dataset D --category ...` scores them"
)


def validation_by_class(
    items: Sequence[RunItem], scores: Mapping[str, Any], threshold: float
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """class -> (labels 0/1, called toxic 0/1) of the run's distinct labelled prompts the scorer has scored."""
    seen: dict[str, tuple[str, int, bool]] = {}
    for item in items:
        prompt = item.prompt
        if prompt.id in seen or prompt.label not in (0, 1) or prompt.category is None:
            continue
        score = scores.get(item.prompt_subject) if item.prompt_subject else None
        if score is not None and score.ok and score.value is not None:
            seen[prompt.id] = (prompt.category, int(prompt.label), float(score.value) >= threshold)
    found: dict[str, tuple[list[int], list[int]]] = {}
    for category, label, called in seen.values():
        labels, calls = found.setdefault(category, ([], []))
        labels.append(label)
        calls.append(int(called))
    return {c: (np.asarray(labels), np.asarray(calls)) for c, (labels, calls) in found.items()}


def corrected_for(
    outcomes: Mapping[str, np.ndarray], validation: Mapping[str, tuple[np.ndarray, np.ndarray]], *, resamples: int
) -> CorrectedBias:
    if not validation:
        return CorrectedBias(reason=NO_VALIDATION)
    return corrected_bias(outcomes, validation, resamples=resamples)
