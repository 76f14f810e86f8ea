"""LLM-as-a-judge: any model backend, a versioned prompt file and a parser, turned into Outcomes.

API (what a benchmark or a command uses)::

    prompt = JudgePrompt.load("avoidance_v1")          # scorers/prompts/avoidance_v1.txt and its sha256
    judge = open_judge("default", settings, prompt, parse_binary, labels=AVOIDANCE_LABELS)
    outcomes = await judge.score([(prompt_text, response_text), ...])   # one Outcome per input tuple
    task = judge.scoring_task("avoidance_judge")        # a ScoringTask over (prompt, response) of run items
    again = judge.with_seed(1)                          # a repeat: same backend, another seed, another id
    await judge.aclose()                                # closes the backend (ScoringTask.close does this)

- The prompt file has a `=== system ===` and a `=== user ===` section (the system one optional) with
  `{field}` placeholders, filled in one pass from the input tuple in the order of `JudgePrompt.fields`.
  Every inserted text is HTML-escaped (`&`, `<`, `>`), so a response cannot close its `<response>` block and
  pose as the judge's instructions; the prompt tells the judge that block contents are data.
- `id` names the prompt file and the first 12 hex digits of its sha256, the judge model's identity and the
  generation settings (temperature 0, `max_new_tokens`, `seed`): anything that changes a judgement changes the
  id, so stored judgements are reused only when they would be the same. Every Outcome's `detail` is JSON
  with the raw answer, the full prompt sha256, the judge model and the seed.
- The parser maps the judge's raw answer to a value, or None: then the Outcome is `unparsed` with the raw
  text kept (never turned into 0 or 1). A judge call that failed is an `error` Outcome (retried next run).
- A repeat (`with_seed`) is a real separate judge call: the request differs in its seed, so neither the store
  nor a server-side cache can answer it with an earlier judgement.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from trusteval.errors import UsageError
from trusteval.models import BackendSettings, check_spec, load_backend, preflight
from trusteval.models.base import Backend
from trusteval.records import Generation, GenerationParams, Request, ScoreStatus
from trusteval.scorers.base import Inputs, Outcome, ScoringTask
from trusteval.store import RunItem

Parser = Callable[[str], float | None]
SECTION = re.compile(r"^=== (system|user) ===[ \t]*$", re.MULTILINE)
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
AVOIDANCE_LABELS = {1.0: "avoids", 0.0: "complies"}
LONE_DIGIT = re.compile(r"(?<![0-9A-Za-z_.])([01])(?![0-9A-Za-z_]|\.\d)")
# "1. The response..." or "0) ..." at the start of a line is list numbering, not a verdict.
LIST_NUMBER = re.compile(r"^[ \t]*[0-9]+[.)][ \t]+(?=\S)", re.MULTILINE)


@dataclass(frozen=True)
class JudgePrompt:
    name: str
    system: str | None
    user: str
    sha256: str
    fields: tuple[str, ...]

    @classmethod
    def load(cls, name: str) -> JudgePrompt:
        """A prompt shipped in trusteval/scorers/prompts/<name>.txt."""
        files = resources.files("trusteval.scorers") / "prompts"
        path = files / f"{name}.txt"
        if not path.is_file():
            known = sorted(p.name.removesuffix(".txt") for p in files.iterdir() if p.name.endswith(".txt"))
            raise UsageError(f"no judge prompt '{name}'; known: {', '.join(known)}")
        return cls.parse(name, path.read_bytes())

    @classmethod
    def from_file(cls, path: str | Path, fields: Sequence[str] | None = None) -> JudgePrompt:
        """A user's prompt file; named `file:<stem>`, so the judge id holds its stem and sha256. `fields`: the
        placeholders the file must use (those of the prompt it replaces)."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"judge prompt file '{path}': cannot read: {exc.strerror}") from None
        try:
            prompt = cls.parse(f"file:{path.stem}", raw)
        except UnicodeDecodeError:
            raise UsageError(f"judge prompt file '{path}': not UTF-8 text") from None
        if fields is not None and set(prompt.fields) != set(fields):
            raise UsageError(
                f"judge prompt file '{path}': its placeholders are {{{'}, {'.join(prompt.fields)}}}; it must use "
                f"exactly {{{'}, {'.join(fields)}}}"
            )
        return prompt

    @classmethod
    def parse(cls, name: str, raw: bytes) -> JudgePrompt:
        text = raw.decode("utf-8")
        parts = SECTION.split(text)
        sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
        if "user" not in sections:
            raise UsageError(f"judge prompt '{name}' has no '=== user ===' section")
        fields = tuple(dict.fromkeys(PLACEHOLDER.findall(sections.get("system", "") + sections["user"])))
        return cls(name, sections.get("system"), sections["user"], hashlib.sha256(raw).hexdigest(), fields)

    def render(self, values: Sequence[str]) -> tuple[tuple[str, str], ...]:
        if len(values) != len(self.fields):
            raise ValueError(f"judge prompt '{self.name}' takes {self.fields}, got {len(values)} values")
        filled = {name: escape_block_text(value) for name, value in zip(self.fields, values, strict=True)}

        def fill(template: str) -> str:
            return PLACEHOLDER.sub(lambda m: filled.get(m.group(1), m.group(0)), template)

        system = (("system", fill(self.system)),) if self.system else ()
        return (*system, ("user", fill(self.user)))


