"""Errors that reach the user. Each says where (file, line, field) and what to do; the CLI prints them
without a traceback and exits non-zero."""

from __future__ import annotations

from pathlib import Path


class TrustEvalError(Exception):
    """Base class of every error the CLI reports as a one-line message."""

    exit_code = 2


class UsageError(TrustEvalError):
    """A flag, spec string or run spec that cannot be used as given."""


class DataError(TrustEvalError):
    """A dataset or input file that cannot be read; names the file, line and field."""

    def __init__(self, path: str | Path, message: str, *, line: int | None = None, field: str | None = None):
        where = str(path)
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line
        self.field = field


class BackendError(TrustEvalError):
    """A model backend that cannot be started or reached (missing package, unreachable server, no API key)."""


class IncompleteError(TrustEvalError):
    """Work is stored but some of it failed (model or judge calls): the same command again retries the rest."""

    exit_code = 3


class StoreError(TrustEvalError):
    """The store cannot be opened or written (not writable, disk full, not a trusteval store)."""


def missing_extra(package: str, extra: str) -> BackendError:
    return BackendError(f"this needs the '{package}' package: pip install 'trusteval[{extra}]'")
