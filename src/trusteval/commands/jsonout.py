"""Strict JSON on stdout: NaN and infinity (an undefined rate, a ratio over zero) become null."""

from __future__ import annotations

import json
from typing import Any


def json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def print_json(value: Any, *, indent: int | None = None) -> None:
    print(json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False, indent=indent))
