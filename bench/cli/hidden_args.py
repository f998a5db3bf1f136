"""Secrets typed on the `ombench run` command line never reach Hydra.

Hydra writes every override it parses into `.hydra/overrides.yaml`, `.hydra/hydra.yaml`, `.hydra/config.yaml`,
a sweep's `multirun.yaml` and its job folder names (`hydra.job.override_dirname`), and logs them. So before
Hydra sees argv, each secret value (the value of a secret key such as `+model.actor.params.api_key=sk-...`,
or a URL holding credentials such as `gateway.api_base.openai=http://user:pass@host/v1`) is moved into a
private environment variable of this process and replaced by the interpolation `${oc.env:VAR}`: Hydra only
ever stores the reference, the job resolves it when it reads its config, and sweep workers inherit the
variable. A hidden key that is not swept is also left out of the job folder names. Each hidden value gets one
note steering the user to `gateway.api_key_env` (bench.secrets holds the policy itself)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bench.secrets import is_secret_key, may_be_credential, remember, url_credentials

ENV_PREFIX = "OMBENCH_SECRET_"
EXCLUDE_KEYS = "hydra.job.config.override_dirname.exclude_keys"
# Hydra flags whose value is the next argument (never an override)
_FLAGS_WITH_VALUE = frozenset({"--config-path", "-cp", "--config-dir", "-cd", "--config-name", "-cn",
                               "--experimental-rerun", "--info", "-i"})
# a URL inside an override value: ends at a comma, bracket or brace of Hydra's grammar too
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\",\]}<>]+")


# an entry of a `{name: value}` mapping literal (extra_body, headers, ... any mapping a provider accepts)
_ENTRY = re.compile(r"(?P<head>[{,]\s*)(?P<name>['\"]?[A-Za-z0-9_.\-]+['\"]?)(?P<sep>\s*:\s*)"
                    r"(?P<value>'[^']*'|\"[^\"]*\"|[^,{}\[\]\s]+)")


@dataclass
class HiddenArgs:
    """argv as Hydra may see it, the variables holding what was taken out, and one note per hidden value."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # variable -> secret value
    notes: list[str] = field(default_factory=list)


def _split_override(arg: str) -> tuple[str, str, str] | None:
    """(prefix, key, value) of `[+|++|~]key=value`; None for a flag or a bare word."""
    if "=" not in arg or arg.startswith("-"):
        return None
    m = re.match(r"(\+\+|\+|~)?([^=]+)=(.*)", arg, re.S)
    if m is None:
        return None
    return m.group(1) or "", m.group(2).strip(), m.group(3)


def _sweep_items(value: str) -> list[str]:
    """A Hydra sweep `a,b,c` split at its top-level commas (a value with brackets or quotes is one item)."""
    if any(c in value for c in "[]{}()'\""):
        return [value]
    return value.split(",")


def _unquote(value: str) -> str:
    v = value.strip()
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" else v


def _var_name(key: str, taken: dict[str, str]) -> str:
    base = ENV_PREFIX + re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_").upper()
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _role_or_provider(key: str) -> str:
    parts = key.split(".")
    if len(parts) >= 2 and parts[0] == "model":
        return parts[1]  # model.<role>.params.api_key
    if len(parts) >= 3 and parts[0] == "gateway":
        return parts[2]  # gateway.api_base.<role or provider>
    return "<role or provider>"


