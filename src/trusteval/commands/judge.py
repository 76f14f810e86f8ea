"""`trusteval judge validate`: how far an LLM judge agrees with people (the TrustEval paper's Table 9).

    trusteval judge validate --labels FILE.csv|jsonl [--judge SPEC] [--judge-prompt FILE] [--repeats 3]
                             [--store DIR] [--annotators a,b,c] [--judge-label first|majority] [--json]

The labels file has `prompt`, `response` and one column per human annotator holding 0 (complies) or 1
(avoids harm); by default every other column except `id` is an annotator. The judge (default: the embedded
model) reads every pair `--repeats` times through the avoidance prompt. Repeat r asks with seed r: a real,
separate judge call (the request differs, so no cache answers it), and repeat 0 is the very judgement a
`trusteval-avoidance` run stores, so the two share stored judgements. Judgements are stored, so running the
command again makes no judge call. Unparsed judgements are counted and left out of the statistics.
`--judge-prompt FILE` validates a judge that uses the user's own prompt file (the one a run names with
`--option judge_prompt=FILE`): same file, same judge id, so Table 10 of that run shows this validation.
The record keeps how often the judge's first repeat gave each verdict, and flags a degenerate judge (one
verdict for more than 95% of the pairs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trusteval.untrusted.safetext import one_line

if TYPE_CHECKING:
    import numpy as np

    from trusteval.scorers.judge import LLMJudge
    from trusteval.store import Store

RESERVED_COLUMNS = ("prompt", "response", "id")
LABEL_VALUES = {"0": 0, "1": 1, "0.0": 0, "1.0": 1}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    judge = commands.add_parser("judge", help="LLM-judge tools")
    actions = judge.add_subparsers(dest="judge_command", required=True)
    validate = actions.add_parser("validate", help="compare an LLM judge with human labels (Table 9)")
    validate.add_argument("--labels", required=True, help="CSV / JSONL with prompt, response, annotator columns")
    validate.add_argument("--judge", default="default", help="judge model spec (default: the embedded model)")
    validate.add_argument(
        "--judge-prompt", help="the judge's own prompt file (default: the shipped avoidance_v1 prompt)"
    )
    validate.add_argument("--repeats", type=int, default=3, help="judge runs per pair, seeds 0..N-1 (default 3)")
    validate.add_argument("--annotators", help="comma-separated annotator columns (default: all other columns)")
    validate.add_argument(
        "--judge-label",
        choices=("first", "majority"),
        default="first",
        help="judge label for agreement and Cohen's κ: the first repeat (what a run stores) or the majority",
    )
    validate.add_argument("--store", default=None, help="workspace folder (stores judgements for reuse)")
    validate.add_argument("--concurrency", type=int, default=8, help="judge requests in flight (API backends)")
    validate.add_argument("--timeout", type=float, default=120.0, help="seconds per judge request (API backends)")
    validate.add_argument("--json", action="store_true", help="print one JSON object with the results")
    validate.set_defaults(handler=cmd_validate)


def read_labels(path: Path, annotators: list[str] | None) -> tuple[list[tuple[str, str]], list[str], Any]:
    """(prompt, response) pairs, annotator names, and a (pairs x annotators) 0/1 matrix; errors name file,
    line and field."""
    import numpy as np

    from trusteval.data.files import read_records, require_columns
    from trusteval.errors import DataError

    records = read_records(path)
    columns = list(records[0][1])
    require_columns(path, columns, ["prompt", "response"])
    names = annotators or [c for c in columns if c not in RESERVED_COLUMNS]
    if not names:
        raise DataError(path, "no annotator columns: add one 0/1 column per human annotator", line=1)
    require_columns(path, columns, names)
    pairs, labels = [], []
    for line, row in records:
        for field in ("prompt", "response"):
            if not isinstance(row.get(field), str):
                raise DataError(path, f"expected text, found {row.get(field)!r}", line=line, field=field)
        if not row["prompt"].strip():
            raise DataError(path, "empty prompt", line=line, field="prompt")
        pairs.append((row["prompt"], row["response"]))
        labels.append([_label(path, line, name, row.get(name)) for name in names])
    return pairs, names, np.asarray(labels, dtype=float)


def _label(path: Path, line: int, field: str, value: Any) -> int:
    from trusteval.errors import DataError

    text = str(value).strip() if value is not None and not isinstance(value, bool) else repr(value)
    if text not in LABEL_VALUES:
        raise DataError(path, f"label {value!r} is not 0 or 1", line=line, field=field)
    return LABEL_VALUES[text]


async def judge_repeats(
    judge: LLMJudge, pairs: list[tuple[str, str]], repeats: int, store: Store
) -> tuple[np.ndarray, dict[str, Any]]:
    """(pairs x repeats) judge values (NaN when not parsed) and counts; each repeat's judgements are stored."""
    import numpy as np

    from trusteval.progress import NullProgress
    from trusteval.records import ScoreStatus, text_subject
    from trusteval.scorers.scoring import score_missing

    subjects = [text_subject(prompt, response) for prompt, response in pairs]
    values = np.full((len(pairs), repeats), np.nan)
    counts: dict[str, Any] = {"calls": 0, "unparsed": 0, "errors": 0, "first_error": None}
    for repeat in range(repeats):
        current = judge.with_seed(repeat)
        store.register_scorer(current.id, current.describe())
        task = current.scoring_task(f"judge repeat {repeat}", close=False)
        inputs = dict(zip(subjects, pairs, strict=True))
        # randomised order, as in a benchmark run
        done = await score_missing(store, task, inputs, NullProgress(), task.name, shuffle_seed=repeat)
        counts["calls"] += done.attempted
        stored = store.scores(current.id, subjects)
        for row, subject in enumerate(subjects):
            score = stored.get(subject)
            if score is not None and score.ok:
                values[row, repeat] = score.value
            elif score is not None and score.status == ScoreStatus.UNPARSED:
                counts["unparsed"] += 1
            else:
                counts["errors"] += 1
                counts["first_error"] = counts["first_error"] or (score.detail if score else "not judged")
    return values, counts


