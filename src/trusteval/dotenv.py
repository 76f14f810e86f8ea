"""API keys from a `.env` file in the working folder, under the same redaction as keys from the environment.

`trusteval run`, `judge`, `translate` and `trusteval.run(...)` (without `env=`) read `./.env` when it exists:
`NAME=value` lines, optionally `export NAME=value`, values optionally in single or double quotes, `#` comments
and blank lines ignored. A variable already set in the environment wins over the file. The variables join the
environment the run injects into its backends and scorers (`BackendSettings.env`), so a key from the file is
read, and scrubbed from every message of the part that reads it (`untrusted.redact`), exactly as a key from
the environment is. A line that is not `NAME=value` is an error naming the file and the line (never its text:
it may hold a key).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from trusteval.errors import UsageError

DOTENV_NAME = ".env"
LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")


def _value(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()  # an unquoted value ends at ` # comment`


def read_dotenv(path: Path) -> dict[str, str]:
    """The variables of a .env file; a usage error (exit 2) names the file and line of a malformed one."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a UTF-8 byte order mark (Windows editors) is not the name
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read '{path}': {getattr(exc, 'strerror', None) or exc}") from None
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = LINE.match(stripped)
        if match is None:
            raise UsageError(f"'{path}', line {number}: expected NAME=value (the line is not shown: it may hold a key)")
        found[match.group(1)] = _value(match.group(2))
    return found


def process_env(base: Mapping[str, str] | None = None, folder: Path | None = None) -> dict[str, str]:
    """The environment a command runs with: `base` (default os.environ) over `folder/.env` (default the working
    folder)."""
    path = (folder or Path.cwd()) / DOTENV_NAME
    from_file = read_dotenv(path) if path.is_file() else {}
    return {**from_file, **(os.environ if base is None else base)}
