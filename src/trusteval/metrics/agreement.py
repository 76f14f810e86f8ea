"""Agreement between raters, for validating an LLM judge against people (TrustEval Table 9).

- Pearson r and Spearman rho (Pearson on average ranks), two-sided p-values from the t distribution with
  n - 2 degrees of freedom (scipy's pearsonr / spearmanr are the references);
- Cohen's kappa between two label vectors (sklearn's cohen_kappa_score is the reference);
- Fleiss' kappa among several raters who each label every item (statsmodels' fleiss_kappa is the reference);
- the intraclass correlations of Shrout & Fleiss (1979) from a two-way ANOVA of an (items x raters) matrix:
  ICC(1,1), ICC(2,1) and ICC(3,1) (checked against the paper's worked example).

Every function returns NaN with no exception when the statistic is undefined (constant input, too few items),
and the callers say why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

ICC_FORMS = ("ICC(1,1)", "ICC(2,1)", "ICC(3,1)")


@dataclass(frozen=True)
class Correlation:
    r: float
    p_value: float
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


def pearson(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """scipy's `pearsonr` (two-sided p from the t distribution); NaN when n < 2 or a side is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    nan = float("nan")
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return Correlation(nan, nan, int(x.size))
    from scipy.stats import pearsonr

    found = pearsonr(x, y)
    p = float(found.pvalue) if x.size > 2 else nan  # two points always lie on a line: no test
    return Correlation(float(found.statistic), p, int(x.size))


def spearman(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Pearson's r of the ranks (ties share the mean of the ranks they span), as scipy's `spearmanr`."""
    if len(x) < 2:
        return Correlation(float("nan"), float("nan"), len(x))
    from scipy.stats import rankdata

    return pearson(rankdata(np.asarray(x, dtype=float)), rankdata(np.asarray(y, dtype=float)))


def percent_agreement(a: Sequence[int], b: Sequence[int]) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(100.0 * np.mean(a == b)) if a.size else float("nan")


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """sklearn's `cohen_kappa_score`: (p_o - p_e) / (1 - p_e), p_e from each rater's own label frequencies;
    NaN when p_e = 1 (both raters always give the same single label)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return float("nan")
    labels = np.union1d(a, b)
    expected = float(sum(np.mean(a == label) * np.mean(b == label) for label in labels))
    if expected >= 1.0:
        return float("nan")
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b))


def fleiss_kappa(ratings: np.ndarray) -> float:
    """Fleiss' kappa of an (items x raters) matrix of labels, every item labelled by every rater."""
    ratings = np.asarray(ratings)
    items, raters = ratings.shape
    if items == 0 or raters < 2:
        return float("nan")
    labels = np.unique(ratings)
    counts = np.stack([(ratings == label).sum(axis=1) for label in labels], axis=1)  # (items, labels)
    per_item = (np.sum(counts * counts, axis=1) - raters) / (raters * (raters - 1))
    shares = counts.sum(axis=0) / (items * raters)
    expected = float(np.sum(shares * shares))
    return float("nan") if expected >= 1.0 else (float(per_item.mean()) - expected) / (1.0 - expected)


