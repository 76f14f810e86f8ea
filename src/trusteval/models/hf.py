"""`hf`: a transformers causal language model in process, batched with left padding.

Spec: `hf:<hub id or local folder>?dtype=float32|bfloat16|float16&batch_size=16&device=cpu|cuda
&revision=<commit>&trust_remote_code=1`.

Prompts are rendered with the tokenizer's chat template; a tokenizer without one gets PLAIN_CHAT_FORMAT
(`describe()` says which). Sampling ignores the model's own generation defaults (top_k, repetition penalty,
...): only the request's temperature, top_p and max_new_tokens apply. Each request samples with its own
random generator seeded from its seed and key, so its text does not depend on the other requests in its batch
(`RowSampler`). Code shipped with a model (`auto_map`) runs only with trust_remote_code.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from trusteval.errors import BackendError, UsageError, missing_extra
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.options import Flag, PluginOptions, read_spec_options
from trusteval.records import Generation, Request

OPERATIONAL_OPTIONS = frozenset({"batch_size", "device", "trust_remote_code"})  # identity: name, dtype, revision


class Options(PluginOptions):
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="weights' dtype (identity)")
    batch_size: int = Field(16, ge=1, description="prompts per forward pass")
    device: str | None = Field(None, description="torch device, e.g. cpu, cuda, cuda:1 (default: best available)")
    revision: str | None = Field(None, description="hub revision or commit (part of the model's identity)")
    trust_remote_code: Flag = Field(False, description="run the model folder's own Python code")


PLAIN_CHAT_FORMAT = "plain: one 'role: content' line per message, then 'assistant:' (no chat template)"
TEMPLATE_CHAT_FORMAT = "the tokenizer's chat template"
SPECIAL_TOKEN_KEYS = {"bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id"}
NON_SAMPLING_KEYS = {
    "_from_model_config",
    "transformers_version",
    "use_cache",
    "output_attentions",
    "output_hidden_states",
    "output_scores",
    "output_logits",
    "return_dict_in_generate",
}


# Loading helpers, shared with the hf classifier scorer.


def resolve_source(name: str, who: str = "hf") -> str:
    """A local model folder (absolute path) or a hub id; a path that cannot be a model is refused here."""
    if not name:
        raise UsageError(f"{who}: give a hub id or a local model folder, for example hf:gpt2 or hf:/models/x")
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise BackendError(f"{who}: '{path}' is a file; give the folder that holds config.json and weights")
        if not (path / "config.json").is_file():
            raise BackendError(
                f"{who}: '{path}' is not a model folder (no config.json); save a model there with "
                f"save_pretrained() or download one with `hf download <hub id> --local-dir {path}`"
            )
        return str(path.resolve())
    if name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name:
        raise BackendError(f"{who}: no model folder at '{path}' (the path does not exist)")
    return name


def pick_device(torch: Any, requested: str | None, who: str = "hf") -> str:
    if requested is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise BackendError(
            f"{who}: device={requested} but torch {torch.__version__} sees no CUDA GPU; use device=cpu "
            "or install a CUDA build of torch"
        )
    return requested


def from_pretrained(loader: Any, source: str, what: str, who: str = "hf", **kwargs: Any) -> Any:
    """`loader.from_pretrained(source, **kwargs)`, with load failures turned into actionable BackendErrors."""
    try:
        return loader.from_pretrained(source, **kwargs)
    except Exception as exc:
        raise load_error(source, what, exc, who) from exc


def load_error(source: str, what: str, exc: Exception, who: str) -> BackendError:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "trust_remote_code" in str(exc) or "custom code" in str(exc):
        flag = " (or --trust-remote-code)" if who == "hf" else ""  # scorers take only the spec option
        return BackendError(
            f"{who}: '{source}' needs Python code shipped with the model (auto_map in its config) and "
            f"trusteval does not run such code unless told to: add trust_remote_code=1 to the spec{flag} "
            "only if you trust its author"
        )
    hint = ""
    if not Path(source).is_dir():
        hint = (
            f" ('{source}' is not a local folder, so it was looked up on the Hugging Face hub: check the "
            "id; offline (HF_HUB_OFFLINE=1) only models already in the cache load; or download it and give "
            "its folder)"
        )
    return BackendError(f"{who}: cannot load the {what} of '{source}': {message}{hint}")


def hub_commit(source: str, revision: str | None) -> str | None:
    """The commit hash of a hub model loaded from the cache, or None (local folder, unknown)."""
    if Path(source).is_dir():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(source, "config.json", revision=revision)
    except Exception:
        return None
    found = re.search(r"snapshots/([0-9a-f]{40})/", str(cached).replace("\\", "/"))
    return found.group(1) if found else None


# Sampling.


@dataclass(frozen=True)
class RowPlan:
    """How one row of a batch picks its tokens: its own limits and its own random generator's seed."""

    temperature: float
    top_p: float
    limit: int
    seed: int


