"""Agreement statistics for judge validation (Table 9) against scipy, sklearn, statsmodels and Shrout & Fleiss."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

import references
from trusteval.metrics.agreement import (
    cohen_kappa,
    fleiss_kappa,
    icc,
    judge_validation,
    majority,
    pearson,
    spearman,
    validation_from_dict,
)

# Shrout & Fleiss (1979), Table 2: six targets rated by four judges, and their published ICCs.
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])


@pytest.mark.parametrize(("form", "published"), [("ICC(1,1)", 0.17), ("ICC(2,1)", 0.29), ("ICC(3,1)", 0.71)])
def test_icc_reproduces_shrout_and_fleiss(form, published):
    assert icc(SHROUT_FLEISS, form) == pytest.approx(published, abs=0.005)


def test_icc_is_undefined_without_variance_or_with_one_rater():
    assert np.isnan(icc(np.ones((5, 3))))
    assert np.isnan(icc(np.arange(5.0)[:, None]))
    assert icc(np.array([[1, 1, 1], [0, 0, 0], [1, 1, 1]])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="ICC"):
        icc(SHROUT_FLEISS, "ICC(9,9)")


def test_correlations_match_the_references_including_ties():
    # pearson and spearman call scipy's pearsonr and rankdata: the references are tests/references.py's sums
    rng = np.random.default_rng(0)
    for n in (3, 8, 40):
        x = rng.integers(0, 4, n).astype(float)
        y = x + rng.normal(0, 1.5, n)
        for ours, (r, p) in ((pearson(x, y), references.pearson_r_p(list(x), list(y))),
                             (spearman(x, y), references.spearman_r_p(list(x), list(y)))):  # fmt: skip
            assert ours.r == pytest.approx(r, abs=1e-12)
            assert ours.p_value == pytest.approx(p, rel=1e-6)
            assert ours.n == n


def test_spearman_gives_tied_values_their_average_rank():
    # worked: ranks [2, 3.5, 3.5, 1] against [1, 2, 3, 4]; centred [-0.5, 1, 1, -1.5] and [-1.5, -0.5, 0.5, 1.5]:
    # sum of products 0.75 + -0.5 + 0.5 + -2.25 = -1.5, sums of squares 4.5 and 5 -> r = -1.5 / sqrt(22.5)
    tied = spearman([10, 20, 20, 5], [1, 2, 3, 4])
    assert tied.r == pytest.approx(-1.5 / np.sqrt(22.5), abs=1e-12)


def test_correlation_of_a_constant_is_undefined():
    found = pearson([1, 1, 1, 1], [0, 1, 0, 1])
    assert np.isnan(found.r) and np.isnan(found.p_value)


def test_cohen_kappa_matches_the_reference():
    # cohen_kappa calls sklearn's cohen_kappa_score: the reference counts agreements itself
    rng = np.random.default_rng(1)
    for _ in range(10):
        a = rng.integers(0, 2, 30)
        b = np.where(rng.random(30) < 0.7, a, 1 - a)
        assert cohen_kappa(a, b) == pytest.approx(references.cohen_kappa(list(a), list(b)), abs=1e-12)
    # worked: 10 items, 8 agree (po 0.8); a has 6 ones, b has 4 ones: pe = 0.6*0.4 + 0.4*0.6 = 0.48
    a = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0])
    b = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    assert cohen_kappa(a, b) == pytest.approx((0.8 - 0.48) / 0.52)


def test_cohen_kappa_is_undefined_when_both_raters_use_one_label():
    assert np.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))


def test_fleiss_kappa_matches_statsmodels():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 2, 60)
    ratings = np.column_stack([np.where(rng.random(60) < q, truth, 1 - truth) for q in (0.9, 0.8, 0.75)])
    table, _ = aggregate_raters(ratings)
    assert fleiss_kappa(ratings) == pytest.approx(statsmodels_fleiss(table, method="fleiss"), abs=1e-12)
    assert np.isnan(fleiss_kappa(ratings[:, :1]))


def test_majority_leaves_ties_and_missing_undecided():
    found = majority(np.array([[1, 1, 0], [0, 0, 1], [1, 0, np.nan], [np.nan, np.nan, np.nan]]))
    assert found[0] == 1.0 and found[1] == 0.0 and np.isnan(found[2]) and np.isnan(found[3])


def test_judge_validation_uses_each_reference_on_the_right_vectors():
    judge = np.array([[1, 1, 1], [0, 0, 1], [1, np.nan, 1], [np.nan, np.nan, np.nan], [0, 0, 0], [1, 1, 0]])
    humans = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1], [1, 1, 0], [0, 1, 0], [0, 1, 1]])
    found = judge_validation(judge, humans)
    judged = [0, 1, 2, 4, 5]  # pair 3 has no parsed judgement
    judge_mean = np.array([1, 1 / 3, 1, 0, 2 / 3])
    human_mean = humans.mean(axis=1)[judged]
    assert (found.unparsed_judgements, found.pairs_without_judgement) == (4, 1)
    assert found.spearman.r == pytest.approx(references.spearman_r_p(list(judge_mean), list(human_mean))[0])
    assert found.pearson.r == pytest.approx(references.pearson_r_p(list(judge_mean), list(human_mean))[0])
    # first repeat against the human majority, on pairs where both exist: pairs 0, 1, 2, 4, 5
    first, human_majority = np.array([1, 0, 1, 0, 1]), np.array([1, 0, 1, 0, 1])
    assert found.agreement_pairs == 5 and found.agreement == pytest.approx(100.0)
    assert found.cohen_kappa == pytest.approx(references.cohen_kappa(list(first), list(human_majority)))
    table, _ = aggregate_raters(humans)
    assert found.fleiss_kappa == pytest.approx(statsmodels_fleiss(table))
    complete = judge[[0, 1, 4, 5]]
    assert found.icc_pairs == 4 and found.icc == pytest.approx(icc(complete, "ICC(2,1)"))
    assert validation_from_dict(found.as_dict()) == found


def test_judge_label_majority_uses_the_repeats():
    judge = np.array([[0, 1, 1], [1, 0, 0], [1, 0, np.nan]])
    humans = np.array([[1], [0], [1]])
    first = judge_validation(judge, humans, judge_label="first")
    most = judge_validation(judge, humans, judge_label="majority")
    assert (first.agreement, first.agreement_pairs) == (pytest.approx(100 / 3), 3)
    assert (most.agreement, most.agreement_pairs) == (pytest.approx(100.0), 2)  # pair 2 is a tie
    assert np.isnan(first.fleiss_kappa)  # one annotator
    with pytest.raises(ValueError, match="judge_label"):
        judge_validation(judge, humans, judge_label="best")