def icc(matrix: np.ndarray, form: str = "ICC(2,1)") -> float:
    """Shrout & Fleiss intraclass correlation of an (n targets x k raters) matrix, single measures.

    ICC(1,1): one-way random; ICC(2,1): two-way random, absolute agreement (a rater that is systematically
    higher lowers it); ICC(3,1): two-way mixed, consistency (systematic rater offsets are ignored).
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        return float("nan")
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * float(np.sum((x.mean(axis=1) - grand) ** 2))
    ss_cols = n * float(np.sum((x.mean(axis=0) - grand) ** 2))
    ss_total = float(np.sum((x - grand) ** 2))
    ms_rows = ss_rows / (n - 1)
    ms_cols = ss_cols / (k - 1)
    ms_error = (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))
    ms_within = (ss_total - ss_rows) / (n * (k - 1))
    if form == "ICC(1,1)":
        numerator, denominator = ms_rows - ms_within, ms_rows + (k - 1) * ms_within
    elif form == "ICC(2,1)":
        numerator = ms_rows - ms_error
        denominator = ms_rows + (k - 1) * ms_error + k * (ms_cols - ms_error) / n
    elif form == "ICC(3,1)":
        numerator, denominator = ms_rows - ms_error, ms_rows + (k - 1) * ms_error
    else:
        raise ValueError(f"unknown ICC form '{form}'; use one of {', '.join(ICC_FORMS)}")
    return float("nan") if abs(denominator) < 1e-12 else numerator / denominator


def majority(labels: np.ndarray) -> np.ndarray:
    """Row-wise majority of 0/1 labels (NaN entries ignored): 1.0, 0.0, or NaN for a tie or no label."""
    labels = np.asarray(labels, dtype=float)
    counted = np.sum(~np.isnan(labels), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.nansum(labels, axis=1) / counted
    return np.where(share > 0.5, 1.0, np.where(share < 0.5, 0.0, np.nan))


JUDGE_LABELS = ("first", "majority")


@dataclass(frozen=True)
class JudgeValidation:
    """Table 9 for one judge: how its judgements agree with people and with itself.

    Correlations compare the judge's mean over parsed repeats with the mean human score; agreement and Cohen's
    kappa compare the judge's binary label (`judge_label`: its first repeat, which is the judgement a benchmark
    run stores, or the majority of its repeats) with the human majority label (ties left out and counted);
    Fleiss' kappa is among the human annotators; the ICC is ICC(2,1) over the repeats, on the pairs every
    repeat could parse (ICC(3,1) is given beside it).
    """

    pairs: int
    annotators: int
    repeats: int
    judge_label: str
    unparsed_judgements: int
    pairs_without_judgement: int
    spearman: Correlation
    pearson: Correlation
    agreement: float
    cohen_kappa: float
    agreement_pairs: int
    human_ties: int
    fleiss_kappa: float
    icc: float
    icc_consistency: float
    icc_pairs: int
    icc_form: str = "ICC(2,1)"

    def as_dict(self) -> dict:
        return asdict(self)


def judge_validation(judge: np.ndarray, humans: np.ndarray, *, judge_label: str = "first") -> JudgeValidation:
    """`judge`: (pairs x repeats) 1.0 / 0.0, NaN where a judgement was unparsed; `humans`: (pairs x annotators)
    0/1 labels."""
    if judge_label not in JUDGE_LABELS:
        raise ValueError(f"judge_label must be one of {JUDGE_LABELS}, not '{judge_label}'")
    judge, humans = np.asarray(judge, dtype=float), np.asarray(humans, dtype=float)
    parsed = ~np.isnan(judge)
    judged = parsed.any(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        judge_mean = np.nansum(judge, axis=1) / parsed.sum(axis=1)
    human_mean = humans.mean(axis=1)
    judge_binary = judge[:, 0] if judge_label == "first" else majority(judge)
    human_binary = majority(humans)
    both = ~np.isnan(judge_binary) & ~np.isnan(human_binary)
    complete = parsed.all(axis=1)
    return JudgeValidation(
        pairs=len(judge),
        annotators=humans.shape[1],
        repeats=judge.shape[1],
        judge_label=judge_label,
        unparsed_judgements=int(np.sum(~parsed)),
        pairs_without_judgement=int(np.sum(~judged)),
        spearman=spearman(judge_mean[judged], human_mean[judged]),
        pearson=pearson(judge_mean[judged], human_mean[judged]),
        agreement=percent_agreement(judge_binary[both], human_binary[both]),
        cohen_kappa=cohen_kappa(judge_binary[both], human_binary[both]),
        agreement_pairs=int(np.sum(both)),
        human_ties=int(np.sum(np.isnan(human_binary))),
        fleiss_kappa=fleiss_kappa(humans.astype(int)),
        icc=icc(judge[complete], "ICC(2,1)"),
        icc_consistency=icc(judge[complete], "ICC(3,1)"),
        icc_pairs=int(np.sum(complete)),
    )


def validation_from_dict(value: dict) -> JudgeValidation:
    """The inverse of JudgeValidation.as_dict (stored validations are read back for Table 9)."""
    fields = dict(value)
    fields["spearman"] = Correlation(**fields["spearman"])
    fields["pearson"] = Correlation(**fields["pearson"])
    return JudgeValidation(**fields)
