"""Writing a file so that a reader (or a crash) never sees half of it: write a temporary file beside it, then
rename it over the target in one step (`os.replace`, atomic on the same file system)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_target(path: Path, suffix: str = ".part") -> Iterator[Path]:
    """A temporary path beside `path` to write to; on leaving the block it replaces `path`, or, if the block
    raised, is removed. `suffix` keeps writers that add their own (numpy's `.npz`) from renaming it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` (text is UTF-8, line ends as given) to `path` through atomic_target."""
    with atomic_target(path) as temporary:
        temporary.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
