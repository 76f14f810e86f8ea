"""Where dataset files come from: a local mirror (TRUSTEVAL_DATA_DIR) or a pinned, verified download.

`sources.json` pins every file by sha256 (and by URL where it can be downloaded; files built for the mirror,
such as the reconstructed HateXplain train split, have `"url": null`). A file is looked up in the mirror first
(`<data_dir>/<folder>/<file>`), then in the download cache; a download is written to a temporary file,
checked against its sha256 and only then moved into place, so a failed or tampered download is never used.

A mirror file is checked against its pin on every use, by hashing its content (no stamp is trusted: an edit
that keeps the size and modification time, as `touch -r` does, is found). A mismatch is refused (exit 2)
unless the run allows unpinned data (`--allow-unpinned-data`); the file is then used and
`DataContext.unpinned` says which, so the run records it. `cached_sha256` (for model weights and replay
files, which can be large) remembers a hash by the file's size, mtime, ctime, inode and device: the ctime
cannot be set back by a user, so an edit followed by `touch -r` still changes the stamp.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import suppress
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from trusteval.errors import DataError, UsageError
from trusteval.util.atomic import atomic_target, write_atomic
from trusteval.util.folders import DEFAULT_CACHE

DOWNLOAD_TIMEOUT_S = 120.0
VERIFIED_CACHE = "verified.json"
UNPINNED_REMEDY = "restore the file from its source, or pass --allow-unpinned-data to use it anyway (recorded)"


@dataclass(frozen=True)
class DataContext:
    """Where datasets are read from: injected by the caller, never read from globals.

    `unpinned` collects one line per file used although it does not match its pin (only with
    `allow_unpinned`); the caller records them with the run."""

    data_dir: Path | None = None
    cache_dir: Path = DEFAULT_CACHE / "data"
    allow_download: bool = False
    allow_unpinned: bool = False
    unpinned: list[str] = field(default_factory=list, compare=False)


def catalog() -> dict[str, Any]:
    return json.loads(resources.files("trusteval.data").joinpath("sources.json").read_text("utf-8"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pin(dataset: str, filename: str) -> tuple[str, dict[str, Any]]:
    entry = catalog().get(dataset)
    if entry is None or filename not in entry["files"]:
        raise UsageError(f"no pinned source for {dataset}/{filename}")
    return entry["folder"], entry["files"][filename]


def pinned_sha256(name: str) -> str | None:
    """The pin of a file named as a run's `sources` name it ('cold/train.csv', 'toxicspans/raw/spans.csv': the
    dataset or its folder, then the file), or None for a file with no pin."""
    for dataset, entry in catalog().items():
        for prefix in {dataset, entry["folder"]}:
            pinned = entry["files"].get(name[len(prefix) + 1 :]) if name.startswith(prefix + "/") else None
            if pinned:
                return str(pinned["sha256"])
    return None


def unpinned_files(hashes: dict[str, str]) -> dict[str, str]:
    """The files of `hashes` (name -> sha256) whose content is not their pinned one."""
    return {name: sha for name, sha in hashes.items() if pinned_sha256(name) not in (None, sha)}


def mirror_file(dataset: str, filename: str, context: DataContext) -> Path | None:
    """A pinned file in the mirror, checked against its sha256; None when the mirror does not hold it."""
    folder, pinned = _pin(dataset, filename)
    if context.data_dir is None:
        return None
    mirrored = Path(context.data_dir) / folder / filename
    if not mirrored.is_file():
        return None
    check_pinned(mirrored, pinned["sha256"], context)
    return mirrored


def check_pinned(path: Path, expected: str, context: DataContext) -> None:
    """Refuse a file whose content is not the pinned one, unless the context allows unpinned data."""
    actual = sha256_file(path)
    if actual == expected:
        return
    found = f"sha256 {actual[:12]}… does not match the pinned {expected[:12]}…"
    if not context.allow_unpinned:
        raise DataError(path, f"{found}; {UNPINNED_REMEDY}")
    line = f"{path}: {found}; used because of --allow-unpinned-data"
    if line not in context.unpinned:
        context.unpinned.append(line)


def cached_sha256(path: Path, cache_dir: Path) -> str:
    """sha256 of a file, remembered by (path, size, mtime, ctime, inode, device) so an unchanged file is
    hashed once; any write changes the ctime, which `touch -r` cannot restore."""
    stat = path.stat()
    key = str(path.resolve())
    stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]
    cache_file = cache_dir / VERIFIED_CACHE
    known = _read_verified(cache_file)
    entry = known.get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    digest = sha256_file(path)
    known = {k: v for k, v in known.items() if os.path.exists(k)}  # forget files that are gone
    known[key] = {"stamp": stamp, "sha256": digest}
    _write_verified(cache_file, known)
    return digest


def _read_verified(cache_file: Path) -> dict[str, Any]:
    try:
        known = json.loads(cache_file.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _write_verified(cache_file: Path, known: dict[str, Any]) -> None:
    """Best effort, atomic: a cache that cannot be written only costs hashing the file again."""
    with suppress(OSError):
        write_atomic(cache_file, json.dumps(known, sort_keys=True))


def dataset_file(dataset: str, filename: str, context: DataContext) -> Path:
    """The path of one pinned file of a dataset, from the mirror, the cache or a verified download."""
    folder, pinned = _pin(dataset, filename)
    mirrored = mirror_file(dataset, filename, context)
    if mirrored is not None:
        return mirrored
    cached = context.cache_dir / folder / filename
    if cached.is_file():
        if sha256_file(cached) == pinned["sha256"]:
            return cached
        cached.unlink()
    where = f"{context.data_dir}/{folder}/{filename}" if context.data_dir else "no TRUSTEVAL_DATA_DIR set"
    if not pinned.get("url"):
        raise DataError(where, f"{dataset}: {filename} is built for the data mirror and cannot be downloaded")
    if not context.allow_download:
        raise DataError(
            where,
            f"{dataset} is not available offline; set TRUSTEVAL_DATA_DIR to a mirror that holds "
            f"{folder}/{filename}, or pass --download to fetch it from {pinned['url']}",
        )
    download_verified(pinned["url"], pinned["sha256"], cached)
    return cached


def download_verified(url: str, sha256: str, target: Path, *, timeout_s: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """Download `url` to `target` only if its content matches `sha256`; otherwise leave nothing behind."""
    import httpx

    digest = hashlib.sha256()
    try:
        with atomic_target(target) as temporary:
            with (
                temporary.open("wb") as out,
                httpx.stream("GET", url, timeout=timeout_s, follow_redirects=True) as resp,
            ):
                if resp.status_code != 200:
                    raise DataError(url, f"download failed with HTTP {resp.status_code}")
                for block in resp.iter_bytes():
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != sha256:
                raise DataError(
                    url,
                    f"sha256 mismatch: expected {sha256}, got {digest.hexdigest()}; the file was not used. "
                    "The upstream file changed or the download was tampered with.",
                )
    except httpx.HTTPError as exc:
        raise DataError(url, f"download failed: {exc}") from None
    return target
