"""Exact, faster replacements for the transform of fitted sklearn TfidfVectorizers.

Both give the same matrix as `vectorizer.transform` (to float32 rounding; tests/test_english_detector.py
checks it) and exist because the detectors must score at least 10,000 texts per second
(bench/bench_detectors.py). `PackedCharNgrams` computes what `FastCharNgrams` does, bit for bit, in numpy
alone: a run that scores with a cached `char` detector imports neither sklearn nor scipy.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
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
    """Sublinear tf, idf and l2 norm of a scipy csr count matrix (with sorted indices), in place."""
    counts.data = _tfidf_values(counts.data, counts.indices, _row_of_each(counts.indptr), counts.shape[0], idf)
    return counts


def _row_of_each(indptr: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))


def _tfidf_values(counts: np.ndarray, indices: np.ndarray, rows: np.ndarray, n_rows: int, idf: np.ndarray):
    """Sublinear tf, idf and l2 norm of the float32 counts of a csr matrix, as TfidfTransformer(sublinear_tf=True)
    does (the norm as sklearn's `normalize`: each row's sum of squares in float64, added in column order,
    rows of zeros left alone)."""
    data = np.log(counts) + 1.0
    data *= idf[indices]
    squares = np.bincount(rows, weights=(data * data).astype(np.float64), minlength=n_rows)
    norms = np.sqrt(squares)
    norms[norms == 0.0] = 1.0
    data /= norms[rows]
    return data


@dataclass(frozen=True)
class SparseRows:
    """A csr matrix as three numpy arrays, column indices sorted within each row: what scoring needs of the
    tf-idf matrix, without importing scipy (0.1 s, a third of a short run's scoring)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    def dot(self, vector: np.ndarray) -> np.ndarray:
        """The matrix times a float64 vector, equal bit for bit to scipy's `csr @ vector`: each row's products
        summed in float64 in column order (bincount adds its weights in order)."""
        products = self.data.astype(np.float64) * vector[self.indices]
        return np.bincount(_row_of_each(self.indptr), weights=products, minlength=self.shape[0])

    def to_scipy(self):
        import scipy.sparse as sp

        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)


BITS_PER_CHAR = 21  # Unicode code points are below 2**21: three of them, each plus one, fit an int64


class PackedCharNgrams:
    """`FastCharNgrams` for n-grams of at most 3 characters, in numpy: every n-gram of every text is packed
    into one int64 (its code points plus one, 21 bits each, so n-grams of different lengths never collide)
    and looked up in the sorted packed vocabulary. Loading needs no dictionary of the vocabulary (40 ms for
    COLD's 211,092 terms) and scoring no scipy. `build` gives None where it does not apply."""

    def __init__(self, vectorizer: Any, lowercase: bool, order: np.ndarray, sorted_keys: np.ndarray) -> None:
        self.vectorizer = vectorizer
        self.lowercase = lowercase
        self._min_n, self._max_n = vectorizer.ngram_range
        self._order, self._sorted_keys = order, sorted_keys  # sorted_keys[i] is term order[i]'s
        self._idf = np.asarray(vectorizer.idf_, dtype=np.float32)

    @classmethod
    def build(cls, vectorizer: Any, lowercase: bool) -> PackedCharNgrams | None:
        """For a vectorizer read from the cache (its `terms` array; the vocabulary is `terms.tolist()`), of
        n-grams up to 3 characters whose terms are distinct as that list (numpy drops trailing NULs)."""
        terms = getattr(vectorizer, "terms", None)
        if terms is None or not len(terms) or terms.dtype.kind != "U" or vectorizer.ngram_range[1] > 3:
            return None
        if terms.dtype.itemsize > 3 * 4:  # terms of more than 3 characters (4 bytes each)
            return None
        keys = _packed_terms(terms)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        if (sorted_keys[1:] == sorted_keys[:-1]).any():
            return None
        return cls(vectorizer, lowercase, order, sorted_keys)

    def rows(self, texts: Sequence[str]) -> SparseRows:
        """The tf-idf rows of the texts: FastCharNgrams.transform's matrix, as numpy arrays."""
        grams, rows = self._grams(texts)
        found = np.minimum(np.searchsorted(self._sorted_keys, grams), len(self._sorted_keys) - 1)
        known = self._sorted_keys[found] == grams
        cells = np.sort(rows[known] * len(self._idf) + self._order[found[known]])  # (row, term), row-major
        starts = np.flatnonzero(np.diff(cells, prepend=-1))
        counts = np.diff(starts, append=len(cells)).astype(np.float32)
        row_of, indices = np.divmod(cells[starts], len(self._idf))
        indptr = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.bincount(row_of, minlength=len(texts)), out=indptr[1:])
        data = _tfidf_values(counts, indices, row_of, len(texts), self._idf)
        return SparseRows(indptr, indices, data, (len(texts), len(self._idf)))

    def transform(self, texts: Sequence[str]):
        return self.rows(texts).to_scipy()

    def _grams(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The packed n-grams of every text, and the text each comes from."""
        white_spaces = FastCharNgrams._white_spaces
        prepared = [white_spaces.sub(" ", text.lower() if self.lowercase else text) for text in texts]
        lengths = np.fromiter(map(len, prepared), dtype=np.int64, count=len(prepared))
        joined = "".join(prepared).encode("utf-32-le", "surrogatepass")  # one code point per 4 bytes
        points = np.frombuffer(joined, dtype="<u4").astype(np.int64) + 1
        text_of = np.repeat(np.arange(len(texts)), lengths)
        room = np.repeat(np.cumsum(lengths), lengths) - np.arange(len(points))  # characters left in its text
        grams, rows, key = [], [], np.zeros(len(points), dtype=np.int64)
        for n in range(1, self._max_n + 1):
            key[: len(points) - n + 1] = (key[: len(points) - n + 1] << BITS_PER_CHAR) | points[n - 1 :]
            if n >= self._min_n:
                fits = room >= n
                grams.append(key[fits])
                rows.append(text_of[fits])
        return np.concatenate(grams), np.concatenate(rows)


def _packed_terms(terms: np.ndarray) -> np.ndarray:
    """Each term packed as `_grams` packs an n-gram; a numpy string ends at its last non-NUL character."""
    points = np.ascontiguousarray(terms).view(np.uint32).reshape(len(terms), -1).astype(np.int64)
    lengths = np.zeros(len(terms), dtype=np.int64)
    for column in range(points.shape[1]):
        lengths[points[:, column] != 0] = column + 1
    keys = np.zeros(len(terms), dtype=np.int64)
    for column in range(points.shape[1]):
        inside = column < lengths
        keys[inside] = (keys[inside] << BITS_PER_CHAR) | (points[inside, column] + 1)
    return keys


def fast_transform(vectorizer: Any, lowercase: bool) -> Any:
    """The fastest identical transform for a fitted TfidfVectorizer: itself when no faster one applies."""
    if vectorizer.analyzer == "char_wb":
        return WordFactoredCharWb(vectorizer, lowercase)
    if vectorizer.analyzer == "char":
        return PackedCharNgrams.build(vectorizer, lowercase) or FastCharNgrams(vectorizer, lowercase)
    if vectorizer.analyzer == "word" and vectorizer.tokenizer is None and vectorizer.stop_words is None:
        return FastWordNgrams(vectorizer, lowercase)
    return vectorizer
