"""Reading a store's run rows in bulk, column by column, for tables over many runs.

Looking every row up through the primary-key indexes costs several B-tree probes per row; when the selected
runs cover much of the store, one sequential scan per table and vectorised look-ups over sorted hash prefixes
are several times faster (bench/bench_tables.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from trusteval.benchmarks.toxicity_pairs import PairColumns, coded
from trusteval.benchmarks.trusteval_toxicity import PROMPT_TASK, RESPONSE_TASK
from trusteval.records import ScoreStatus
from trusteval.report.stored_run import StoredRun
from trusteval.scorers.language import response_checks, script_code
from trusteval.store import Store

PLAN_FAMILY = {"trusteval-toxicity": "toxicity-pairs", "trusteval-bias": "toxicity-pairs"}
PLAN_FIELDS = ("models", "dataset", "limit", "sample_seed", "seeds", "temperature", "top_p", "max_new_tokens",
               "template", "options")  # fmt: skip


def _floats(values: Sequence[Any]) -> np.ndarray:
    return np.asarray([np.nan if v is None else v for v in values], dtype=float)


_HEX = np.zeros(256, dtype=np.uint64)
_HEX[np.frombuffer(b"0123456789", dtype=np.uint8)] = np.arange(10, dtype=np.uint64)
_HEX[np.frombuffer(b"abcdef", dtype=np.uint8)] = np.arange(10, 16, dtype=np.uint64)
_SHIFTS = np.arange(60, -1, -4, dtype=np.uint64)


class SortedKeys:
    """sha256 hex keys looked up in bulk: sorted by their first 64 bits, matches confirmed on the full key."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = np.asarray(keys, dtype="S64")
        prefixes = _prefix(self.keys)
        self.order = np.argsort(prefixes, kind="stable")
        self.prefixes = prefixes[self.order]
        self._fallback: dict[bytes, int] | None = None

    def find(self, wanted: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in the original key list, found?) for each wanted key."""
        wanted = np.asarray(wanted, dtype="S64")
        if self.keys.size == 0:
            return np.zeros(wanted.size, dtype=np.int64), np.zeros(wanted.size, dtype=bool)
        slot = np.minimum(np.searchsorted(self.prefixes, _prefix(wanted)), self.prefixes.size - 1)
        at = self.order[slot]
        found = self.keys[at] == wanted
        doubtful = np.flatnonzero(~found & (self.prefixes[slot] == _prefix(wanted)))
        for row in doubtful:  # two keys sharing 64 bits: settle it exactly
            if self._fallback is None:
                self._fallback = {key: position for position, key in enumerate(self.keys.tolist())}
            position = self._fallback.get(bytes(wanted[row]))
            if position is not None:
                at[row], found[row] = position, True
        return at, found


def _prefix(keys: np.ndarray) -> np.ndarray:
    """The first 16 hex digits of each key as an unsigned 64-bit integer."""
    digits = np.ascontiguousarray(keys.astype("S16")).view(np.uint8).reshape(-1, 16)
    return np.bitwise_or.reduce(_HEX[digits] << _SHIFTS, axis=1)


class BulkLookup:
    """Generation subjects and scores read with full-table scans, once per build_tables call, and joined
    with sorted arrays.

    Looking every row up through the primary-key indexes costs several B-tree probes per row; when the
    selected runs cover much of the store, sequential scans and vectorised look-ups are several times faster
    (bench/bench_tables.py).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._scripts: np.ndarray | None = None
        self._columns: dict[tuple, PairColumns | None] = {}
        self._generations: tuple[SortedKeys, np.ndarray] | None = None
        self._scores: dict[str | None, tuple[SortedKeys, np.ndarray]] = {}
        self._prompts: dict[str, dict[str, tuple]] = {}

    def generations(self) -> tuple[SortedKeys, np.ndarray]:
        if self._generations is None:
            rows = self.store.scan_generations(script_code)
            keys, subjects, scripts = zip(*rows, strict=True) if rows else ((), (), ())
            self._generations = SortedKeys(keys), np.asarray(subjects, dtype="S64")
            self._scripts = np.asarray(scripts, dtype=float)
        return self._generations

    def scores(self, scorer: str | None) -> tuple[SortedKeys, np.ndarray]:
        """Subjects and ok values (NaN where not ok) of one scorer."""
        if scorer not in self._scores:
            rows = self.store.scan_scores(scorer)
            subjects, values, statuses = zip(*rows, strict=True) if rows else ((), (), ())
            ok = np.asarray(statuses, dtype=object) == ScoreStatus.OK
            self._scores[scorer] = SortedKeys(subjects), np.where(ok, _floats(values), np.nan)
        return self._scores[scorer]

    def prompts(self, dataset: str) -> dict[str, tuple]:
        if dataset not in self._prompts:
            self._prompts[dataset] = {row[0]: row[1:] for row in self.store.scan_prompts(dataset)}
        return self._prompts[dataset]

    def _score_of(self, scorer: str | None, subjects: np.ndarray, present: np.ndarray) -> np.ndarray:
        """The ok value of each present subject's score; NaN: none."""
        keys, values = self.scores(scorer)
        if values.size == 0:
            return np.full(subjects.size, np.nan)
        at, found = keys.find(subjects)
        return np.where(present & found, values[at], np.nan)

    def pair_columns(self, run: StoredRun, models: Sequence[str]) -> PairColumns | None:
        """The run's rows; a run with the same planned requests as one already read (trusteval-bias after
        trusteval-toxicity on the same data) shares its rows."""
        key = (self._plan_fingerprint(run), tuple(models), run.tasks.get(RESPONSE_TASK), run.tasks.get(PROMPT_TASK))
        if key not in self._columns:
            self._columns[key] = self._read_columns(run, models)
        return self._columns[key]

    def _plan_fingerprint(self, run: StoredRun) -> tuple:
        """What fixes a run's requests: the planning fields of its spec, the data files' hashes, and - as a
        check - the number and the smallest and largest of its request keys."""
        planned = run.spec.model_dump(include=set(PLAN_FIELDS))
        data = self.store.aggregate(run.run_id, "data") or {}
        count, low, high = self.store.run_item_span(run.run_id)
        family = PLAN_FAMILY.get(run.benchmark, run.benchmark)
        sources = json.dumps(data.get("sources"), sort_keys=True)
        return family, json.dumps(planned, sort_keys=True), sources, count, low, high

    def _read_columns(self, run: StoredRun, models: Sequence[str]) -> PairColumns | None:
        rows = self.store.scan_run_items(run.run_id, models)
        if not rows:
            return None
        keys, codes, seed, dataset, prompt_id = zip(*rows, strict=True)
        prompt_index, prompt_rows = self._prompt_rows(dataset, prompt_id)
        rowid, category, label, prompt_subject, lang = zip(*prompt_rows, strict=True)
        generation_keys, generation_subjects = self.generations()
        at, answered = generation_keys.find(keys)
        subjects = generation_subjects[at] if generation_subjects.size else np.zeros(len(keys), dtype="S64")
        scripts = np.full(len(keys), np.nan)
        if generation_subjects.size and self._scripts is not None:
            scripts = np.where(answered, self._scripts[at], np.nan)
        response_value = self._score_of(run.tasks.get(RESPONSE_TASK), subjects, answered)
        prompt_value = self._score_of(
            run.tasks.get(PROMPT_TASK), np.asarray(prompt_subject, dtype="S64"), np.ones(len(prompt_rows), bool)
        )
        classes: dict[str, int] = {}
        langs: dict[str | None, int] = {}
        category_code = coded((c or "all" for c in category), classes)
        lang_code = coded(lang, langs)
        return PairColumns(
            models=tuple(models),
            classes=tuple(classes),
            langs=tuple(langs),
            model=np.asarray(codes, dtype=np.int64),
            seed=np.asarray(seed, dtype=np.int64),
            prompt=np.unique(np.asarray(rowid, dtype=np.int64), return_inverse=True)[1][prompt_index],
            category=category_code[prompt_index],
            label_toxic=(_floats(label) == 1)[prompt_index],
            lang=lang_code[prompt_index],
            check=response_checks(scripts, np.asarray(lang, dtype=object)[prompt_index]),
            response_value=response_value,
            prompt_value=prompt_value[prompt_index],
        )

    def _prompt_rows(self, dataset: Sequence[str], prompt_id: Sequence[str]) -> tuple[np.ndarray, list[tuple]]:
        """Each row's index into the distinct prompts, and their (rowid, category, label, subject, language)."""
        datasets = set(dataset)
        distinct: dict = {}
        if len(datasets) == 1:  # the usual case: one dataset per run, so the prompt id alone is the key
            (name,) = datasets
            index = coded(prompt_id, distinct)
            return index, [self.prompts(name)[p] for p in distinct]
        index = coded(zip(dataset, prompt_id, strict=True), distinct)
        return index, [self.prompts(d)[p] for d, p in distinct]
