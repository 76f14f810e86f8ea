"""Scorer bias control (issue 10, point 1): group swapping, the scorer's own disparity against scipy, and a
replay model whose answers differ only in the group word coming out flagged as scorer-induced (real CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from helpers import run_cli
from trusteval.metrics.scorer_bias import builtin_families, control, control_flags, response_families
from trusteval.scorers.identity import groups_for, mask_groups, swap_copies

GROUPS = {"GENDER": ["female", "male"], "RACE": ["white", "black", "asian"], "RELIGION": ["christian", "jew", "muslim"]}


def test_swapping_keeps_form_and_case_and_whole_words():
    terms = groups_for("en", GROUPS)
    (copies,) = swap_copies("Jews and a Jewish friend; jewelry stays", "en", terms)
    assert copies == {"christian": "Christians and a Christian friend; jewelry stays",
                      "jew": "Jews and a Jewish friend; jewelry stays",
                      "muslim": "Muslims and a Muslim friend; jewelry stays"}  # fmt: skip
    assert swap_copies("the women and girls", "en", terms) == [
        {"female": "the women and girls", "male": "the men and boys"}
    ]
    assert swap_copies("nothing here; manhattan, blackboard", "en", terms) == []
    both = swap_copies("黑人和女性", "zh", groups_for("zh"))
    assert [set(c) for c in both] == [{"黑人", "白人", "黄种人"}, {"女性", "男性"}]
    assert both[1]["男性"] == "黑人和男性"
    assert mask_groups("A Black woman", "en") == "A grouptoken grouptoken"


def test_disparity_on_copies_matches_numpy_and_scipy():
    terms = groups_for("en", GROUPS)
    families = response_families(["a jew said hi", "the muslim said hi", "a man waved"], "en", terms)
    families += builtin_families("en", terms)
    rng = np.random.default_rng(0)
    value = {t: float(rng.random()) for f in families for t in f.texts.values()}
    found = control(families, value, GROUPS, resamples=200)
    religion = [f for f in families if f.group_type == "RELIGION" and f.source == "response"]
    columns = {g: [value[f.texts[g]] for f in religion] for g in GROUPS["RELIGION"]}
    means = [np.mean(v) for v in columns.values()]
    got = found["responses"]["by_type"]["RELIGION"]
    assert got["families"] == 2 and got["std"] == pytest.approx(np.std(means))
    assert got["delta"] == pytest.approx(max(means) - min(means))
    pair = next(p for p in found["responses"]["pairs"] if (p["first"], p["second"]) == ("christian", "jew"))
    assert pair["p"] == pytest.approx(mannwhitneyu(columns["christian"], columns["jew"]).pvalue)
    assert found["builtin"]["by_type"]["RACE"]["families"] == 15  # 10 neutral + 5 toxic sentences
    flags = control_flags(found, {"RELIGION": 10.0}, {})
    assert next(f for f in flags if f["disparity"] == "std RELIGION")["scorer_induced"] is False


def _replay_answers(folder: Path, data_dir: Path, norms: int) -> Path:
    """One harmless sentence for every prompt, changing only the group word."""
    from trusteval.benchmarks import BENCHMARKS
    from trusteval.config import RunSpec
    from trusteval.data.sources import DataContext

    placeholder = folder / "placeholder.jsonl"  # a replay model's identity hashes its file: it must exist
    placeholder.write_text('{"prompt": "p", "response": "r"}\n', "utf-8")
    spec = RunSpec(
        benchmark="trustgpt-bias", models=[f"replay:{placeholder}"], seeds=[42], options={"norms": str(norms)}
    )
    plan = BENCHMARKS.get("trustgpt-bias")(spec).plan(DataContext(data_dir=data_dir))
    rows = {
        item.request.messages[-1][1]: f"As a {item.prompt.attributes['group']}, I would just say hello to my "
        "neighbours and help them carry their shopping."
        for item in plan.items
    }
    path = folder / "answers.jsonl"
    path.write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in rows.items()))
    return path


@pytest.mark.parametrize("scorer", ["en-tfidf?groups=raw", "en-tfidf"])
def test_identical_answers_are_flagged_scorer_induced(scorer, tmp_path, data_dir, cache_dir):
    answers = _replay_answers(tmp_path, data_dir, norms=4)
    result = run_cli("run", "--benchmark", "trustgpt-bias", "--model", f"replay:{answers}", "--seeds", "42",
                     "--option", "norms=4", "--scorer", scorer, "--store", tmp_path / "ws", "--cache-dir",
                     cache_dir, "--json", "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    model = next(iter(result.json()["metrics"]["models"].values()))
    flags = model["scorer_control"]["flags"]
    assert len(flags) == 3 + 1 + 3 + 3  # std per type, then every pair within a type
    assert all(f["scorer_induced"] is True and f["basis"] == "responses" for f in flags), flags
    if scorer.endswith("raw"):  # the unmasked detector reacts to the group word: a real "disparity"
        assert model["std_by_type"]["RELIGION"] > 0.02
    else:  # group terms masked: the same sentence gets the same score whatever the group
        assert model["std_by_type"]["RELIGION"] == pytest.approx(0.0, abs=1e-9)
    tables = run_cli("report", "--store", tmp_path / "ws")
    assert tables.returncode == 0, tables.stderr[-2000:]
    assert "Scorer bias control" in tables.stdout and "SCORER-INDUCED" in tables.stdout
