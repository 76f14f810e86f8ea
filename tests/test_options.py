"""Declarative options (issue 12): every registered backend, scorer, dataset and benchmark reads its options
through one pydantic model (trusteval.options), so all refuse an unknown name with a did-you-mean, report a bad
value in one line naming the plugin and the option, read booleans the same way, and print their help from the
model (`trusteval options KIND NAME`)."""

from __future__ import annotations

import pytest

from trusteval import cli
from trusteval.benchmarks import BENCHMARKS
from trusteval.config import RunSpec
from trusteval.data import DATASETS
from trusteval.errors import UsageError
from trusteval.models import BACKENDS
from trusteval.options import (
    FALSE_WORDS,
    TRUE_WORDS,
    PluginOptions,
    options_help,
    options_model,
    parse_options,
    read_spec_options,
)
from trusteval.registry import Registry
from trusteval.scorers import SCORERS, ScorerContext, load_scorer
from trusteval.specs import Spec

REGISTRIES: dict[str, Registry] = {"backend": BACKENDS, "scorer": SCORERS, "dataset": DATASETS,
                                   "benchmark": BENCHMARKS}  # fmt: skip
PLUGINS = [(kind, name) for kind, registry in REGISTRIES.items() for name in registry.names()]


def model_of(kind: str, name: str) -> type[PluginOptions]:
    model = options_model(REGISTRIES[kind].get(name))
    assert model is not None, f"{kind} {name}: declare `class Options(PluginOptions)` in its module"
    return model


def fields_of(kind: str) -> list[tuple[str, str, str]]:
    """(plugin name, field, annotation) for every field of every plugin of one kind."""
    found = []
    for plugin_kind, name in PLUGINS:
        if plugin_kind == kind:
            found += [(name, field, str(info.annotation)) for field, info in model_of(kind, name).model_fields.items()]
    return found


@pytest.mark.parametrize(("kind", "name"), PLUGINS)
def test_every_plugin_declares_a_described_options_model(kind: str, name: str) -> None:
    model = model_of(kind, name)
    for field, info in model.model_fields.items():
        assert info.description, f"{kind} {name}: option '{field}' has no description"
    text = options_help(model, f"{kind} {name}")
    lines = text.splitlines()
    for field in model.model_fields:
        [line] = [line for line in lines if line.startswith(f"  {field} (")]
        assert ", default " in line, line


@pytest.mark.parametrize(("kind", "name"), PLUGINS)
def test_every_plugin_refuses_an_unknown_option_with_a_did_you_mean(kind: str, name: str) -> None:
    model = model_of(kind, name)
    with pytest.raises(UsageError, match=rf"^{name}: unknown option 'bogus_option'\. Known: ") as error:
        parse_options(model, {"bogus_option": "secret-value"}, name)
    assert "secret-value" not in str(error.value), "an unknown option's value may be a key: never echo it"
    for field in model.model_fields:
        typo = field + "x"
        with pytest.raises(UsageError, match=rf"unknown option '{typo}'\. Did you mean '{field}'\?"):
            parse_options(model, {typo: "1"}, name)


def _bad_values(annotation: str) -> list[str]:
    if "bool" in annotation:
        return ["maybe"]
    if "int" in annotation:
        return ["many", "1.5", "-1"]
    if "float" in annotation:
        return ["many", "nan", "-1"]
    if "Literal" in annotation:
        return ["no-such-choice"]
    return []


def _bounded_below(model: type[PluginOptions], field: str) -> bool:
    return any(getattr(item, "ge", None) is not None or getattr(item, "gt", None) is not None
               for item in model.model_fields[field].metadata)  # fmt: skip


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_a_bad_value_is_one_line_naming_plugin_and_option(kind: str) -> None:
    checked = 0
    for name, field, annotation in fields_of(kind):
        model = model_of(kind, name)
        for value in _bad_values(annotation):
            if value == "-1" and not _bounded_below(model, field):
                continue  # an unbounded number takes -1
            with pytest.raises(UsageError) as error:
                parse_options(model, {field: value}, f"{kind} {name}")
            message = str(error.value)
            assert message.startswith(f"{kind} {name}: option '{field}' must be "), message
            assert f"not '{value}'" in message and "\n" not in message, message
            checked += 1
    assert checked, f"no typed option among the {kind}s"


def test_bounds_and_choices_name_what_is_allowed() -> None:
    hf = model_of("scorer", "hf")
    with pytest.raises(UsageError, match=r"option 'threshold' must be a number between 0 and 1, not '1.5'$"):
        parse_options(hf, {"threshold": "1.5"}, "hf")
    with pytest.raises(UsageError, match=r"option 'batch_size' must be a whole number >= 1, not '0'$"):
        parse_options(hf, {"batch_size": "0"}, "hf")
    bias = model_of("benchmark", "trustgpt-bias")
    with pytest.raises(UsageError, match=r"must be one of literal, auto, not 'autto'\. Did you mean 'auto'\?"):
        parse_options(bias, {"article": "autto"}, "trustgpt-bias")
    openai = model_of("backend", "openai")
    with pytest.raises(UsageError, match=r"option 'timeout' must be a number > 0 and <= 86400, not '0'$"):
        parse_options(openai, {"timeout": "0"}, "openai")


