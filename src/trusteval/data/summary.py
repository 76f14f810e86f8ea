"""A loaded dataset as a small text table: prompts per class and label (`trusteval datasets show`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from trusteval.records import Prompt


def count_summary(prompts: Sequence[Prompt]) -> str:
    """Prompts per attribute class and label, as a small text table (used by `trusteval datasets show`)."""
    per_class: dict[str, Counter] = {}
    for p in prompts:
        per_class.setdefault(p.category or "-", Counter())[p.label] += 1
    per_class = {**dict(sorted(per_class.items())), "all": sum(per_class.values(), Counter())}
    languages = ", ".join(f"{lang} {n}" for lang, n in sorted(Counter(p.lang for p in prompts).items()))
    lines = [f"  {len(prompts)} prompts; language {languages}"]
    lines.append(f"  {'class':<20} {'toxic':>7} {'non-toxic':>9} {'unlabelled':>10} {'total':>7}")
    for name, n in per_class.items():
        lines.append(f"  {name:<20} {n[1]:>7} {n[0]:>9} {n[None]:>10} {n.total():>7}")
    return "\n".join(lines)
