"""Declarative plugin options: one pydantic model per backend, scorer, dataset and benchmark.

A plugin module declares `class Options(PluginOptions)` with typed fields (bounds with `ge`/`le`, choices as
`Literal`, switches as `Flag`, each with a description) and reads its spec's `?key=value` options, or a run's
`--option key=value`, with `parse_options`. Every plugin thus refuses an unknown option the same way (with a
did-you-mean), reads booleans the same way (true/false, on/off, yes/no, 1/0), reports a bad value in one line
naming the plugin, the option and what it accepts, and gets its help text (`trusteval options KIND NAME`) from
the same model. Parsing never changes a spec's identity: identities hash the options as written.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping
from typing import Annotated, ClassVar, Literal, Protocol, TypeVar, Union, get_args, get_origin, runtime_checkable

import annotated_types
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticUndefined

from trusteval.errors import UsageError
from trusteval.registry import did_you_mean
from trusteval.specs import Spec

TRUE_WORDS = ("true", "on", "yes", "1")
FALSE_WORDS = ("false", "off", "no", "0")
FLAG_EXPECTED = "true or false (also on/off, yes/no, 1/0)"
SHOWN_VALUE_CHARS = 60


def _flag(value: object) -> object:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"expected {FLAG_EXPECTED}")


def _names(value: object) -> object:
    """A comma-separated list of non-empty, distinct names."""
    if not isinstance(value, str):
        return value
    items = [item.strip() for item in value.split(",")]
    if not value.strip() or any(not item for item in items):
        raise ValueError("an empty entry; give a comma-separated list of names")
    if len(set(items)) != len(items):
        raise ValueError("a name is repeated")
    return tuple(items)


Flag = Annotated[bool, BeforeValidator(_flag)]
Names = Annotated[tuple[str, ...], BeforeValidator(_names)]


class PluginOptions(BaseModel):
    """Base of every plugin's options model: unknown options are refused, values are validated."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, protected_namespaces=())
    # options whose names start with one of these are the plugin's own to read (e.g. hatexplain's `map.LABEL`)
    extra_prefixes: ClassVar[tuple[str, ...]] = ()
    extra_help: ClassVar[str] = ""  # what the prefixed options do, for the help text


M = TypeVar("M", bound=PluginOptions)


def parse_options(
    model: type[M], options: Mapping[str, str], where: str, *, suggest: Callable[[str], str] | None = None
) -> M:
    """`options` (as written) read into `model`; a usage error (exit 2) in one line names `where` (the plugin),
    the option and what it accepts. `suggest` adds a hint for an unknown name that is no option (e.g. a run
    flag)."""
    known = list(model.model_fields)
    given = {k: v for k, v in options.items() if not k.startswith(model.extra_prefixes or ("\0",))}
    unknown = [key for key in given if key not in known]
    if unknown:
        raise UsageError(unknown_message(model, unknown, where, suggest))
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        raise UsageError(_error_line(model, exc.errors()[0], given, where)) from None


def unknown_message(
    model: type[PluginOptions], unknown: list[str], where: str, suggest: Callable[[str], str] | None = None
) -> str:
    """Names only, never values: a mistyped option may hold a key."""
    known = sorted(model.model_fields) + [f"{prefix}*" for prefix in model.extra_prefixes]
    hint = did_you_mean(unknown[0], sorted(model.model_fields))
    if not hint and suggest is not None:
        hint = suggest(unknown[0])
    names = ", ".join(f"'{key}'" for key in unknown)
    plural = "s" if len(unknown) > 1 else ""
    return f"{where}: unknown option{plural} {names}.{hint} Known: {', '.join(known) or 'none'}"


