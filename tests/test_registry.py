"""The one registry helper every plug-in kind uses: lazy `module:attr` targets, errors that list the names."""

from __future__ import annotations

import sys

import pytest

from bench.errors import ConfigError
from bench.registry import Registry, load_target


def test_a_lazy_target_is_imported_on_first_use_and_kept() -> None:
    reg: Registry[object] = Registry("widget", {"dumps": "json:dumps"})
    assert reg.names() == ("dumps",)
    import json

    assert reg.get("dumps") is json.dumps
    assert reg.get("dumps") is reg.get("dumps")


def test_an_unknown_name_is_one_line_listing_the_names_and_the_key() -> None:
    reg: Registry[object] = Registry("strategy", {"a": "json:dumps", "b": "json:loads"}, key="strategies.<k>.name")
    with pytest.raises(ConfigError) as err:
        reg.get("c")
    text = str(err.value)
    assert "\n" not in text and "unknown strategy 'c'" in text and "a, b" in text and "strategies.<k>.name" in text


def test_a_target_that_cannot_be_imported_names_the_target() -> None:
    reg: Registry[object] = Registry("benchmark", {"x": "no_such_module_for_sure:Thing"})
    with pytest.raises(ConfigError, match="cannot load 'no_such_module_for_sure:Thing'"):
        reg.get("x")


def test_objects_register_directly_and_by_decorator_in_order() -> None:
    reg: Registry[object] = Registry("check")
    reg.register("first", len)

    @reg.decorator("second")
    def second() -> int:
        return 2

    assert reg.names() == ("first", "second")
    assert reg.get("second") is second
    assert [n for n, _ in reg.items()] == ["first", "second"]
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("first", len, replace=False)
    reg.unregister("first")
    assert "first" not in reg


def test_external_accepts_a_module_attr_path_that_was_not_registered() -> None:
    closed: Registry[object] = Registry("benchmark", {"a": "json:dumps"})
    with pytest.raises(ConfigError, match="unknown benchmark"):
        closed.get("json:loads")
    open_: Registry[object] = Registry("benchmark", {"a": "json:dumps"}, external=True)
    import json

    assert open_.get("json:loads") is json.loads
    assert "json:loads" in open_


def test_load_target_follows_dotted_attributes() -> None:
    assert load_target("os:path.join") is sys.modules["os"].path.join
    with pytest.raises(ImportError):
        load_target("os.path")


def test_every_plug_in_kind_uses_the_one_registry_helper() -> None:
    from bench.benchmarks import BENCHMARKS
    from bench.cachesim.registry import KINDS, PROFILES
    from bench.cli import COMMANDS
    from bench.evaluate.judge import PARSE_RULES
    from bench.gateway.providers import PROVIDERS
    from bench.report.figures import FIGURES
    from bench.report.tables import SECTIONS as REPORT_SECTIONS
    from bench.runner.preflight import CHECKS
    from bench.strategies import STRATEGIES
    from bench.view.sections import SECTIONS as VIEW_SECTIONS

    kinds = (STRATEGIES, BENCHMARKS, KINDS, PROFILES, PROVIDERS, CHECKS, COMMANDS, PARSE_RULES, REPORT_SECTIONS,
             FIGURES, VIEW_SECTIONS)
    assert all(isinstance(k, Registry) for k in kinds)
    for kind in kinds:
        kind.items()  # every registered target imports


def test_every_cli_module_with_a_register_function_is_a_registered_command() -> None:
    import importlib
    import pkgutil

    import bench.cli
    from bench.cli import COMMANDS

    found = set()
    for mod in pkgutil.iter_modules(bench.cli.__path__):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"bench.cli.{mod.name}")
        register = getattr(module, "register", None)
        if register is not None:
            found.add(f"bench.cli.{mod.name}:register")
    assert {f"{f.__module__}:register" for f in COMMANDS.values()} == found


def test_every_strategy_class_is_registered_with_its_yaml_and_defaults_line() -> None:
    # adding a strategy: its module, one line in STRATEGIES, its YAML and its defaults line; each missed place fails here
    import importlib
    import inspect
    import pkgutil
    from pathlib import Path

    import yaml

    import bench.strategies
    from bench.strategies import STRATEGIES, StrategyBase

    classes = {}
    for mod in pkgutil.iter_modules(bench.strategies.__path__):
        module = importlib.import_module(f"bench.strategies.{mod.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, StrategyBase) and obj.__module__ == module.__name__ and "name" in vars(obj):
                classes[obj.name] = obj
    assert {n: STRATEGIES.get(n) for n in classes if n in STRATEGIES} == classes, \
        f"strategies without a line in STRATEGIES: {sorted(set(classes) - set(STRATEGIES))}"
    conf = Path(bench.strategies.__file__).parents[1] / "conf"
    defaults = yaml.safe_load((conf / "config.yaml").read_text())["defaults"]
    lines = {k: v for d in defaults if isinstance(d, dict) for k, v in d.items()}
    for name in STRATEGIES:
        assert (conf / "strategy" / f"{name}.yaml").is_file(), f"bench/conf/strategy/{name}.yaml is missing"
        assert lines.get(f"strategy@strategies.{name}") == name, \
            f"bench/conf/config.yaml lacks `- strategy@strategies.{name}: {name}` in its defaults"