def hide_secrets(argv: list[str], default_exclude: list[str] | None = None) -> HiddenArgs:
    """Rewrite `argv` so that no secret value is in it (see the module docstring). `default_exclude`: the
    config's `hydra.job.config.override_dirname.exclude_keys` (read from the packaged config when None),
    extended with the hidden keys unless argv sets that list itself (then that list is extended)."""
    out = HiddenArgs(argv=[])
    excluded: list[str] = []
    skip_next = False
    for arg in argv:
        if skip_next:
            out.argv.append(arg)
            skip_next = False
            continue
        if arg in _FLAGS_WITH_VALUE:
            skip_next = True
            out.argv.append(arg)
            continue
        parsed = _split_override(arg)
        if parsed is None:
            out.argv.append(arg)
            continue
        prefix, key, value = parsed
        if key.startswith("hydra."):
            out.argv.append(arg)
            continue
        items = _sweep_items(value)
        new_items, hidden, in_mapping = [], False, False
        for item in items:
            if is_secret_key(key) and may_be_credential(key, _unquote(item)):
                var = _var_name(key, out.env)
                out.env[var] = _unquote(item)
                new_items.append("${oc.env:%s}" % var)
                hidden = True
            elif "{" in item and _ENTRY.search(item) and _ENTRY.sub(
                    partial(_swap_entry, key=key, env={}), item) != item:
                swapped = _ENTRY.sub(partial(_swap_entry, key=key, env=out.env), item)
                swapped = _URL.sub(partial(_swap_url, key=key, env=out.env), swapped)
                in_mapping = hidden = True
                new_items.append(swapped)
            elif "://" in item:
                swapped = _URL.sub(partial(_swap_url, key=key, env=out.env), item)
                hidden = hidden or swapped != item
                new_items.append(swapped)
            else:
                new_items.append(item)
        if not hidden:
            out.argv.append(arg)
            continue
        out.argv.append(f"{prefix}{key}={','.join(new_items)}")
        if len(items) == 1:  # a swept key stays in the folder names (as its references), keeping jobs apart
            excluded.append(key)
        where = _role_or_provider(key)
        if in_mapping:
            out.notes.append(f"{key} holds a secret entry: kept out of every file and log (sent as given); "
                             f"prefer `export VAR=...` and gateway.api_key_env.{where}=VAR for keys")
        elif is_secret_key(key):
            out.notes.append(f"{key} is a key on the command line: kept out of every file and log; prefer "
                             f"`export VAR=...` and gateway.api_key_env.{where}=VAR")
        else:
            out.notes.append(f"{key} holds credentials in its URL: kept out of every file and log, the password (or "
                             f"?api_key=...) is sent as the key; prefer a plain URL and gateway.api_key_env.{where}=VAR")
    remember(*out.env.values())
    if excluded:
        out.argv = _exclude_from_dirname(out.argv, excluded, default_exclude)
    return out


def _swap_entry(m: re.Match[str], key: str, env: dict[str, str]) -> str:
    """A secret entry of a mapping literal (`{token: X}`, `{Authorization: 'Bearer X'}`) with its value moved
    into a private variable; any other entry as it was."""
    name, value = _unquote(m.group("name")), m.group("value")
    if not (is_secret_key(name) and may_be_credential(name, _unquote(value))):
        return m.group(0)
    var = _var_name(f"{key}.{name}", env)
    env[var] = _unquote(value)
    return f"{m.group('head')}{m.group('name')}{m.group('sep')}${{oc.env:{var}}}"


def _swap_url(m: re.Match[str], key: str, env: dict[str, str]) -> str:
    """A URL holding credentials moved into a new variable of `env`, as its reference; other URLs as they are."""
    url = m.group(0)
    if not url_credentials(url):
        return url
    var = _var_name(key, env)
    env[var] = url
    return "${oc.env:%s}" % var


def _exclude_from_dirname(argv: list[str], keys: list[str], default: list[str] | None) -> list[str]:
    for i, arg in enumerate(argv):
        parsed = _split_override(arg)
        if parsed and parsed[1] == EXCLUDE_KEYS:
            given = [k.strip() for k in parsed[2].strip().strip("[]").split(",") if k.strip()]
            return [*argv[:i], f"{parsed[0]}{EXCLUDE_KEYS}=[{','.join(dict.fromkeys(given + keys))}]", *argv[i + 1:]]
    base = packaged_exclude_keys() if default is None else default
    return [*argv, f"{EXCLUDE_KEYS}=[{','.join(dict.fromkeys(base + keys))}]"]


def packaged_exclude_keys() -> list[str]:
    """`hydra.job.config.override_dirname.exclude_keys` of the packaged bench/conf/config.yaml."""
    from omegaconf import OmegaConf

    from bench.conf import config_dir

    cfg = OmegaConf.load(Path(config_dir()) / "config.yaml")
    keys = OmegaConf.select(cfg, EXCLUDE_KEYS, default=[])
    return [str(k) for k in keys or []]


__all__ = ["ENV_PREFIX", "HiddenArgs", "hide_secrets", "packaged_exclude_keys"]
