"""A strategy's params from its config: types from the params dataclass's annotations, ranges declared next to
each field (`Annotated[int, Range(gt=0)]`), one-line ConfigErrors naming the key and what it must be.

Every strategy gets these checks by declaring its params; they run when the config is validated, before any
data is loaded or any question sent (bench.config.validate resolves every configured strategy)."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping, TypeVar, get_args

from bench.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

P = TypeVar("P", bound="DataclassInstance")


@dataclass(frozen=True)
class Range:
    """The interval a numeric param must lie in, declared in its annotation:
    `message_tokens: Annotated[int, Range(gt=0)] = 30000`. `None` (for an optional param) is always allowed;
    `unit` names what the number counts (tokens, rounds, days), shown in the message."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    unit: str = ""

    def describe(self) -> str:
        low = f"> {_num(self.gt)}" if self.gt is not None else f">= {_num(self.ge)}" if self.ge is not None else ""
        high = f"< {_num(self.lt)}" if self.lt is not None else f"<= {_num(self.le)}" if self.le is not None else ""
        if low and high:
            lo_b = "(" if self.gt is not None else "["
            hi_b = ")" if self.lt is not None else "]"
            lo_v = self.gt if self.gt is not None else self.ge
            hi_v = self.lt if self.lt is not None else self.le
            text = f"in {lo_b}{_num(lo_v)}, {_num(hi_v)}{hi_b}"
        else:
            text = low or high
        return f"{text} {self.unit}".strip()

    def contains(self, value: float) -> bool:
        return not ((self.gt is not None and not value > self.gt) or (self.ge is not None and not value >= self.ge)
                    or (self.lt is not None and not value < self.lt) or (self.le is not None and not value <= self.le))


def _num(v: float | None) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def param_ranges(cls: type[Any]) -> dict[str, Range]:
    """field name -> its declared Range, for a params dataclass."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = {}
    for name, hint in hints.items():
        found = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Range)]
        if found:
            out[name] = found[0]
    return out


def parse_params(cls: type[P], params: Mapping[str, Any] | None, strategy: str, *,
                 ignore: tuple[str, ...] = ()) -> P:
    """Build a params dataclass from a config dict: unknown knobs, wrong types and values outside their declared
    Range are one-line ConfigErrors naming `strategies.<strategy>.params.<knob>`. Keys in `ignore` (the job's
    common params a strategy may not use) are dropped when the dataclass has no such field.

    Field types come from the dataclass annotations (str, int, float, bool, Literal[...], X | None), optionally
    wrapped in Annotated[..., Range(...)]."""
    data = dict(params or {})
    known = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls, include_extras=True)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            if key in ignore:
                continue
            raise ConfigError(
                f"strategies.{strategy}.params.{key}: unknown parameter; valid: {', '.join(sorted(known))}"
            )
        where = f"strategies.{strategy}.params.{key}"
        hint = hints[key]
        ranges: list[Range] = []
        if typing.get_origin(hint) is Annotated:
            ranges = [m for m in hint.__metadata__ if isinstance(m, Range)]
            hint = get_args(hint)[0]
        value = _check(value, hint, where)
        for r in ranges:
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not r.contains(value):
                raise ConfigError(f"{where}={value!r}: must be {r.describe()}")
        kwargs[key] = value
    return cls(**kwargs)


def _check(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = get_args(hint)
        if value not in choices:
            raise ConfigError(f"{where}={value!r}: choose one of {', '.join(map(repr, choices))}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = get_args(hint)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _check(value, a, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}={value!r}: expected {_name(hint)}")
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}={value!r}: expected true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}={value!r}: expected an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}={value!r}: expected a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}={value!r}: expected a string")
        return value
    return value  # dicts and other structured knobs are checked by their consumer


def _name(hint: Any) -> str:
    return " or ".join(getattr(a, "__name__", str(a)) for a in get_args(hint) if a is not type(None))


__all__ = ["Range", "param_ranges", "parse_params"]
