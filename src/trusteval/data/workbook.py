"""Limits on a workbook (xlsx) before openpyxl reads it.

An xlsx file is a zip archive: a small file can unpack to gigabytes (a "zip bomb"). The sizes its central
directory declares are read first, without unpacking anything, and a workbook whose parts declare more than
MAX_UNPACKED_BYTES in all is refused; Python's zipfile never unpacks a part past its declared size, so the
declared sizes bound what openpyxl can read. The TisEval workbooks unpack to 3.3 and 4.4 MB.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from trusteval.errors import DataError

MAX_UNPACKED_BYTES = 64 * 1024**2


def check_unpacked_size(path: Path, limit: int = MAX_UNPACKED_BYTES) -> None:
    """Refuse a workbook whose parts declare more than `limit` bytes unpacked (not a zip: left to openpyxl)."""
    try:
        with zipfile.ZipFile(path) as archive:
            declared = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # openpyxl's own refusal names what is wrong
    if declared > limit:
        raise DataError(
            path,
            f"the workbook unpacks to {declared:,} bytes, more than the limit of {limit:,} bytes "
            "(a zip bomb, or not a dataset workbook); nothing was unpacked",
        )


def check_header(path: Path, header: list[str]) -> None:
    """Refuse a header that repeats a column name, as a CSV's is refused (each row would keep the last)."""
    duplicated = sorted({name for name in header if name and header.count(name) > 1})
    if duplicated:
        raise DataError(path, f"duplicate column name(s): {duplicated}", line=1)
