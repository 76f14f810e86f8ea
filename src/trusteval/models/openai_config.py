"""The options of an `openai:<model>?...` spec read into an `OpenAIConfig` (`trusteval.models.openai`): base URLs
(one per replica), the API key from the injected environment, timeouts, concurrency, retries and `sampling`."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from trusteval.errors import BackendError, UsageError
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.models.openai_pool import host_of, public_url
from trusteval.options import PluginOptions, read_spec_options
from trusteval.untrusted import redact
from trusteval.util.limits import MAX_CONCURRENCY, MAX_RETRIES, MAX_TIMEOUT_S

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
KNOWN_OPTIONS = frozenset(
    {"base_url", "api_key_env", "timeout", "concurrency", "max_retries", "backoff_base", "backoff_max", "sampling"}
)
# Every option but `sampling` changes how requests are sent, not what is asked: the identity is
# `openai:<model>` (plus `sampling=neutral` when given), so moving a server to another URL or raising
# concurrency reuses stored answers and keeps the run id.
OPERATIONAL_OPTIONS = KNOWN_OPTIONS - {"sampling"}
MAX_REPLICAS = 64


@dataclass(frozen=True)
class OpenAIConfig:
    model: str
    base_urls: tuple[str, ...]
    api_key_env: str
    api_key: str | None = field(repr=False)
    timeout_s: float
    concurrency: int  # per base URL
    max_retries: int
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    sampling: str = "standard"

    @property
    def base_url(self) -> str:
        """The first (with one URL, the only) base URL."""
        return self.base_urls[0]

    @property
    def public_url(self) -> str:
        """The base URLs without user:password, query or fragment, for messages."""
        return ",".join(public_url(url) for url in self.base_urls)

    @property
    def host(self) -> str:
        return ",".join(host_of(url) for url in self.base_urls)


def is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_base_urls(spec: ModelSpec) -> tuple[str, ...]:
    """The comma-separated base URLs of `base_url`, each an http(s) URL, at most MAX_REPLICAS, no repeats."""
    urls = tuple(url.strip().rstrip("/") for url in (spec.option("base_url") or DEFAULT_BASE_URL).split(","))
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise UsageError(
                f"spec '{spec.shown}': base_url must be an http(s) URL such as http://127.0.0.1:8000/v1, "
                "or several separated by commas"
            )
    if len(set(urls)) != len(urls):
        raise UsageError(f"spec '{spec.shown}': base_url lists the same URL twice")
    if len(urls) > MAX_REPLICAS:
        raise UsageError(f"spec '{spec.shown}': base_url lists {len(urls)} URLs; at most {MAX_REPLICAS}")
    return urls


def read_api_key(base_url: str, api_key_env: str, env: Mapping[str, str]) -> str | None:
    """The key from the injected environment; None when no key is needed. Missing but needed: BackendError."""
    if not api_key_env:
        return None
    key = env.get(api_key_env) or None
    if key is None and not is_loopback(base_url):
        raise BackendError(
            f"openai: no API key for {urlsplit(base_url).hostname}: "
            f"set the environment variable {api_key_env} "
            "(or name another one with ?api_key_env=NAME, or ?api_key_env= for a server without keys)"
        )
    return key


class Options(PluginOptions):
    """The options of `openai:MODEL?...` (all operational: see KNOWN_OPTIONS)."""

    base_url: str | None = Field(
        None, description=f"the server's /v1 URL, or comma-separated replicas' URLs (default {DEFAULT_BASE_URL})"
    )
    api_key_env: str | None = Field(
        None, description=f"environment variable holding the key (default {DEFAULT_API_KEY_ENV}; empty: no key)"
    )
    # the run configuration's bounds (trusteval.config) hold for the same options given in a spec
    timeout: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT_S, description="seconds per request (default: the run's --timeout)"
    )
    concurrency: int | None = Field(
        None, ge=1, le=MAX_CONCURRENCY, description="requests in flight (default: the run's setting)"
    )
    max_retries: int | None = Field(
        None, ge=0, le=MAX_RETRIES, description="retries per request (default: the run's setting)"
    )
    backoff_base: float = Field(0.5, ge=0, description="first retry delay in seconds, doubled per retry")
    backoff_max: float = Field(30.0, ge=0, description="longest retry delay in seconds")
    sampling: Literal["standard", "neutral", "llamacpp"] = Field(
        "standard",
        description="neutral: also send top_k=-1, min_p=0, repetition_penalty=1 (vLLM, SGLang), as the hf backend "
        "samples; llamacpp: top_k=40, min_p=0.05, repeat_penalty=1 under llama.cpp server's names, as the llamacpp "
        "backend samples; standard: only OpenAI API parameters, the rest is the server default (part of the identity)",
    )


def read_config(spec: ModelSpec, settings: BackendSettings) -> OpenAIConfig:
    options = read_spec_options(Options, spec)
    base_urls = read_base_urls(spec)
    api_key_env = DEFAULT_API_KEY_ENV if options.api_key_env is None else options.api_key_env
    api_key = None
    for url in base_urls:  # the same key for every replica; needed unless every one is on a loopback address
        api_key = read_api_key(url, api_key_env, settings.env)
    for url in base_urls:
        where = redact.credential_in_url(url, [api_key])
        if where:
            raise UsageError(f"spec '{spec.shown}': base_url must not hold the API key ({where} holds it)")
    return OpenAIConfig(
        model=spec.name,
        base_urls=base_urls,
        api_key_env=api_key_env,
        api_key=api_key,
        timeout_s=settings.timeout_s if options.timeout is None else options.timeout,
        concurrency=settings.concurrency if options.concurrency is None else options.concurrency,
        max_retries=settings.max_retries if options.max_retries is None else options.max_retries,
        backoff_base_s=options.backoff_base,
        backoff_max_s=options.backoff_max,
        sampling=options.sampling,
    )