def row_seed(request: Request) -> int:
    digest = hashlib.sha256(f"{request.seed}:{request.key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


class RowSampler:
    """A logits processor that picks every row's next token itself and masks all other tokens, so that
    greedy decoding in `generate()` keeps the pick.

    Each row samples with its own torch.Generator, so a request draws the same random numbers whatever else
    is in its batch (the global RNG would hand them out in batch order). A row past its own token limit is
    given eos, which ends it while longer rows go on.
    """

    def __init__(self, plans: Sequence[RowPlan], prompt_width: int, eos_id: int | None, device: str):
        import torch

        self._torch = torch
        self._plans = list(plans)
        self._prompt_width = prompt_width
        self._eos_id = eos_id
        self._generators = [torch.Generator(device=device).manual_seed(p.seed) for p in self._plans]
        self.finished_at: list[float | None] = [None] * len(self._plans)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch = self._torch
        step = input_ids.shape[1] - self._prompt_width
        picks = torch.stack([self._pick(i, scores[i], step) for i in range(len(self._plans))])
        self._note_finished(picks.tolist())
        forced = torch.full_like(scores, float("-inf"))
        forced[torch.arange(len(self._plans), device=scores.device), picks] = 0.0
        return forced

    def _note_finished(self, picks: list[int]) -> None:
        """The moment each row picks eos: its own latency, where the batch as a whole ends later."""
        now = time.perf_counter()
        for row, pick in enumerate(picks):
            if pick == self._eos_id and self.finished_at[row] is None:
                self.finished_at[row] = now

    def _pick(self, row: int, logits: Any, step: int) -> Any:
        torch = self._torch
        plan = self._plans[row]
        if step >= plan.limit and self._eos_id is not None:
            return torch.tensor(self._eos_id, device=logits.device)
        if plan.temperature <= 0:
            return logits.argmax()
        probs = torch.softmax(logits.float() / plan.temperature, dim=-1)
        if plan.top_p < 1.0:
            probs = probs.masked_fill(outside_nucleus(torch, probs, plan.top_p), 0.0)
        # Inverse CDF in vocabulary order: rounding noise from padding (1e-7) then changes the pick only when
        # the draw falls within that noise of a boundary; in sorted order, near-equal tokens could swap places.
        cdf = probs.cumsum(0)
        draw = torch.rand(1, generator=self._generators[row], device=probs.device, dtype=probs.dtype)
        pick = torch.searchsorted(cdf, draw * cdf[-1], right=True).clamp(max=probs.shape[0] - 1)[0]
        return torch.where(probs[pick] > 0, pick, probs.argmax())  # a draw rounded up to the total


def outside_nucleus(torch: Any, probs: Any, top_p: float) -> Any:
    """A mask of the tokens outside the smallest most-probable set whose mass reaches top_p."""
    sorted_probs, order = probs.sort(descending=True)
    outside = (sorted_probs.cumsum(0) - sorted_probs) >= top_p
    outside[0] = False
    return torch.zeros_like(outside).scatter(0, order, outside)


# The backend.


@dataclass(frozen=True)
class PreparedRow:
    index: int
    request: Request
    prompt_ids: list[int]
    limit: int


class HFBackend:
    max_concurrency = 1

    def __init__(
        self,
        spec: ModelSpec,
        source: str,
        model: Any,
        tokenizer: Any,
        *,
        batch_size: int,
        device: str,
        dtype: str,
        trust_remote_code: bool,
        ignored_generation_defaults: dict[str, Any],
    ) -> None:
        self.spec = spec
        self.source = source
        self.batch_size = batch_size
        self.device = device
        self.dtype = dtype
        self.trust_remote_code = trust_remote_code
        self.ignored_generation_defaults = ignored_generation_defaults
        self.model = model
        self.tokenizer = tokenizer
        self._templated = bool(getattr(tokenizer, "chat_template", None))
        self._eos_ids = eos_token_ids(model, tokenizer)
        self._context = getattr(model.config, "max_position_embeddings", None)

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return await asyncio.to_thread(self.generate_now, list(requests))

    def generate_now(self, requests: Sequence[Request]) -> list[Generation]:
        """The blocking work of `generate`: one Generation per request, in order; never raises."""
        results: list[Generation | None] = [None] * len(requests)
        rows: list[PreparedRow] = []
        for index, request in enumerate(requests):
            try:
                rows.append(self._prepare(index, request))
            except Exception as exc:  # a bad prompt fails alone, stored with its reason
                results[index] = Generation.failure(request.key, f"hf: cannot build the prompt: {exc}")
        for row, generation in zip(rows, self._generate_or_split(rows), strict=True):
            results[row.index] = generation
        return [g for g in results if g is not None]

    def _prepare(self, index: int, request: Request) -> PreparedRow:
        prompt = self._render(request.chat())
        ids = self.tokenizer(prompt, add_special_tokens=not self._templated)["input_ids"]
        limit = request.params.max_new_tokens
        if limit < 1:
            raise ValueError(f"max_new_tokens must be at least 1, not {limit}")
        if self._context is not None:
            if len(ids) >= self._context:
                raise ValueError(f"the prompt has {len(ids)} tokens; the model's context is {self._context}")
            limit = min(limit, self._context - len(ids))
        return PreparedRow(index, request, ids, limit)

    def _render(self, messages: list[dict[str, str]]) -> str:
        if self._templated:
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"

    def _generate_or_split(self, rows: list[PreparedRow]) -> list[Generation]:
        """Generate the rows as one batch; if the batch fails, retry each row alone so only bad rows fail."""
        if not rows:
            return []
        started = time.perf_counter()
        try:
            return self._generate_batch(rows)
        except Exception as exc:
            self._release_cache()
            if len(rows) == 1:
                reason = f"hf: generation failed: {type(exc).__name__}: {exc}"
                latency = time.perf_counter() - started
                return [Generation.failure(rows[0].request.key, reason, latency_s=latency)]
            return [g for row in rows for g in self._generate_or_split([row])]

    def _generate_batch(self, rows: list[PreparedRow]) -> list[Generation]:
        import torch

        started = time.perf_counter()
        padded = self.tokenizer.pad({"input_ids": [r.prompt_ids for r in rows]}, return_tensors="pt")
        input_ids = padded["input_ids"].to(self.device)
        attention_mask = padded["attention_mask"].to(self.device)
        plans = [
            RowPlan(r.request.params.temperature, r.request.params.top_p, r.limit, row_seed(r.request)) for r in rows
        ]
        eos_id = self._eos_ids[0] if self._eos_ids else None
        sampler = RowSampler(plans, input_ids.shape[1], eos_id, self.device)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                do_sample=False,
                max_new_tokens=max(r.limit for r in rows),
                logits_processor=[sampler],
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new_tokens = output[:, input_ids.shape[1] :].tolist()
        ended = time.perf_counter()
        latencies = [(done or ended) - started for done in sampler.finished_at]
        return [self._finish(*row) for row in zip(rows, new_tokens, latencies, strict=True)]

    def _finish(self, row: PreparedRow, tokens: list[int], elapsed: float) -> Generation:
        tokens = tokens[: row.limit]
        stop = next((i for i, token in enumerate(tokens) if token in self._eos_ids), None)
        kept = tokens if stop is None else tokens[:stop]
        return Generation(
            key=row.request.key,
            text=self.tokenizer.decode(kept, skip_special_tokens=True),
            finish_reason="length" if stop is None else "stop",
            latency_s=elapsed,
            prompt_tokens=len(row.prompt_ids),
            completion_tokens=len(tokens) if stop is None else stop + 1,
        )

    def _release_cache(self) -> None:
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()

    async def aclose(self) -> None:
        self.model = None
        self._release_cache()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "hf",
            "model": self.spec.identity,
            "source": self.source,
            "revision": self.spec.option("revision") or hub_commit(self.source, None),
            "dtype": self.dtype,
            "device": self.device,
            "batch_size": self.batch_size,
            "chat_format": TEMPLATE_CHAT_FORMAT if self._templated else PLAIN_CHAT_FORMAT,
            "sampling": "temperature and top_p per request, one seeded generator per request (0 = greedy)",
            "ignored_generation_defaults": self.ignored_generation_defaults,
            "trust_remote_code": self.trust_remote_code,
        }


