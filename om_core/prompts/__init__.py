"""Prompt templates as text files, one folder per profile (`m11`, `m31`), written in this project's words.

`load(profile, name, folder)` returns a template; a user folder overrides packaged files of the same name
(`<folder>/<profile>/<name>.txt` first, then `<folder>/<name>.txt`), and any name it lacks falls back to
the packaged file. Templates are plain text assembled by code; the one placeholder is `{threads}` in
`observer_threads_intro` (the number of threads in a multi-thread Observer request).

A folder holding a file named `.exact` (om_core.mastra_texts writes one) gives its texts byte for byte; other
texts lose their trailing whitespace (an editor's final newline). Only a folder may hold whole-prompt texts
(`observer_system_single`, `observer_system_multi`, `reflector_system`): `whole()` reads them, and the builders
use such a text in place of the prompt they assemble.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from om_core.errors import ConfigError

PROFILES: tuple[str, ...] = ("m11", "m31")


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ConfigError(f"unknown OM profile {profile!r}: use one of {', '.join(PROFILES)}")
    return profile


def _file_name(name: str) -> str:
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ConfigError(f"bad prompt name {name!r}: give a bare template name such as 'observer_intro'")
    return name if name.endswith(".txt") else f"{name}.txt"


@lru_cache(maxsize=256)
def _packaged(profile: str, file_name: str) -> str | None:
    entry = resources.files(__name__).joinpath(profile, file_name)
    if not entry.is_file():
        return None
    return entry.read_text(encoding="utf-8")


def _clean(text: str) -> str:
    # Files end with a newline (editor convention); templates are joined by code, so trim the end.
    return text.rstrip()


def load(profile: str, name: str, folder: str | Path | None = None) -> str:
    """The template `name` of `profile`, taken from `folder` when it has one, else the packaged file."""
    check_profile(profile)
    file_name = _file_name(name)
    found = _from_folder(profile, file_name, folder)
    if found is not None:
        return found
    text = _packaged(profile, file_name)
    if text is None:
        raise ConfigError(f"no prompt template {file_name!r} for profile {profile!r}")
    return _clean(text)


def _folder_text(base: Path, profile: str, file_name: str) -> str | None:
    for candidate in (base / profile / file_name, base / file_name):
        if candidate.is_file():
            text = candidate.read_text(encoding="utf-8")
            return text if (candidate.parent / ".exact").is_file() else _clean(text)
    return None


def _from_folder(profile: str, file_name: str, folder: str | Path | None) -> str | None:
    if folder is None:
        return None
    base = Path(folder)
    if not base.is_dir():
        raise ConfigError(f"prompt folder {str(base)!r} does not exist or is not a folder")
    return _folder_text(base, profile, file_name)


def whole(profile: str, name: str, folder: str | Path | None) -> str | None:
    """A whole-prompt text of `folder` (e.g. `observer_system_multi`), None when the folder has none (the
    builder then assembles its own from templates)."""
    check_profile(profile)
    return _from_folder(profile, _file_name(name), folder)


def names(profile: str) -> list[str]:
    """Packaged template names of a profile (without `.txt`), sorted."""
    check_profile(profile)
    folder = resources.files(__name__).joinpath(profile)
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))
