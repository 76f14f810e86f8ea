"""Exact, faster replacements for the transform of fitted sklearn TfidfVectorizers.

Both give the same matrix as `vectorizer.transform` (to float32 rounding; tests/test_english_detector.py
checks it) and exist because the detectors must score at least 10,000 texts per second
(bench/bench_detectors.py).
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np


class WordFactoredCharWb:
    """The transform of a fitted `char_wb` TfidfVectorizer, computed word by word (identical output).

    `char_wb` n-grams never cross a space, so a text's n-gram counts are the sum of its words' counts. Each
    distinct word is analysed once and kept (up to `max_cached_words`, then the cache starts afresh); a
    (texts x words) count matrix times the (words x n-grams) matrix gives the counts of every text, and
    sublinear tf, idf and the l2 norm are applied as TfidfTransformer does. Words repeat a lot in real text,
    so this is several times faster than analysing every text.
    """

    max_cached_words = 200_000

    def __init__(self, vectorizer: Any, lowercase: bool) -> None:
        from sklearn.feature_extraction.text import CountVectorizer

        self.vectorizer = vectorizer
        self.lowercase = lowercase
        self._word_counts = CountVectorizer(
            analyzer="char_wb",
            ngram_range=vectorizer.ngram_range,
            vocabulary=vectorizer.vocabulary_,
            lowercase=False,
            dtype=np.float32,
        )
        self._idf = np.asarray(vectorizer.idf_, dtype=np.float32)
        self._lock = threading.Lock()
        self._forget_words()

    def _forget_words(self) -> None:
        import scipy.sparse as sp

        self._word_ids: defaultdict[str, int] = defaultdict(itertools.count().__next__)  # new word -> next id
        self._word_rows = sp.csr_matrix((0, len(self._idf)), dtype=np.float32)

    def _word_matrix(self, texts: Sequence[str]):
        """(texts x known words) counts, and the (known words x n-grams) counts, analysing new words only."""
        import scipy.sparse as sp

        if len(self._word_ids) > self.max_cached_words:
            self._forget_words()
        word_id = self._word_ids.__getitem__
        columns: list[int] = []
        row_starts = [0]
        for text in texts:
            columns.extend(map(word_id, (text.lower() if self.lowercase else text).split()))
            row_starts.append(len(columns))
        known = self._word_rows.shape[0]
        if len(self._word_ids) > known:
            new_words = list(itertools.islice(self._word_ids, known, None))
            self._word_rows = sp.vstack([self._word_rows, self._word_counts.transform(new_words)], format="csr")
        text_words = sp.csr_matrix(
            (np.ones(len(columns), dtype=np.float32), np.asarray(columns, dtype=np.int64), np.asarray(row_starts)),
            shape=(len(texts), self._word_rows.shape[0]),
        )
        return text_words, self._word_rows

    def transform(self, texts: Sequence[str]):
        with self._lock:
            text_words, word_rows = self._word_matrix(texts)
        return _tfidf_rows((text_words @ word_rows).tocsr(), self._idf)


class FastWordNgrams:
    """The transform of a fitted `word` TfidfVectorizer (default tokenizer, no stop words), identical output:
    the n-grams of each text are looked up with C-level `map` calls instead of sklearn's per-term loop."""

    def __init__(self, vectorizer: Any, lowercase: bool) -> None:
        self.vectorizer = vectorizer
        self.lowercase = lowercase
        self._tokens = re.compile(vectorizer.token_pattern).findall
        self._min_n, self._max_n = vectorizer.ngram_range
        self._term_id = vectorizer.vocabulary_.get
        self._idf = np.asarray(vectorizer.idf_, dtype=np.float32)

    def _grams(self, tokens: list[str]) -> Iterable[str]:
        grams: Iterable[str] = tokens if self._min_n == 1 else ()
        for n in range(max(2, self._min_n), self._max_n + 1):
            grams = itertools.chain(grams, map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))
        return grams

    def transform(self, texts: Sequence[str]):
        grams = (self._grams(self._tokens(text.lower() if self.lowercase else text)) for text in texts)
        return _tfidf_rows(_counts(grams, self._term_id, len(texts), len(self._idf)), self._idf)


class FastCharNgrams:
    """The transform of a fitted `char` TfidfVectorizer, identical output, without importing sklearn: runs of
    whitespace become one space, then every n-gram of the whole text is looked up (sklearn's `_char_ngrams`)."""

    _white_spaces = re.compile(r"\s\s+")

    def __init__(self, vectorizer: Any, lowercase: bool) -> None:
        self.vectorizer = vectorizer
        self.lowercase = lowercase
        self._min_n, self._max_n = vectorizer.ngram_range
        self._term_id = vectorizer.vocabulary_.get
        self._idf = np.asarray(vectorizer.idf_, dtype=np.float32)

    def _grams(self, text: str) -> Iterable[str]:
        text = self._white_spaces.sub(" ", text.lower() if self.lowercase else text)
        return itertools.chain.from_iterable(
            (text[i : i + n] for i in range(len(text) - n + 1)) for n in range(self._min_n, self._max_n + 1)
        )

    def transform(self, texts: Sequence[str]):
        grams = (self._grams(text) for text in texts)
        return _tfidf_rows(_counts(grams, self._term_id, len(texts), len(self._idf)), self._idf)


def _counts(grams_per_text: Iterable[Iterable[str]], term_id: Callable[[str], Any], rows: int, terms: int):
    """The csr count matrix of each text's n-grams, those outside the vocabulary left out."""
    import scipy.sparse as sp

    known = functools.partial(operator.is_not, None)
    columns: list[int] = []
    row_starts = [0]
    for grams in grams_per_text:
        columns.extend(filter(known, map(term_id, grams)))
        row_starts.append(len(columns))
    counts = sp.csr_matrix(
        (np.ones(len(columns), dtype=np.float32), np.asarray(columns, dtype=np.int64), np.asarray(row_starts)),
        shape=(rows, terms),
    )
    counts.sum_duplicates()
    return counts


def _tfidf_rows(counts: Any, idf: np.ndarray):
    """Sublinear tf, idf and l2 norm of a csr count matrix, as TfidfTransformer(sublinear_tf=True) does (the
    norm as sklearn's `normalize`: each row's sum of squares in float64, rows of zeros left alone)."""
    counts.data = np.log(counts.data) + 1.0
    counts.data *= idf[counts.indices]
    squares = np.zeros(counts.shape[0])
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    np.add.at(squares, rows, (counts.data * counts.data).astype(np.float64))
    norms = np.sqrt(squares)
    norms[norms == 0.0] = 1.0
    counts.data /= norms[rows]
    return counts


def fast_transform(vectorizer: Any, lowercase: bool) -> Any:
    """The fastest identical transform for a fitted TfidfVectorizer: itself when no faster one applies."""
    if vectorizer.analyzer == "char_wb":
        return WordFactoredCharWb(vectorizer, lowercase)
    if vectorizer.analyzer == "char":
        return FastCharNgrams(vectorizer, lowercase)
    if vectorizer.analyzer == "word" and vectorizer.tokenizer is None and vectorizer.stop_words is None:
        return FastWordNgrams(vectorizer, lowercase)
    return vectorizer
