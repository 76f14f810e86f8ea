"""Translate a dataset into another language with any model backend, as a new file dataset.

The TrustEval paper evaluated Chinese translations of HateXplain and ToxicSpans. `translate` rebuilds that
setting: every prompt of a source dataset is sent to a translator model with a versioned prompt template, the
answers are stored like any run's generations (so an interrupted translation resumes and a finished one makes
no model call), and the output is written at the end:

- `<output>.jsonl`, one row per translated prompt: `id` (the source id), `text` (the translation), `lang`,
  `label` and `category` (copied from the source; left out when the source has none), `source_dataset`,
  `source_id`, `source_text`. It loads as `--dataset file:<output>.jsonl`.
- `<output>.meta.json`: the source dataset spec and file hashes, the translator model spec, the template's
  version, text and sha256, the generation parameters and seed, the counts and the output file's sha256.

A translation that failed or came back empty is left out of the output and counted; running the same
command again retries it. So is one that is not in the target language by the script check that runs use
(`scorers.language`: for zh at least 30% of its letters CJK, for en at most 5%): half-English output is not
written with `lang: zh`; its reason names the CJK share.

This is orchestration (it plans, generates through the pipeline and stores), so it sits beside the pipeline,
not in `data/`: the data layer only reads datasets.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trusteval.data import load_dataset, sample_prompts
from trusteval.data.sources import DataContext, sha256_file
from trusteval.errors import UsageError
from trusteval.models.base import ModelSpec
from trusteval.records import Prompt
from trusteval.scorers.language import cjk_share, off_language
from trusteval.util.atomic import write_atomic

if TYPE_CHECKING:
    from trusteval.config import RunSpec
    from trusteval.models import BackendSettings
    from trusteval.progress import ProgressSink

TEMPLATE_VERSION = "translate-zh@1"
TEMPLATE = (
    "Translate the following text into Simplified Chinese. Keep its meaning and its tone, including any rude "
    "or offensive words. Reply with the translation only, without notes or explanations.\n\nText: {text}"
)
LANGUAGE_NAMES = {"zh": "Simplified Chinese", "en": "English"}
TRANSLATE_BENCHMARK = "translate"


@dataclass(frozen=True)
class TranslationJob:
    """Everything that decides a translation's output; it becomes the stored run's spec."""

    dataset: str
    output: Path
    model: str = "default"
    target_lang: str = "zh"
    limit: int | None = None
    sample_seed: int = 0
    seed: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    template: str = TEMPLATE
    template_version: str = TEMPLATE_VERSION


@dataclass
class TranslationResult:
    run_id: str
    output: Path
    metadata: Path
    written: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # source id -> reason
    generated: int = 0
    reused: int = 0


def template_for(target_lang: str, template_file: str | None) -> tuple[str, str]:
    """(template, version): a user's file (version = its sha256 prefix) or the built-in one for the language."""
    if template_file:
        try:
            text = Path(template_file).read_text("utf-8")
        except OSError as exc:
            raise UsageError(f"flag --template-file: cannot read '{template_file}': {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UsageError(f"flag --template-file: '{template_file}' is not UTF-8 text") from None
        if "{text}" not in text:
            raise UsageError(f"template '{template_file}' must contain {{text}}, where the source text goes")
        return text, f"file:{Path(template_file).name}@{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    if target_lang not in LANGUAGE_NAMES:
        raise UsageError(f"no built-in template for '{target_lang}'; pass --template-file with {{text}} in it")
    if target_lang == "zh":
        return TEMPLATE, TEMPLATE_VERSION
    return TEMPLATE.replace("Simplified Chinese", LANGUAGE_NAMES[target_lang]), f"translate-{target_lang}@1"


def run_spec(job: TranslationJob, store: str, data_dir: str | None, cache_dir: str | None) -> RunSpec:
    from trusteval.config import RunSpec

    return RunSpec(
        benchmark=TRANSLATE_BENCHMARK,
        models=[job.model],
        dataset=job.dataset,
        limit=job.limit,
        sample_seed=job.sample_seed,
        seeds=[job.seed],
        temperature=job.temperature,
        top_p=job.top_p,
        max_new_tokens=job.max_new_tokens,
        template=job.template,
        options={"target_lang": job.target_lang, "template_version": job.template_version},
        store=store,
        data_dir=data_dir,
        cache_dir=cache_dir,
    )


async def translate(
    job: TranslationJob, spec: RunSpec, data: DataContext, settings: BackendSettings, progress: ProgressSink
) -> TranslationResult:
    """Plan, generate (resumable, through the pipeline's generate stage), then write the output files."""
    from trusteval.benchmarks.base import Plan, plan_requests, render_messages
    from trusteval.models import check_spec, preflight
    from trusteval.pipeline.generate import generate_stage
    from trusteval.pipeline.run import record_run
    from trusteval.pipeline.summary import RunSummary
    from trusteval.store import Store

    check_output(job.output)
    source = load_dataset(job.dataset, data)
    prompts = sample_prompts(source.prompts, job.limit, job.sample_seed)
    if not prompts:
        raise UsageError(f"dataset '{job.dataset}' has no prompts to translate")
    items = plan_requests(spec, prompts, lambda p: [(render_messages(job.template, p.text), {})])
    plan = Plan(source, prompts, items, source.notes)
    model = check_spec(job.model)
    await preflight(model, settings)
    store = Store.open(spec.store_path())
    try:
        record_run(store, spec, plan, [])
        summary = RunSummary(spec.run_id, TRANSLATE_BENCHMARK, source.name, requests=len(items))
        await generate_stage(store, spec.run_id, {job.model: model}, settings, progress, summary)
        result = _write_outputs(job, source, store.run_items(spec.run_id), spec.run_id)
        store.finish_run(spec.run_id, "complete" if not result.failed else "incomplete")
    finally:
        store.close()
    result.generated, result.reused = summary.generated, summary.reused
    return result


def _rows(job: TranslationJob, source: Any, run_items: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    labelled = all(item.prompt.label is not None for item in run_items)
    categorised = all(item.prompt.category is not None for item in run_items)
    rows, failed = [], {}
    for item in run_items:
        prompt: Prompt = item.prompt
        text = (item.response or "").strip()
        if not text:
            failed[prompt.id] = item.error or "empty translation"
            continue
        if off_language(text, job.target_lang):  # e.g. half English: it would be labelled zh and scored as zh
            share = cjk_share(text) or 0.0
            failed[prompt.id] = (f"not in {job.target_lang} by the script check ({100 * share:.0f}% of its letters "
                                 "are CJK ideographs): left out")  # fmt: skip
            continue
        row: dict[str, Any] = {"id": prompt.id, "text": text, "lang": job.target_lang}
        if labelled:
            row["label"] = prompt.label
        if categorised:
            row["category"] = prompt.category
        row.update(source_dataset=source.name, source_id=prompt.id, source_text=prompt.text)
        rows.append(row)
    return rows, failed


def metadata_path(output: Path) -> Path:
    """`out.jsonl` -> `out.meta.json`."""
    return output.with_suffix(".meta.json")


def check_output(output: Path) -> None:
    if output.suffix != ".jsonl":
        raise UsageError(f"--output '{output}': the translated dataset is written as JSON Lines; name it *.jsonl")


def _write_outputs(job: TranslationJob, source: Any, run_items: list[Any], run_id: str) -> TranslationResult:
    rows, failed = _rows(job, source, run_items)
    output = job.output
    metadata = metadata_path(output)
    write_atomic(output, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    meta = {
        "source": {"dataset": job.dataset, "name": source.name, "files_sha256": source.sources,
                   "notes": list(source.notes)},
        "sample": {"limit": job.limit, "sample_seed": job.sample_seed, "prompts": len(run_items)},
        "translator": {"model": job.model, "identity": ModelSpec.parse(job.model).identity, "seed": job.seed},
        "template": {"version": job.template_version, "sha256": hashlib.sha256(job.template.encode()).hexdigest(),
                     "text": job.template},
        "params": {"temperature": job.temperature, "top_p": job.top_p, "max_new_tokens": job.max_new_tokens},
        "target_lang": job.target_lang,
        "run_id": run_id,
        "rows": len(rows),
        "failed": failed,
        "output_sha256": sha256_file(output),
    }  # fmt: skip
    write_atomic(metadata, json.dumps(meta, ensure_ascii=False, indent=2) + "\n")
    return TranslationResult(run_id=run_id, output=output, metadata=metadata, written=len(rows), failed=failed)
