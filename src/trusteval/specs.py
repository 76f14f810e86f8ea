"""Spec strings that name a part and its options: `kind:name?option=value&option=value`.

Model backends (`hf:gpt2?dtype=bfloat16`), scorers (`hf:thu-coai/roberta-base-cold?label=1`) and judges all
use this one form. A spec's identity (kind, name and the options that change outputs) goes into content
hashes; operational options (URL, timeouts, concurrency) do not, so moving a server or raising concurrency
still reuses stored rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

from trusteval.errors import UsageError
from trusteval.untrusted.redact import credential_in_options
from trusteval.untrusted.safetext import one_line

OPERATIONAL_OPTIONS = frozenset(
    {
        "base_url",
        "api_key_env",
        "timeout",
        "concurrency",
        "batch_size",
        "max_retries",
        "n_threads",
        "device",
        "rps",
        "trust_remote_code",
        "backoff_base",
        "backoff_max",
    }
)


@dataclass(frozen=True)
class Spec:
    kind: str
    name: str
    options: dict[str, str] = field(default_factory=dict)
    raw: str = ""

    @classmethod
    def parse(cls, raw: str, *, aliases: dict[str, str] | None = None, bare: bool = False) -> Spec:
        """Read `kind:name?options`. With `bare`, a string with no colon is a kind with no name."""
        text = raw.strip()
        text = (aliases or {}).get(text, text)
        head, _, query = text.partition("?")
        kind, sep, name = head.partition(":")
        if not kind or (not bare and (not sep or not name)):
            raise UsageError(
                f"spec '{raw}' is not 'kind:name[?option=value&...]' "
                "(for example hf:gpt2, openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1, llamacpp:smollm2)"
            )
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError as exc:
            raise UsageError(f"spec '{head}': cannot read its options: {exc}") from None
        options = dict(pairs)
        if len(options) < len(pairs):  # a dict keeps the last: `base_url=a&base_url=b` would silently drop a
            repeated = next(name for name in options if sum(1 for k, _ in pairs if k == name) > 1)
            raise UsageError(
                f"spec '{head}': option '{one_line(repeated)}' is given twice; give it once "
                "(several replicas go in one base_url, separated by commas)"
            )
        refuse_credentials(head, options)
        return cls(kind=kind, name=name, options=options, raw=raw)

    @property
    def shown(self) -> str:
        """Kind, name and option names, without option values: safe to print whatever the options hold."""
        base = f"{self.kind}:{self.name}" if self.name else self.kind
        return base + (f"?{'&'.join(f'{k}=...' for k in self.options)}" if self.options else "")

    @property
    def backend(self) -> str:
        return self.kind

    @property
    def identity(self) -> str:
        """Kind, name, and only the options that change the outputs."""
        return self.identity_with(OPERATIONAL_OPTIONS)

    def identity_with(
        self, operational: frozenset[str], *, name: str | None = None, extra: dict[str, str] | None = None
    ) -> str:
        """The identity string: kind, `name` (default: the spec's), the options not in `operational` and the
        `extra` identity options (e.g. a weights file's hash), sorted."""
        kept = {k: v for k, v in self.options.items() if k not in operational} | (extra or {})
        name = self.name if name is None else name
        base = f"{self.kind}:{name}" if name else self.kind
        return base + (f"?{urlencode(sorted(kept.items()))}" if kept else "")

    def option(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)


def refuse_credentials(head: str, options: dict[str, str]) -> None:
    """A key in a spec would be stored with the run and printed in its tables: keys come only from environment
    variables. The message names where the key is, never the spec's text, so the key is not echoed."""
    where = credential_in_options(options)
    if where:
        raise UsageError(
            f"spec '{head}' must not hold a credential ({where}): it would be stored with every run. Put the key "
            "in an environment variable and name it with api_key_env=NAME"
        )


# TrustEval's HateXplain and ToxicSpans are the authors' Chinese translations (issue 20); the English originals
# are `hatexplain-en` / `toxicspans-en`.
TRUSTEVAL_TRANSLATIONS = {"hatexplain": "tiseval-hatexplain", "toxicspans": "tiseval-toxicspans"}


def trusteval_dataset(raw: str) -> str:
    """The dataset a TrustEval benchmark runs for `raw`: `hatexplain[?...]` -> `tiseval-hatexplain[?...]`."""
    head, sep, query = raw.strip().partition("?")
    return TRUSTEVAL_TRANSLATIONS.get(head, head) + sep + query
