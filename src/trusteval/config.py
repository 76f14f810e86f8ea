"""Typed run configuration: one RunSpec from a YAML file, the environment and command-line flags.

Precedence is data, not control flow: `merge_sources` applies the sources in the order of `SOURCE_ORDER`
(YAML file < environment < flags), each overriding the keys it sets. Unknown keys and wrong types are errors
that name the file, the line and the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trusteval.errors import UsageError
from trusteval.records import GenerationParams, content_hash
from trusteval.specs import trusteval_dataset
from trusteval.util.folders import DEFAULT_STORE, ENV_PREFIX
from trusteval.util.limits import MAX_CONCURRENCY, MAX_RETRIES, MAX_TIMEOUT_S

SOURCE_ORDER = ("file", "env", "flags")
TRUSTEVAL_SEEDS = (42, 43, 44)
TRUSTGPT_SEEDS = (42,)

FLAG_NAMES = {"models": "--model", "timeout_s": "--timeout"}  # fields whose flag is not --<field>

# Bounds of the numeric fields, checked before anything is written: a value outside them is a typo or would
# make every request fail (temperature inf), hang the run (1e12 bootstrap resamples) or exhaust memory
# (20,000 connections). Seeds are 32-bit, as numpy and the backends take them.
MAX_SEED = 2**32 - 1
MAX_TEMPERATURE = 2.0
MAX_NEW_TOKENS = 131_072
MAX_RESAMPLES = 100_000
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]

# Fields that change how a run executes, not what it computes: they stay out of the run id.
OPERATIONAL_FIELDS = frozenset(
    {
        "store",
        "concurrency",
        "timeout_s",
        "max_retries",
        "data_dir",
        "download",
        "resamples",
        "cache_dir",
        "shard",
        "require_valid_scorer",
        "executor",
        "ray_address",
        "ray_workers",
    }
)


class RunSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    benchmark: str
    models: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    dataset: str | None = None
    limit: int | None = Field(default=None, ge=1)
    sample_seed: Seed = 0
    seeds: list[Seed] = Field(default_factory=lambda: list(TRUSTEVAL_SEEDS), min_length=1)
    temperature: float = Field(default=0.7, ge=0.0, le=MAX_TEMPERATURE)
    top_p: float = Field(default=0.9, gt=0.0, le=1.0)
    max_new_tokens: int = Field(default=512, ge=1, le=MAX_NEW_TOKENS)
    template: str = "{text}"
    scorer: str | None = None
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    prompt_toxicity: Literal["scorer", "label"] = "scorer"
    force_scorer_language: bool = False
    require_valid_scorer: bool = False  # refuse to run unless the toxicity scorer is judged valid on the data
    judge: str | None = None
    per_category: int | None = Field(default=None, ge=1)
    options: dict[str, str] = Field(default_factory=dict)
    concurrency: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    timeout_s: float = Field(default=120.0, gt=0, le=MAX_TIMEOUT_S)
    max_retries: int = Field(default=6, ge=0, le=MAX_RETRIES)
    resamples: int = Field(default=1000, ge=10, le=MAX_RESAMPLES)
    store: str = DEFAULT_STORE
    data_dir: str | None = None
    cache_dir: str | None = None
    download: bool = False
    allow_unpinned_data: bool = False  # use mirror files that do not match their pinned sha256 (recorded)
    trust_remote_code: bool = False
    shard: str | None = None
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    ray_workers: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)

    @field_validator("shard")
    @classmethod
    def _shard_is_index_of_count(cls, value: str | None) -> str | None:
        if value is not None:
            from trusteval.store.shards import parse_shard

            index, count = parse_shard(value)
            return f"{index}/{count}"
        return value

    @field_validator("template")
    @classmethod
    def _template_has_text(cls, value: str) -> str:
        if "{text}" not in value:
            raise ValueError("the template must contain {text}, where the prompt goes")
        return value

    @field_validator("models")
    @classmethod
    def _models_hold_no_credentials(cls, value: list[str]) -> list[str]:
        for raw in value:
            refuse_credentials(raw)
        return value

    @field_validator("judge", "scorer", "dataset")
    @classmethod
    def _judge_holds_no_credentials(cls, value: str | None) -> str | None:
        if value is not None:
            refuse_credentials(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _benchmark_default_seeds(cls, values: Any) -> Any:
        """Each paper's own default when no seeds are given: TrustEval averages seeds 42, 43 and 44 (its
        section 4.4); TrustGPT generated one answer per prompt, so its benchmarks default to seed 42."""
        unset = isinstance(values, dict) and values.get("seeds") is None
        if unset and str(values.get("benchmark", "")).startswith("trustgpt-"):
            return {**values, "seeds": list(TRUSTGPT_SEEDS)}
        return values

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("seeds must be distinct")
        return value

    @property
    def params(self) -> GenerationParams:
        return GenerationParams(self.temperature, self.top_p, self.max_new_tokens)

    @property
    def run_id(self) -> str:
        """Same work, same id: running an identical spec again resumes and reuses that run. Models (and the
        judge) count by identity, so `default` and `llamacpp:smollm2?n_threads=1`, or a server moved to another
        port, give the same id (trusteval.models.base.ModelSpec)."""
        from trusteval.models import ModelSpec

        work = self.model_dump(exclude=set(OPERATIONAL_FIELDS))
        work["models"] = [ModelSpec.parse(raw).identity for raw in self.models]
        if self.judge is not None:
            work["judge"] = ModelSpec.parse(self.judge).identity
        return f"{self.benchmark}-{content_hash(work)[:12]}"

    def store_path(self) -> Path:
        return Path(self.store)

    def cache_path(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir else Path.home() / ".cache" / "trusteval"


def stored_spec(values: Mapping[str, Any]) -> RunSpec:
    """The RunSpec of a stored run. A run stored before a bound existed (say concurrency 20000) stays readable:
    its values were valid when it ran, so they are taken as stored instead of being refused now."""
    try:
        return RunSpec.model_validate(values)
    except ValidationError:
        return RunSpec.model_construct(**values)


def refuse_credentials(raw: str) -> None:
    """A key in a model spec would be stored with the run and printed in its tables: keys come only from
    environment variables. The message never repeats the spec, so the key is not echoed either."""
    from urllib.parse import parse_qsl

    from trusteval.untrusted.redact import credential_in_options

    try:
        options = dict(parse_qsl(raw.partition("?")[2], keep_blank_values=True))
    except ValueError:
        return  # unreadable options are reported, without their text, when the spec is parsed
    where = credential_in_options(options)
    if where:
        raise ValueError(
            f"a spec must not hold a credential ({where}): it would be stored with every run. Put the key "
            "in an environment variable and name it with api_key_env=NAME"
        )


def yaml_source(path: str | Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The mapping in a YAML run spec and the line of each top-level key."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text("utf-8")
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except OSError as exc:
        raise UsageError(f"run spec '{path}': cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"run spec '{path}': not UTF-8 text") from None
    except RecursionError:
        raise UsageError(f"run spec '{path}': nested too deeply to be a run spec") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark else ""
        raise UsageError(f"run spec '{path}'{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        raise UsageError(f"run spec '{path}': the file is empty")
    if not isinstance(data, dict):
        raise UsageError(f"run spec '{path}', line 1: expected a mapping of keys to values")
    lines: dict[str, int] = {}
    for key, _ in node.value if node is not None else ():
        if key.value in lines:  # YAML keeps the last silently; a run must not quietly use another value
            raise UsageError(
                f"run spec '{path}', line {key.start_mark.line + 1}, key '{key.value}': given twice "
                f"(first on line {lines[key.value]}); keep one"
            )
        lines[key.value] = key.start_mark.line + 1
    return data, lines


def env_source(env: Mapping[str, str]) -> dict[str, Any]:
    """TRUSTEVAL_<FIELD> variables for the run spec's fields (lists comma-separated)."""
    found: dict[str, Any] = {}
    for name in RunSpec.model_fields:
        value = env.get(ENV_PREFIX + name.upper())
        if value is None or value == "":
            continue
        found[name] = value.split(",") if name in {"models", "seeds"} else value
    return found


