"""Which subjects a pass over a run's items has met already, in 32 bytes per subject (a set of their strings
would take about 150): the score stage meets each subject of a run once, chunk by chunk."""

from __future__ import annotations

import hashlib

import numpy as np

DIGEST = np.dtype("S32")


class SeenSubjects:
    """A growing set of subjects (content hashes: 64 hex digits, kept as their 32 bytes), held as one sorted
    array; a chunk is looked up with one binary search and merged in one copy."""

    def __init__(self) -> None:
        self._sorted = np.empty(0, dtype=DIGEST)

    def __len__(self) -> int:
        return len(self._sorted)

    def add_new(self, subjects: list[str]) -> list[str]:
        """The subjects not met before (distinct, in their order), which are met from now on."""
        digests = np.array([_digest(subject) for subject in subjects], dtype=DIGEST)
        at = np.searchsorted(self._sorted, digests)
        met = self._sorted[np.minimum(at, len(self._sorted) - 1)] == digests if len(self._sorted) else at < 0
        fresh = [subject for subject, old in zip(subjects, met.tolist(), strict=True) if not old]
        new = np.unique(digests[~met])  # sorted, and each once (`subjects` may repeat one)
        self._sorted = np.insert(self._sorted, np.searchsorted(self._sorted, new), new)
        return list(dict.fromkeys(fresh))


def _digest(subject: str) -> bytes:
    """A subject's 32 bytes: the hash it spells, or (for any other string) its SHA-256."""
    if len(subject) == 64 and subject == subject.lower():
        try:
            raw = bytes.fromhex(subject)
        except ValueError:
            raw = b""
        if len(raw) == 32:
            return raw
    return hashlib.sha256(subject.encode("utf-8", "surrogatepass")).digest()
