"""One registry helper for every plug-in kind of the harness: a name maps to a lazy `"module:attr"` target (or to
the object itself), imported on first use, with one-line errors that list the registered names.

Used by strategies (`bench.strategies.STRATEGIES`), benchmarks (`bench.benchmarks.BENCHMARKS`), cache simulator
kinds and profiles (`bench.cachesim.registry`), custom model providers (`bench.gateway.providers`), preflight
checks (`bench.runner.preflight.CHECKS`), `ombench` subcommands (`bench.cli.COMMANDS`), judge parse rules
(`bench.evaluate.judge.PARSE_RULES`), report and viewer sections, and the offline engine's role handlers.

Model: lm-evaluation-harness `lm_eval/api/registry.py` (`Registry`, lazy placeholders): one idiom, so adding a
plug-in is one `register` call (or one line in a table) whatever its kind.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable, Generic, Iterator, Mapping, TypeVar

from bench.errors import ConfigError

T = TypeVar("T")


def load_target(target: str) -> object:
    """The object a `"package.module:attr"` string names (`attr` may be dotted). The working directory is
    searched after the installed packages, as `python -m` would (the `ombench` script does not put it on the
    path). Raises ImportError or AttributeError when the module or the attribute is missing."""
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise ImportError(f"{target!r} is not of the form 'package.module:attr'")
    try:
        obj: object = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if cwd in sys.path or not (exc.name and module.startswith(exc.name)):
            raise
        sys.path.append(cwd)
        obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names of one plug-in kind, in registration order. A value is either the object or a lazy
    `"module:attr"` string, imported (and kept) on first `get`.

    `kind` names the kind in errors (`unknown strategy 'x'; choose one of ...`); `key` is the config key a
    user sets, added to that error when given (`strategies.<k>.name`). `external=True` also accepts a
    `"module:attr"` string as a name that is not registered (a plug-in from the user's own module, as a dataset
    YAML may name its benchmark); the target is imported and kept under that string."""

    def __init__(self, kind: str, entries: Mapping[str, T | str] | None = None, *, key: str = "",
                 external: bool = False) -> None:
        self.kind = kind
        self.key = key
        self.external = external
        self._targets: dict[str, T | str] = {}
        self._loaded: dict[str, T] = {}
        for name, target in (entries or {}).items():
            self.register(name, target)

    # ---- registering --------------------------------------------------------------------------------------
    def register(self, name: str, target: T | str, *, replace: bool = True) -> None:
        """Add `name` (a `"module:attr"` string is imported on first use). `replace=False` raises ConfigError
        when the name is taken."""
        if not name:
            raise ConfigError(f"a {self.kind} needs a non-empty name")
        if not replace and name in self._targets:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._targets[name] = target
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        self._targets.pop(name, None)
        self._loaded.pop(name, None)

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@REG.decorator("name")` registers the decorated object."""
        def deco(obj: T) -> T:
            self.register(name, obj)
            return obj
        return deco

    # ---- looking up ---------------------------------------------------------------------------------------
    def names(self) -> tuple[str, ...]:
        return tuple(self._targets)

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._targets))

    def __len__(self) -> int:
        return len(self._targets)

    def target(self, name: str) -> T | str:
        """What `name` was registered with (the lazy string itself when not loaded yet)."""
        self._check(name)
        return self._targets[name]

    def get(self, name: str) -> T:
        """The object registered under `name`, imported on first use. Raises ConfigError (one line listing the
        names) for an unknown name, or naming the target when it cannot be imported."""
        found = self._loaded.get(name)
        if found is not None:
            return found
        if name not in self._targets and self.external and ":" in name:
            self.register(name, name)
        self._check(name)
        target = self._targets[name]
        if isinstance(target, str):
            try:
                obj = load_target(target)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(f"{self.kind} {name!r}: cannot load {target!r} ({type(exc).__name__}: {exc}); "
                                  "check the module path and its name") from None
        else:
            obj = target
        self._loaded[name] = obj  # type: ignore[assignment]
        return obj  # type: ignore[return-value]

    def items(self) -> list[tuple[str, T]]:
        """Every (name, object), imported, in registration order."""
        return [(n, self.get(n)) for n in self.names()]

    def values(self) -> list[T]:
        return [self.get(n) for n in self.names()]

    def _check(self, name: str) -> None:
        if name not in self._targets:
            where = f" (set {self.key})" if self.key else ""
            extra = " or a 'module:attr' path" if self.external else ""
            raise ConfigError(f"unknown {self.kind} {name!r}{where}; choose one of {', '.join(self._targets) or 'none'}"
                              f"{extra}")


__all__ = ["Registry", "load_target"]
