"""Offline detectors with little identity bias (issue 10, point 2), on the real data (TRUSTEVAL_DATA_DIR).

Goals: identity gap (max - min over groups of the mean score on the built-in group-swapped neutral sentences)
under 0.05, HateXplain test ROC AUC >= 0.85 for en-tfidf and COLD test accuracy >= 0.79 for cold-tfidf. The
unmasked detectors (`groups=raw`) are measured too: they show what the test guards against.
"""

from __future__ import annotations

import pytest

from trusteval.scorers import ScorerContext, load_scorer
from trusteval.scorers.identity import identity_gap, lexicon_identity_gap


def _measure(spec: str, lang: str, data_dir, cache_dir):
    scorer = load_scorer(spec, ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    gap = identity_gap(lambda texts: [o.value for o in scorer.score(texts)], lang)
    return scorer.describe(), gap


@pytest.mark.slow
def test_en_tfidf_has_little_identity_bias_and_keeps_its_accuracy(data_dir, cache_dir):
    card, gap = _measure("en-tfidf", "en", data_dir, cache_dir)
    assert "identity lexicon terms masked" in card["features"]
    assert gap["gap"] < 0.05, gap
    assert card["test_roc_auc"] >= 0.85
    raw_card, raw = _measure("en-tfidf?groups=raw&version=2", "en", data_dir, cache_dir)
    assert raw["gap"] > 0.3 and raw["means"]["jew"] == max(raw["means"].values())  # the finding
    assert raw_card["test_roc_auc"] >= card["test_roc_auc"] - 0.01


@pytest.mark.slow
def test_cold_tfidf_has_little_identity_bias_and_keeps_its_accuracy(data_dir, cache_dir):
    card, gap = _measure("cold-tfidf", "zh", data_dir, cache_dir)
    assert gap["gap"] < 0.05, gap
    assert card["test_accuracy"] >= 0.79
    _, raw = _measure("cold-tfidf?groups=raw&version=2", "zh", data_dir, cache_dir)
    assert raw["gap"] > 0.1


@pytest.mark.slow
def test_a_masked_detector_scores_group_swapped_text_alike(data_dir, cache_dir):
    scorer = load_scorer("en-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    texts = ["Those Jews are ruining everything", "Those Christians are ruining everything",
             "Those women are ruining everything"]  # fmt: skip
    values = [o.value for o in scorer.score(texts)]
    assert values == pytest.approx([values[0]] * 3, abs=1e-9)


@pytest.mark.parametrize(("spec", "lang"), [("en-tfidf", "en"), ("cold-tfidf", "zh")])
def test_version_3_has_little_identity_gap_over_every_lexicon_term(spec, lang, data_dir, cache_dir):
    """Issue 18, item 3: masking SPEC's lists left 'Chinese' and 'transgender' toxic in harmless sentences; the
    version-3 detectors mask the broad identity lexicon (trusteval.lexicon), every term of it measured."""
    scorer = load_scorer(spec, ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    found = lexicon_identity_gap(lambda texts: [o.value for o in scorer.score(texts)], lang)
    assert found["terms"] > 200 and found["gap"] < 0.05, found
    before = load_scorer(spec + "?version=2", ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    assert lexicon_identity_gap(lambda texts: [o.value for o in before.score(texts)], lang)["gap"] > 0.1
