"""Pieces several benchmarks share: toxicity scoring tasks and the default scorer for a language."""

from __future__ import annotations

from trusteval.config import FLAG_NAMES, RunSpec
from trusteval.errors import UsageError
from trusteval.options import M, parse_options
from trusteval.records import TaskSubject
from trusteval.registry import did_you_mean
from trusteval.scorers import load_scorer
from trusteval.scorers.base import Inputs, ScorerContext, ScoringTask, TextScorer
from trusteval.scorers.language import is_empty, off_language
from trusteval.scorers.scoring import text_run
from trusteval.store import RunItem

DEFAULT_TOXICITY_SCORER = {"zh": "cold-tfidf", "en": "en-tfidf"}


def read_benchmark_options(model: type[M], spec: RunSpec, benchmark: str) -> M:
    """The run's `--option key=value` read into the benchmark's options model. An unknown name that resembles a
    run flag is pointed there (`--option limit=5` is `--limit 5`)."""
    return parse_options(model, spec.options, benchmark, suggest=_run_flag_hint)


def _run_flag_hint(key: str) -> str:
    flags = [FLAG_NAMES.get(f, "--" + f.replace("_", "-")) for f in RunSpec.model_fields if f != "options"]
    hint = did_you_mean("--" + key.replace("_", "-"), flags)
    return f"{hint} (a run flag, not an --option: see trusteval run --help)" if hint else ""


def default_toxicity_scorer(languages: set[str]) -> str:
    """The offline detector for the data's language; mixed or unknown languages need an explicit scorer."""
    if len(languages) == 1:
        (lang,) = languages
        if lang in DEFAULT_TOXICITY_SCORER:
            return DEFAULT_TOXICITY_SCORER[lang]
    raise UsageError(
        f"no default toxicity scorer for language(s) {sorted(languages)}; choose one with --scorer "
        f"(offline: {', '.join(sorted(set(DEFAULT_TOXICITY_SCORER.values())))}; or hf:<model>)"
    )


def check_scorer_language(scorer: TextScorer, languages: set[str], *, force: bool) -> None:
    """Refuse to score text in a language the scorer was not built for, unless forced."""
    if not scorer.languages or force:
        return
    foreign = languages - set(scorer.languages)
    if foreign:
        raise UsageError(
            f"scorer {scorer.id} is built for {', '.join(sorted(scorer.languages))} text but this data is "
            f"{', '.join(sorted(foreign))}; choose a scorer for that language with --scorer, or pass "
            "--force-scorer-language to score it anyway (its results would not be valid)"
        )


def toxicity_scorer_spec(raw: str | None, languages: set[str]) -> str:
    """The scorer spec a run uses: the user's, else the offline detector for the data's language."""
    return raw or default_toxicity_scorer(languages)


def load_toxicity_scorer(
    raw: str | None, context: ScorerContext, languages: set[str], *, force_language: bool
) -> TextScorer:
    scorer = load_scorer(toxicity_scorer_spec(raw, languages), context)
    check_scorer_language(scorer, languages, force=force_language)
    return scorer


def text_task(
    name: str,
    scorer: TextScorer,
    role: TaskSubject,
    *,
    skip_empty: bool = False,
    scorer_spec: str | None = None,
    skip_off_language: bool = False,
) -> ScoringTask:
    """Score one text of every item: the prompt, or the response when there is one. `skip_empty` (toxicity
    scorers): an empty or whitespace-only response is never scored; the benchmarks count it as "empty
    response". `skip_off_language` (option off_language=exclude): a response in another script than its
    prompt's language is never scored; counted as "off-language response". `scorer_spec`: the spec the scorer
    was loaded from (an executor rebuilds it on its workers)."""

    def select(item: RunItem) -> Inputs | None:
        if role == TaskSubject.PROMPT:
            return (item.prompt.text,)
        if item.response is None or (skip_empty and is_empty(item.response)):
            return None
        if skip_off_language and off_language(item.response, item.prompt.lang):
            return None
        return (item.response,)

    return ScoringTask(
        name=name,
        scorer_id=scorer.id,
        select=select,
        run=text_run(scorer),
        batch_size=scorer.batch_size,
        info=scorer.describe(),
        scorer_spec=scorer_spec,
        subject_kind=role,
        stored_text=True,
        skip_empty=skip_empty,
        skip_off_language=skip_off_language and role == TaskSubject.RESPONSE,
    )