def _error_line(model: type[PluginOptions], error: ErrorDetails, given: Mapping[str, str], where: str) -> str:
    if not error["loc"]:  # a check across options (a model validator)
        return f"{where}: {_reason(error)}"
    key = str(error["loc"][0])
    value = given.get(key, "")
    shown = value if len(value) <= SHOWN_VALUE_CHARS else value[:SHOWN_VALUE_CHARS] + "..."
    field = model.model_fields[key]
    if error["type"] == "value_error" and field.annotation is not bool:
        return f"{where}: option {key}={shown!r}: {_reason(error)}"
    choices = _choices(field.annotation)
    hint = did_you_mean(value, list(choices)) if choices else ""
    return f"{where}: option '{key}' must be {expected(field)}, not {shown!r}.{hint}".rstrip(".")


def _reason(error: ErrorDetails) -> str:
    message = str(error["msg"])
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _without_none(annotation: object) -> object:
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _choices(annotation: object) -> tuple[str, ...]:
    inner = _without_none(annotation)
    return tuple(str(a) for a in get_args(inner)) if get_origin(inner) is Literal else ()


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds(field: FieldInfo) -> str:
    low = high = None
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            low = f">= {_number(item.ge)}"
        elif isinstance(item, annotated_types.Gt):
            low = f"> {_number(item.gt)}"
        elif isinstance(item, annotated_types.Le):
            high = f"<= {_number(item.le)}"
        elif isinstance(item, annotated_types.Lt):
            high = f"< {_number(item.lt)}"
    if low and high and low.startswith(">=") and high.startswith("<="):
        return f"between {low[3:]} and {high[3:]}"
    return " and ".join(bound for bound in (low, high) if bound)


def expected(field: FieldInfo) -> str:
    """What the field accepts, in words ("a whole number >= 1", "one of a, b")."""
    inner = _without_none(field.annotation)
    bounds = _bounds(field)
    if inner is bool:
        return FLAG_EXPECTED
    if inner is int:
        return "a whole number" + (f" {bounds}" if bounds else "")
    if inner is float:
        return "a number" + (f" {bounds}" if bounds else "")
    if _choices(inner):
        return "one of " + ", ".join(_choices(inner))
    if get_origin(inner) is tuple:
        return "a comma-separated list of names"
    return "text"


def _type_words(field: FieldInfo) -> str:
    inner = _without_none(field.annotation)
    words = {bool: "flag", int: "int", float: "float", str: "text"}.get(inner)  # type: ignore[call-overload]
    if words is None:
        words = "|".join(_choices(inner)) or "list"
    bounds = _bounds(field)
    return f"{words} {bounds}" if bounds and inner in (int, float) else words


def _default_words(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        return "required"
    default = field.default
    if default is None:
        return "none"
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, tuple):
        return ",".join(default) or "none"
    return str(default)


def options_help(model: type[PluginOptions] | None, title: str) -> str:
    """One block per plugin: its options with type, default and description."""
    if model is None:
        return f"{title}: declares no options model (a plugin that reads its own options)"
    if not model.model_fields and not model.extra_prefixes:
        return f"{title}: takes no options"
    lines = [f"{title} options:"]
    for name, field in model.model_fields.items():
        lines.append(f"  {name} ({_type_words(field)}, default {_default_words(field)})")
        lines.append(f"      {field.description or ''}".rstrip())
    for prefix in model.extra_prefixes:
        lines.append(f"  {prefix}* (text)")
        lines.append(f"      {model.extra_help}".rstrip())
    return "\n".join(lines)


def read_spec_options(model: type[M], spec: Spec) -> M:
    """A spec's `?key=value` options read into `model`; errors name the spec (option names, not values)."""
    return parse_options(model, spec.options, f"spec '{spec.shown}'")


@runtime_checkable
class HasOptions(Protocol):
    """A plugin's module that declares its `?key=value` options as a PluginOptions model named `Options`."""

    Options: type[PluginOptions]


def options_model(factory: Callable[..., object]) -> type[PluginOptions] | None:
    """The options model a plugin's module declares as `Options`, if any."""
    module = sys.modules.get(getattr(factory, "__module__", ""))
    if not isinstance(module, HasOptions):
        return None
    found = module.Options
    return found if isinstance(found, type) and issubclass(found, PluginOptions) else None
