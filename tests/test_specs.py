from __future__ import annotations

import pytest

from trusteval.errors import UsageError
from trusteval.models import BACKENDS, ModelSpec, check_spec, hf
from trusteval.options import read_spec_options
from trusteval.records import GenerationParams, Request
from trusteval.specs import Spec


def test_spec_parses_kind_name_and_options():
    spec = Spec.parse("hf:Qwen/Qwen2-0.5B?dtype=bfloat16&batch_size=8")
    assert (spec.kind, spec.name) == ("hf", "Qwen/Qwen2-0.5B")
    assert spec.options == {"dtype": "bfloat16", "batch_size": "8"}
    assert read_spec_options(hf.Options, spec).batch_size == 8


def test_identity_keeps_output_options_and_drops_operational_ones():
    a = ModelSpec.parse("openai:gpt-x?base_url=http://127.0.0.1:1/v1&concurrency=4&system=be+nice")
    b = ModelSpec.parse("openai:gpt-x?system=be+nice&base_url=http://127.0.0.1:2/v1")
    assert a.identity == b.identity == "openai:gpt-x?system=be+nice"


def test_an_option_given_twice_is_refused_not_silently_last_wins():
    # a dict kept the last value: the first replica of `base_url=a&base_url=b` was dropped without a word
    with pytest.raises(UsageError, match="option 'base_url' is given twice") as caught:
        Spec.parse("openai:m?base_url=http://127.0.0.1:1/v1&concurrency=4&base_url=http://127.0.0.1:2/v1")
    assert "127.0.0.1" not in str(caught.value)  # names the option, not its values
    replicas = Spec.parse("openai:m?base_url=http://127.0.0.1:1/v1,http://127.0.0.1:2/v1")
    assert replicas.options["base_url"] == "http://127.0.0.1:1/v1,http://127.0.0.1:2/v1"


def test_default_alias_names_the_embedded_model():
    identity = ModelSpec.parse("default").identity
    assert identity.startswith("llamacpp:smollm2?sha256=") and identity == ModelSpec.parse("smollm2").identity


@pytest.mark.parametrize("raw", ["gpt2", "hf:", ":x", "hf:x?a"])
def test_malformed_specs_are_usage_errors(raw):
    with pytest.raises(UsageError):
        ModelSpec.parse(raw)


def test_unknown_backend_suggests_the_closest_name():
    with pytest.raises(UsageError, match="Did you mean 'openai'"):
        check_spec("opena:gpt-4o")
    assert {"hf", "llamacpp", "openai", "replay"} <= set(BACKENDS.names())


def test_bad_option_type_names_the_option():
    with pytest.raises(UsageError, match="batch_size"):
        read_spec_options(hf.Options, Spec.parse("hf:x?batch_size=many"))


def test_request_key_depends_on_model_messages_params_and_seed():
    params = GenerationParams()
    base = Request.build("m", (("user", "hi"),), params, 42)
    assert base.key == Request.build("m", (("user", "hi"),), params, 42).key
    others = [
        Request.build("m2", (("user", "hi"),), params, 42),
        Request.build("m", (("user", "hi!"),), params, 42),
        Request.build("m", (("user", "hi"),), GenerationParams(temperature=0.0), 42),
        Request.build("m", (("user", "hi"),), params, 43),
    ]
    assert len({base.key, *(o.key for o in others)}) == 5
