"""The notes under a table that say how a dataset's classes were made when a row can have several.

It sits above the dataset modules it asks (the TisEval layouts, the general multi-label rule of `file:` and
`hf:` specs), so none of them has to know the others.
"""

from __future__ import annotations

from trusteval.data import parse_dataset_spec
from trusteval.data.multilabel import user_rule
from trusteval.data.tiseval import LAYOUTS, table_note
from trusteval.errors import UsageError


def class_rule_notes(raw_dataset: str) -> list[str]:
    """The table notes naming how a dataset's classes were made when a row can have several: the TisEval
    translations, or a `file:` / `hf:` spec with `category_map`; none for any other dataset."""
    try:
        spec = parse_dataset_spec(raw_dataset)
        if spec.kind in LAYOUTS:
            return [table_note(LAYOUTS[spec.kind])]
        rule = user_rule(spec.options.get("category_sep"), spec.options.get("category_map"))
    except UsageError:  # the plan read this spec already; a stored spec that no longer parses gets no note
        return []
    return [rule.note()] if rule is not None and spec.kind in ("file", "hf") else []