def judge_prompt(path: str | None) -> Any:
    from trusteval.scorers.judge import JudgePrompt

    return JudgePrompt.from_file(path, ("prompt", "response")) if path else JudgePrompt.load("avoidance_v1")


def cmd_validate(args: argparse.Namespace) -> int:
    import asyncio

    from trusteval.errors import UsageError
    from trusteval.store import Store
    from trusteval.util.folders import store_folder

    if args.repeats < 1:
        raise UsageError(f"flag --repeats {args.repeats}: use at least 1")
    judge_prompt(args.judge_prompt)  # a missing prompt file stops here, before any judge is loaded
    labels_path = Path(args.labels)
    annotators = [a.strip() for a in args.annotators.split(",") if a.strip()] if args.annotators else None
    pairs, names, humans = read_labels(labels_path, annotators)
    store = Store.open(store_folder(args.store))
    try:
        result = asyncio.run(_validate(args, pairs, names, humans, labels_path, store))
    finally:
        store.close()
    _print(result, args.json)
    return 0


async def _validate(args, pairs, names, humans, labels_path: Path, store) -> dict[str, Any]:
    from trusteval.data.sources import sha256_file
    from trusteval.dotenv import process_env
    from trusteval.errors import IncompleteError
    from trusteval.metrics.agreement import judge_validation
    from trusteval.models import BackendSettings
    from trusteval.records import content_hash
    from trusteval.scorers.judge import AVOIDANCE_LABELS, open_judge, parse_binary
    from trusteval.scorers.judge_validity import (
        VALIDATION_AGGREGATE,
        VALIDATION_RUN_PREFIX,
        StoredValidation,
        verdict_check,
    )

    settings = BackendSettings(concurrency=args.concurrency, timeout_s=args.timeout, env=process_env())
    judge = open_judge(args.judge, settings, judge_prompt(args.judge_prompt), parse_binary, labels=AVOIDANCE_LABELS)
    try:
        values, counts = await judge_repeats(judge, pairs, args.repeats, store)
    finally:
        await judge.aclose()
    if counts["errors"]:
        raise IncompleteError(
            f"{counts['errors']} judge calls failed ({counts['first_error']}); the others are stored: "
            "run the same command again to retry the failed ones"
        )
    validation = judge_validation(values, humans, judge_label=args.judge_label)
    labels_sha = sha256_file(labels_path)
    label = f"{judge.identity} on {labels_path.name}"
    key = content_hash([labels_sha, judge.id, args.repeats, args.judge_label])[:16]
    record = StoredValidation(
        label=label,
        validation=validation,
        judge=judge.id,
        labels_file=str(labels_path),
        labels_sha256=labels_sha,
        annotators=names,
        verdicts=verdict_check(AVOIDANCE_LABELS[v] for v in values[:, 0] if v == v),
    ).as_dict()
    store.put_aggregate(VALIDATION_RUN_PREFIX + key, VALIDATION_AGGREGATE, record)
    return {**record, "judge_calls": counts["calls"], "validation_id": VALIDATION_RUN_PREFIX + key}


def _print(result: dict[str, Any], as_json: bool) -> None:
    from trusteval.scorers.judge_validity import StoredValidation
    from trusteval.tables.paper_tables import degenerate_notes, validation_table

    if as_json:
        from trusteval.commands.jsonout import print_json

        print_json(result)
        return
    from rich.console import Console

    from trusteval.report.console import print_tables

    record = StoredValidation.from_dict(result)
    table = validation_table({record.label: record.validation}, degenerate_notes([record]))
    print_tables([table], Console())
    print(one_line(f"{result['judge_calls']} judge calls; stored as {result['validation_id']}"), file=sys.stderr)
