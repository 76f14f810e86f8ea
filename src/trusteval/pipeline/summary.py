"""What a run did: counts of requests, answers, scores and failures, its metrics, tables and notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trusteval.tables.table import Table


@dataclass(frozen=True)
class ScorerWarning:
    """A toxicity scorer judged invalid on the run's data (`side` "") or on model responses (`side` "on model
    responses, "); `verdict` is `scorers.verdict.describe` of the verdict, the words the "Scorer validity of"
    note under the run's tables ends with."""

    scorer: str
    side: str
    verdict: str

    @property
    def line(self) -> str:
        return f"WARNING: toxicity scorer {self.scorer} is judged invalid {self.side}{self.verdict}"

    def stated_by(self, note: str) -> bool:
        """Whether a table's note already says it (the human summary then does not say it again)."""
        return note.startswith(f"Scorer validity of {self.scorer} ") and note.endswith(self.verdict)


@dataclass
class RunSummary:
    run_id: str
    benchmark: str
    dataset: str
    requests: int = 0
    generated: int = 0
    reused: int = 0
    failed: int = 0
    retries: int = 0
    scored: int = 0
    scores_reused: int = 0
    score_failures: int = 0
    unparsed: int = 0
    answers_redacted: int = 0  # answers from which trusteval cut an API key (finish_reason redacted_by_trusteval)
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    report_dir: str = ""
    notes: tuple[str, ...] = ()
    status: str = "running"  # "complete", or "incomplete" when a generation or a score failed
    # the toxicity scorers judged invalid on the data or on responses (their lines also in `notes`); `run --json`
    # prints them on stderr at the end, since its stdout is the JSON
    scorer_warnings: tuple[ScorerWarning, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "benchmark": self.benchmark,
            "dataset": self.dataset,
            "status": self.status,
            "requests": self.requests,
            "generated": self.generated,
            "reused": self.reused,
            "failed": self.failed,
            "retries": self.retries,
            "scored": self.scored,
            "scores_reused": self.scores_reused,
            "score_failures": self.score_failures,
            "unparsed": self.unparsed,
            "answers_redacted": self.answers_redacted,
            "metrics": self.metrics,
            "report_dir": self.report_dir,
            "notes": list(self.notes),
        }