def eos_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokens that end an answer: the model's generation eos ids first, then the tokenizer's eos."""
    configured = getattr(model.generation_config, "eos_token_id", None)
    ids = configured if isinstance(configured, list) else [configured]
    ids = [*ids, tokenizer.eos_token_id]
    return list(dict.fromkeys(int(i) for i in ids if i is not None))


def strip_generation_defaults(model: Any, tokenizer: Any) -> dict[str, Any]:
    """Replace the model's generation config by one holding only its special tokens; return what was dropped.

    generate() fills every unset option from the model's config, so a shipped repetition_penalty or top_k
    would otherwise change the outputs behind the request's back.
    """
    from transformers import GenerationConfig

    original = model.generation_config
    kept = {key: getattr(original, key, None) for key in SPECIAL_TOKEN_KEYS}
    kept["eos_token_id"] = eos_token_ids(model, tokenizer)
    kept["pad_token_id"] = tokenizer.pad_token_id
    model.generation_config = GenerationConfig(**{k: v for k, v in kept.items() if v is not None})
    dropped = original.to_diff_dict()
    return {k: v for k, v in sorted(dropped.items()) if k not in SPECIAL_TOKEN_KEYS | NON_SAMPLING_KEYS}


def set_left_padding(tokenizer: Any, source: str) -> None:
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise BackendError(f"hf: the tokenizer of '{source}' has neither a pad nor an eos token")
        tokenizer.pad_token = tokenizer.eos_token


def preflight(spec: ModelSpec, settings: BackendSettings) -> None:
    """Before a run writes anything: options valid, transformers installed, and the model's config and
    tokenizer loadable without running their code (a folder that needs trust_remote_code, or whose tokenizer
    is broken or has no padding token, is refused here, not after the run is recorded). The weights are
    loaded only by `create`: they are the slow part."""
    options = read_spec_options(Options, spec)
    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None:
        raise missing_extra("transformers", "hf")
    source = resolve_source(spec.name)
    from transformers import AutoConfig, AutoTokenizer

    trust = settings.trust_remote_code or options.trust_remote_code
    shared: dict[str, Any] = {"revision": options.revision, "trust_remote_code": trust}
    from_pretrained(AutoConfig, source, "config", **shared)
    set_left_padding(from_pretrained(AutoTokenizer, source, "tokenizer", **shared), source)


def create(spec: ModelSpec, settings: BackendSettings) -> HFBackend:
    options = read_spec_options(Options, spec)
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise missing_extra("transformers", "hf") from None
    source = resolve_source(spec.name)
    dtype_name, dtype = options.dtype, getattr(torch, options.dtype)
    device = pick_device(torch, options.device)
    trust = settings.trust_remote_code or options.trust_remote_code
    shared: dict[str, Any] = {"revision": options.revision, "trust_remote_code": trust}
    config = from_pretrained(AutoConfig, source, "config", **shared)
    tokenizer = from_pretrained(AutoTokenizer, source, "tokenizer", **shared)
    model = from_pretrained(AutoModelForCausalLM, source, "model", config=config, dtype=dtype, **shared)
    set_left_padding(tokenizer, source)
    model.to(device).eval()
    ignored = strip_generation_defaults(model, tokenizer)
    return HFBackend(
        spec,
        source,
        model,
        tokenizer,
        batch_size=options.batch_size,
        device=device,
        dtype=dtype_name,
        trust_remote_code=trust,
        ignored_generation_defaults=ignored,
    )
