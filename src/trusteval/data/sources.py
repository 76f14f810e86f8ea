"""Where dataset files come from: a local mirror (TRUSTEVAL_DATA_DIR) or a pinned, verified download.

`sources.json` pins every file by URL and sha256. A file is looked up in the mirror first
(`<data_dir>/<folder>/<file>`), then in the download cache; a download is written to a temporary file,
checked against its sha256 and only then moved into place, so a failed or tampered download is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from trusteval.errors import DataError, UsageError

DOWNLOAD_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class DataContext:
    """Where datasets are read from: injected by the caller, never read from globals."""

    data_dir: Path | None = None
    cache_dir: Path = Path.home() / ".cache" / "trusteval" / "data"
    allow_download: bool = False


def catalog() -> dict[str, Any]:
    return json.loads(resources.files("trusteval.data").joinpath("sources.json").read_text("utf-8"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dataset_file(dataset: str, filename: str, context: DataContext) -> Path:
    """The path of one pinned file of a dataset, from the mirror, the cache or a verified download."""
    entry = catalog().get(dataset)
    if entry is None or filename not in entry["files"]:
        raise UsageError(f"no pinned source for {dataset}/{filename}")
    folder = entry["folder"]
    if context.data_dir is not None:
        mirrored = Path(context.data_dir) / folder / filename
        if mirrored.is_file():
            return mirrored
    cached = context.cache_dir / folder / filename
    pinned = entry["files"][filename]
    if cached.is_file():
        if sha256_file(cached) == pinned["sha256"]:
            return cached
        cached.unlink()
    if not context.allow_download:
        where = f"{context.data_dir}/{folder}/{filename}" if context.data_dir else "no TRUSTEVAL_DATA_DIR set"
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

    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with (
            os.fdopen(fd, "wb") as out,
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
        os.replace(tmp_name, target)
    except httpx.HTTPError as exc:
        raise DataError(url, f"download failed: {exc}") from None
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return target