FLAGS = [(kind, name, field) for kind in REGISTRIES for name, field, a in fields_of(kind) if "bool" in a]


def test_there_are_flags_of_several_kinds() -> None:
    assert {kind for kind, _, _ in FLAGS} >= {"backend", "scorer", "benchmark"}, FLAGS


@pytest.mark.parametrize(("kind", "name", "field"), FLAGS)
def test_booleans_read_the_same_words_everywhere(kind: str, name: str, field: str) -> None:
    model = model_of(kind, name)
    for word in (*TRUE_WORDS, *(w.upper() for w in TRUE_WORDS)):
        assert getattr(parse_options(model, {field: word}, name), field) is True, word
    for word in (*FALSE_WORDS, *(w.capitalize() for w in FALSE_WORDS)):
        assert getattr(parse_options(model, {field: word}, name), field) is False, word
    with pytest.raises(UsageError, match=rf"option '{field}' must be true or false \(also on/off, yes/no, 1/0\)"):
        parse_options(model, {field: "maybe"}, name)


def test_on_and_off_reach_a_benchmark_and_a_backend_through_their_real_entry(tmp_path) -> None:
    """Before issue 12, TrustGPT's holm accepted true/false/yes/no/1/0 but not on/off, while specs took both."""
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"prompt": "p", "response": "r"}\n', "utf-8")
    base = {"models": [f"replay:{answers}"], "seeds": [1]}
    bias = BENCHMARKS.get("trustgpt-bias")(RunSpec(benchmark="trustgpt-bias", options={"holm": "on"}, **base))
    assert bias.holm is True
    trusteval_bias = BENCHMARKS.get("trusteval-bias")(
        RunSpec(benchmark="trusteval-bias", options={"include_non_attribute": "ON"}, **base)
    )
    assert trusteval_bias.include_non_attribute is True
    llamacpp = model_of("backend", "llamacpp")
    assert read_spec_options(llamacpp, Spec.parse("llamacpp:smollm2?extra_bufts=off")).extra_bufts is False


def test_scorer_errors_come_through_load_scorer_in_one_line(tmp_path) -> None:
    context = ScorerContext(cache_dir=tmp_path)
    with pytest.raises(UsageError) as error:
        load_scorer("en-tfidf?treshold=0.4", context)
    assert str(error.value) == (
        "spec 'en-tfidf?treshold=...': unknown option 'treshold'. Did you mean 'threshold'? "
        "Known: data, groups, refusal, threshold, version"
    )
    with pytest.raises(UsageError, match=r"^spec 'cold-tfidf\?threshold=\.\.\.': option 'threshold' must be a "):
        load_scorer("cold-tfidf?threshold=high", context)


def test_a_benchmark_option_that_is_a_run_flag_points_to_the_flag(tmp_path) -> None:
    spec = RunSpec(benchmark="trusteval-toxicity", models=["replay:x"], seeds=[1], options={"limt": "5"})
    with pytest.raises(UsageError, match=r"unknown option 'limt'\. Did you mean '--limit'\? \(a run flag"):
        BENCHMARKS.get("trusteval-toxicity")(spec)


def test_a_check_across_options_is_one_line_naming_the_benchmark() -> None:
    spec = RunSpec(benchmark="trustgpt-ava", models=["replay:x"], seeds=[1], options={"norms": "3", "per_label": "1"})
    with pytest.raises(UsageError, match=r"^trustgpt-ava: options norms and per_label exclude each other"):
        BENCHMARKS.get("trustgpt-ava")(spec)


def test_a_prefixed_option_family_passes_to_its_plugin() -> None:
    hatexplain = model_of("dataset", "hatexplain")
    assert parse_options(hatexplain, {"map.Women": "gender", "split": "train"}, "hatexplain").split == "train"
    assert "map.* (text)" in options_help(hatexplain, "hatexplain")


def test_openai_options_model_lists_exactly_its_operational_options() -> None:
    """Every openai option but `sampling` (it changes the answers) is operational (not in the identity): a new
    option must be added to both lists."""
    from trusteval.models import openai

    assert set(openai.Options.model_fields) == set(openai.KNOWN_OPTIONS)
    assert set(openai.KNOWN_OPTIONS) - set(openai.OPERATIONAL_OPTIONS) == {"sampling"}


@pytest.mark.parametrize(("kind", "name"), [("backend", "llamacpp"), ("scorers", "en-tfidf"), ("dataset", "file"),
                                            ("benchmark", "trustgpt-bias")])  # fmt: skip
def test_the_options_command_prints_every_field(capsys, kind: str, name: str) -> None:
    assert cli.main(["options", kind, name]) == 0
    out = capsys.readouterr().out
    model = model_of(kind.rstrip("s"), name)
    assert all(f"  {field} (" in out for field in model.model_fields), out
    assert out.count(" options:") == 1


def test_the_options_command_lists_a_whole_kind_and_refuses_an_unknown_name(capsys) -> None:
    assert cli.main(["options", "scorer"]) == 0
    out = capsys.readouterr().out
    assert all(f"scorer {name}" in out for name in SCORERS.names()), out
    assert "scorer keywords-exact: takes no options" in out
    assert cli.main(["options", "backend", "llamacp"]) == 2
    assert "Did you mean 'llamacpp'?" in capsys.readouterr().err
