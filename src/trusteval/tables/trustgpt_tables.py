"""TrustGPT's tables, built from a benchmark's results, one row per model side by side.

Names follow the paper where it has a table (Table 3 toxicity, Table 4 bias std, Table 6 RtA per group) and
say which figure they hold the numbers of otherwise (Figure 4 group averages, 5 p-values, 6 AVA/PVA, 7 length).
"""

from __future__ import annotations

from trusteval.metrics.trustgpt_results import AvaResult, BiasResult, PvaResult, ToxicityResult
from trusteval.tables.control_tables import control_tables, marks, verdict_of
from trusteval.tables.table import Table, TableNotes


def toxicity_tables(result: ToxicityResult, notes: TableNotes) -> list[Table]:
    words = result.words
    models = result.models
    average = Table(
        name="trustgpt_toxicity",
        title="TrustGPT Table 3: average toxicity of non-refused responses, per prompt word (95% CI)",
        columns=("Model", *words, "all", "responses"),
        rows=tuple(
            (
                model,
                *(m.by_word[w].average_toxicity for w in words),
                m.overall.average_toxicity,
                m.overall.responses,
            )
            for model, m in models.items()
        ),
        notes=notes.all,
        digits=3,
        show_intervals=True,
    )
    rta = Table(
        name="trustgpt_toxicity_rta",
        title="TrustGPT toxicity prompts: refusal rate RtA (%), per prompt word",
        columns=("Model", *words, "all", "refusals", "responses"),
        rows=tuple(
            (
                model,
                *(m.by_word[w].rta for w in words),
                m.overall.rta,
                m.overall.refusals,
                m.overall.responses,
            )
            for model, m in models.items()
        ),
        notes=notes.scorers,
        digits=1,
    )
    distribution = Table(
        name="trustgpt_toxicity_distribution",
        title="TrustGPT Figures 2/3: toxicity distribution of non-refused responses (quantiles)",
        columns=("Model", "word", "scored", "p10", "p25", "median", "p75", "p90", "share >= threshold"),
        rows=tuple(
            (model, word, s.scored, *(s.quantiles[q] for q in ("10", "25", "50", "75", "90")), s.toxic_share)
            for model, m in models.items()
            for word, s in [*m.by_word.items(), ("all", m.overall)]
        ),
        notes=notes.main_scorer,
        digits=3,
    )
    length = Table(
        name="trustgpt_toxicity_length",
        title="TrustGPT Figure 7: average toxicity by response length in words",
        columns=("Model", "length (words)", "responses", "average toxicity"),
        rows=tuple((model, b.bin, b.count, b.average_toxicity) for model, m in models.items() for b in m.length),
        notes=(*notes.main_scorer, "One bin per length up to the 99th percentile of lengths; longer responses merged."),
        digits=3,
    )
    return [average, rta, distribution, length]


def bias_tables(result: BiasResult, notes: TableNotes) -> list[Table]:
    group_types = result.groups
    groups = [g for members in group_types.values() for g in members]
    models = result.models
    averages = Table(
        name="trustgpt_bias_toxicity",
        title="TrustGPT Figure 4: average toxicity per group (refusals left out)",
        columns=("Model", *groups),
        rows=tuple((model, *(m.by_group[g].average_toxicity for g in groups)) for model, m in models.items()),
        notes=notes.all,
        digits=3,
    )
    controls = {model: m.scorer_control for model, m in models.items() if m.scorer_control is not None}
    spread = Table(
        name="trustgpt_bias_std",
        title="TrustGPT Table 4: std of group averages within each group type (ddof 0), and the maximum slope",
        columns=("Model", *group_types, "max slope"),
        rows=tuple((model, *(m.std_by_type[t] for t in group_types), m.max_slope) for model, m in models.items()),
        notes=(
            *notes.main_scorer,
            "Max slope: least-squares slope of the ascending group averages against 1..n (our choice).",
            *marks(controls),
        ),
        digits=4,
    )
    rta = Table(
        name="trustgpt_bias_rta",
        title="TrustGPT Table 6: refusal rate RtA (%) per group",
        columns=("Model", *groups),
        rows=tuple((model, *(m.by_group[g].rta for g in groups)) for model, m in models.items()),
        notes=notes.refusal,
        digits=1,
    )
    return [averages, spread, rta, _mann_whitney_table(result, notes), *control_tables("trustgpt-bias", controls, 3)]


def _mann_whitney_table(result: BiasResult, notes: TableNotes) -> Table:
    """Figure 5: every pair of groups of each model, with its scorer-control verdict."""
    holm = result.holm
    return Table(
        name="trustgpt_bias_mann_whitney",
        title="TrustGPT Figure 5: two-sided Mann-Whitney U p-values between groups"
        + (" (Holm-adjusted across all pairs of a model)" if holm else " (no correction)"),
        columns=(
            "Model",
            "type",
            "group 1",
            "group 2",
            "U",
            "p",
            *(("p (Holm)",) if holm else ()),
            "n 1",
            "n 2",
            "scorer control",
        ),
        rows=tuple(
            (
                model,
                pair.type,
                pair.test.first,
                pair.test.second,
                pair.test.u,
                pair.test.p,
                *((pair.test.p_holm,) if holm else ()),
                pair.test.n_first,
                pair.test.n_second,
                verdict_of(m.scorer_control, pair.test.first, pair.test.second),
            )
            for model, m in result.models.items()
            for pair in m.mann_whitney.pairs
        ),
        notes=(
            *notes.main_scorer,
            "type: the group type of both groups, or 'across' for a pair of two types.",
            "scorer control: the pair's verdict on raw against group-neutral scores (trustgpt_bias_scorer_induced).",
        ),
        digits=4,
    )


def ava_tables(result: AvaResult, notes: TableNotes) -> list[Table]:
    models = result.models
    accuracy = Table(
        name="trustgpt_ava",
        title="TrustGPT Figure 6 (AVA): hard and soft accuracy (%)",
        columns=("Model", "hard", "soft", "answers", "unparsed"),
        rows=tuple((model, m.hard, m.soft, m.answers, m.unparsed) for model, m in models.items()),
        notes=notes.all,
        digits=1,
        show_intervals=True,
    )
    answers = Table(
        name="trustgpt_ava_answers",
        title="TrustGPT AVA: parsed answers per norm class (A it's okay, B it's good, C it's wrong)",
        columns=("Model", "norm class", "A (okay)", "B (good)", "C (wrong)", "unparsed"),
        rows=tuple(
            (model, label, *(counts.get(k, 0) for k in ("A", "B", "C", "unparsed")))
            for model, m in models.items()
            for label, counts in m.confusion.items()
        ),
        notes=notes.main_scorer,
    )
    return [accuracy, answers]


def pva_tables(result: PvaResult, notes: TableNotes) -> list[Table]:
    labels = result.labels
    models = result.models
    table = Table(
        name="trustgpt_pva",
        title="TrustGPT Figure 6 (PVA): refusal rate RtA (%) on good norms (asked for toxic) and bad norms "
        "(asked for benign)",
        columns=("Model", *(f"RtA {label}" for label in labels), *(f"responses {label}" for label in labels)),
        rows=tuple(
            (model, *(m.by_label[label].rta for label in labels), *(m.by_label[label].responses for label in labels))
            for model, m in models.items()
        ),
        notes=notes.all,
        digits=1,
        show_intervals=True,
    )
    return [table]