def escape_block_text(text: str) -> str:
    """Neutralise tag-like text so inserted content cannot open or close a delimited block."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def parse_binary(text: str) -> float | None:
    """1 or 0 from a judge's answer: a lone digit ("1", "Answer: 0", "<1>", "1."); None when there is no such
    digit or both appear. List numbering ("1. The response ...") at the start of a line is not a verdict."""
    digits = set(LONE_DIGIT.findall(LIST_NUMBER.sub(" ", text)))
    return float(digits.pop()) if len(digits) == 1 else None


@dataclass(frozen=True)
class JudgeSettings:
    temperature: float = 0.0
    max_new_tokens: int = 16
    seed: int = 0


class LLMJudge:
    def __init__(
        self,
        backend: Backend,
        identity: str,
        prompt: JudgePrompt,
        parser: Parser,
        *,
        labels: Mapping[float, str] | None = None,
        settings: JudgeSettings | None = None,
        batch_size: int = 32,
    ) -> None:
        self.backend = backend
        self.identity = identity
        self.prompt = prompt
        self.parser = parser
        self.labels = dict(labels or {})
        self.settings = s = settings or JudgeSettings()
        self.batch_size = batch_size
        self.id = (
            f"judge/{prompt.name}@{prompt.sha256[:12]}/{identity}/t{s.temperature:g}-n{s.max_new_tokens}-s{s.seed}"
        )
        self.params = GenerationParams(temperature=s.temperature, top_p=1.0, max_new_tokens=s.max_new_tokens)

    def with_seed(self, seed: int) -> LLMJudge:
        return LLMJudge(
            self.backend, self.identity, self.prompt, self.parser, labels=self.labels,
            settings=replace(self.settings, seed=seed), batch_size=self.batch_size,
        )  # fmt: skip

    def request(self, inputs: Inputs) -> Request:
        return Request.build(self.identity, self.prompt.render(inputs), self.params, self.settings.seed)

    async def score(self, batch: Sequence[Inputs]) -> list[Outcome]:
        requests = [self.request(inputs) for inputs in batch]
        by_key = {g.key: g for g in await self.backend.generate(requests)}
        return [self.outcome(by_key.get(r.key)) for r in requests]

    def outcome(self, generation: Generation | None) -> Outcome:
        if generation is None or not generation.ok:
            reason = generation.error if generation is not None else "the judge backend returned no answer"
            return Outcome.unscored(ScoreStatus.ERROR, self._detail(error=reason))
        raw = generation.text or ""
        value = self.parser(raw)
        if value is None:
            return Outcome.unscored(ScoreStatus.UNPARSED, self._detail(raw=raw))
        return Outcome(value, ScoreStatus.OK, self.labels.get(value), self._detail(raw=raw))

    def _detail(self, **found: str | None) -> str:
        return json.dumps(
            {**found, "prompt": f"{self.prompt.name}.txt", "prompt_sha256": self.prompt.sha256,
             "judge": self.identity, "seed": self.settings.seed},
            ensure_ascii=False,
        )  # fmt: skip

    def describe(self) -> dict[str, Any]:
        return {
            "scorer": self.id,
            "kind": "judge",
            "judge": self.identity,
            "prompt": f"{self.prompt.name}.txt",
            "prompt_sha256": self.prompt.sha256,
            "temperature": self.settings.temperature,
            "max_new_tokens": self.settings.max_new_tokens,
            "seed": self.settings.seed,
            "labels": {str(k): v for k, v in self.labels.items()},
        }

    def scoring_task(self, name: str, *, close: bool = True) -> ScoringTask:
        """Judge the (prompt, response) pair of every answered run item; the stored subject is
        text_subject(prompt, response), which is what the pipeline looks up when it recomputes a run."""

        def select(item: RunItem) -> Inputs | None:
            return None if item.response is None else (item.prompt.text, item.response)

        return ScoringTask(
            name=name,
            scorer_id=self.id,
            select=select,
            run=self.score,
            batch_size=self.batch_size,
            info=self.describe(),
            close=self.aclose if close else None,
        )

    async def aclose(self) -> None:
        await self.backend.aclose()


def open_judge(
    raw_spec: str,
    settings: BackendSettings,
    prompt: JudgePrompt,
    parser: Parser,
    *,
    labels: Mapping[float, str] | None = None,
    judge_settings: JudgeSettings | None = None,
) -> LLMJudge:
    """Check the judge model (file present, key set, server answering) and load it. Callable from sync code
    and from inside a running event loop (the async preflight then runs on a helper thread)."""
    spec = check_spec(raw_spec)
    _run_to_completion(lambda: preflight(spec, settings))
    backend = load_backend(spec, settings)
    batch_size = max(8, backend.batch_size, 4 * backend.max_concurrency)  # a batching backend gets full calls
    return LLMJudge(
        backend, spec.identity, prompt, parser, labels=labels, settings=judge_settings, batch_size=batch_size
    )


def _run_to_completion(make_coroutine: Callable[[], Any]) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(make_coroutine())
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(make_coroutine())).result()
