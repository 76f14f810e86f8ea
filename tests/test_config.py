from __future__ import annotations

import pytest

from trusteval.config import RunSpec, build_run_spec
from trusteval.errors import UsageError


def test_defaults_follow_the_paper():
    spec = build_run_spec({"benchmark": "trusteval-toxicity"}, env={})
    assert (spec.temperature, spec.top_p, spec.max_new_tokens) == (0.7, 0.9, 512)
    assert spec.seeds == [42, 43, 44]
    assert spec.models == ["default"]


def test_each_paper_has_its_own_default_seeds():
    assert build_run_spec({"benchmark": "trusteval-bias"}, env={}).seeds == [42, 43, 44]
    assert build_run_spec({"benchmark": "trustgpt-ava"}, env={}).seeds == [42]
    assert build_run_spec({"benchmark": "trustgpt-ava", "seeds": ["1", "2"]}, env={}).seeds == [1, 2]


def test_precedence_is_file_then_env_then_flags(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("benchmark: trusteval-toxicity\nlimit: 5\nconcurrency: 2\nstore: from-file\n")
    env = {"TRUSTEVAL_LIMIT": "7", "TRUSTEVAL_STORE": "from-env"}
    spec = build_run_spec({"store": "from-flag"}, spec_file=path, env=env)
    assert (spec.limit, spec.concurrency, spec.store) == (7, 2, "from-flag")


def test_unknown_yaml_key_names_file_line_and_suggestion(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("benchmark: trusteval-toxicity\nlimit: 5\ntemprature: 0.1\n")
    with pytest.raises(UsageError, match=r"run\.yaml', line 3, key 'temprature': unknown key.*temperature"):
        build_run_spec({}, spec_file=path, env={})


def test_wrong_type_names_its_source(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("benchmark: trusteval-toxicity\nseeds: [42, many]\n")
    with pytest.raises(UsageError, match="line 2, key 'seeds'"):
        build_run_spec({}, spec_file=path, env={})
    with pytest.raises(UsageError, match="flag --limit"):
        build_run_spec({"benchmark": "b", "limit": "zero"}, env={})
    with pytest.raises(UsageError, match="TRUSTEVAL_TOP_P"):
        build_run_spec({"benchmark": "b"}, env={"TRUSTEVAL_TOP_P": "2"})


def test_run_id_ignores_operational_fields():
    a = build_run_spec({"benchmark": "b", "store": "x", "concurrency": 3}, env={})
    b = build_run_spec({"benchmark": "b", "store": "y", "concurrency": 9}, env={})
    c = build_run_spec({"benchmark": "b", "limit": 4}, env={})
    assert a.run_id == b.run_id != c.run_id


def test_template_must_hold_the_prompt():
    with pytest.raises(UsageError, match="must contain"):
        build_run_spec({"benchmark": "b", "template": "no slot"}, env={})


def test_broken_yaml_is_reported_with_its_line(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("benchmark: x\nlimit: [1,\n")
    with pytest.raises(UsageError, match="not valid YAML"):
        build_run_spec({}, spec_file=path, env={})


def test_a_run_stored_before_a_bound_existed_stays_readable():
    from pydantic import ValidationError

    from trusteval.config import stored_spec

    stored = RunSpec(benchmark="trusteval-toxicity").model_dump() | {"concurrency": 20_000}
    with pytest.raises(ValidationError):
        RunSpec.model_validate(stored)
    spec = stored_spec(stored)
    assert spec.concurrency == 20_000 and spec.run_id == RunSpec(benchmark="trusteval-toxicity").run_id