def merge_sources(sources: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for name in SOURCE_ORDER:
        merged.update({k: v for k, v in sources.get(name, {}).items() if v is not None})
    return merged


# What `hatexplain` and `toxicspans` mean in the TrustEval benchmarks: the paper's Chinese translations (issue 20,
# docs/data.md). Resolved when a run spec is built, so the run records the dataset it ran; everywhere else (and as
# `hatexplain-en` / `toxicspans-en`) the names mean the English originals.
TRUSTEVAL_BENCHMARKS = ("trusteval-toxicity", "trusteval-bias", "trusteval-avoidance")


def build_run_spec(
    flags: Mapping[str, Any], *, spec_file: str | Path | None = None, env: Mapping[str, str] | None = None
) -> RunSpec:
    file_values, lines = yaml_source(spec_file) if spec_file else ({}, {})
    sources = {"file": file_values, "env": env_source(env if env is not None else os.environ), "flags": flags}
    merged = merge_sources(sources)
    try:
        spec = RunSpec.model_validate(merged)
    except ValidationError as exc:
        raise UsageError(_describe_validation(exc, sources, spec_file, lines)) from None
    if spec.benchmark in TRUSTEVAL_BENCHMARKS and spec.dataset:
        spec = spec.model_copy(update={"dataset": trusteval_dataset(spec.dataset)})
    return spec


def _describe_validation(
    exc: ValidationError, sources: Mapping[str, Mapping[str, Any]], spec_file: Any, lines: dict[str, int]
) -> str:
    problems = []
    for error in exc.errors():
        key = str(error["loc"][0]) if error["loc"] else "?"
        origin = next((s for s in reversed(SOURCE_ORDER) if sources.get(s, {}).get(key) is not None), None)
        if origin == "file":
            where = f"run spec '{spec_file}', line {lines.get(key, '?')}, key '{key}'"
        elif origin == "env":
            where = f"environment variable {ENV_PREFIX}{key.upper()}"
        elif origin == "flags":
            where = f"flag {FLAG_NAMES.get(key, '--' + key.replace('_', '-'))}"
        else:
            where = f"key '{key}'"
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        if error["type"] == "extra_forbidden":
            from trusteval.registry import did_you_mean

            message += f".{did_you_mean(key, list(RunSpec.model_fields))}"
        problems.append(f"{where}: {message}")
    return "; ".join(problems)
