"""Mastra's own Observer and Reflector texts, read at run time from the pinned `@mastra/memory` package.

om_core's packaged texts are in this project's words. `prompt_source="mastra"` (OMConfig) uses instead the texts
of the Mastra release a profile mirrors: the package tarball comes from the npm registry (`npm pack`), its sha512
must equal the pinned registry integrity, its TypeScript sources (`dist/*.js.map`) are bundled with a pinned
esbuild and Mastra's own prompt builders are called (om_core/mastra_texts.mjs); the texts are cut into om_core's
template names, checked against a pinned sha256 and cached as a prompts folder. Nothing of Mastra's enters the
repository. Node.js and npm are needed only for this option, only the first time (then the cache answers).

Supported (mastra-ai/mastra, packages/memory/src/processors/observational-memory/observer-agent.ts,
reflector-agent.ts; for 1.31.0 also built-in-extractors.ts and constants.ts):
  * profile `m11` = `@mastra/memory` 1.1.0: the Observer's system prompts (single and multi-thread), its
    user-message texts, the Reflector's system prompt, task and compression-retry texts, and the Actor's preamble,
    instructions and OTHER-conversations intro (inline in observational-memory.ts formatObservationsForContext,
    a method that reads no instance state, called on a bare object). 1.1.0's continuation reminder is inline in
    processInputStep, which needs the live processor, and stays om_core's (docs/om.md).
  * profile `m31` = `@mastra/memory` 1.31.0: the same, as 1.31.0 composes them at run time (with the built-in
    current-task/suggested-response extractors; without them for buffered calls), the four compression levels,
    the prior-thread-metadata and prior-extracted-values layouts, the Reflector's additional output sections,
    and the Actor-context texts 1.31.0 exports (OBSERVATION_CONTEXT_PROMPT, OBSERVATION_CONTEXT_INSTRUCTIONS,
    OBSERVATION_CONTINUATION_HINT), and the OTHER-conversations intro it writes inline in formatObservationsForContext
    (called on an object of the class's prototype with empty extractor lists).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .errors import ConfigError

PACKAGE = "@mastra/memory"
# profile -> (release, npm registry integrity of its tarball, sha256 of the texts om_core cuts from it)
RELEASES: dict[str, tuple[str, str, str]] = {
    "m11": ("1.1.0",
            "sha512-ckkcP7ObXwyhJhZrJKOLe0RTvyj/FIctYPor0Wo1dTZ5H+lbngpSalBm1Ll+jH5jb5467BMkecmu0AZc4nurWg==",
            "409ffcbd852bf63bec22f009f42689c18c6024e39f0e02efc6e7749771fa9b45"),
    "m31": ("1.31.0",
            "sha512-qt+J++XfotafhF19SaA+gQL/XoP3ACISfEOjhcevgcO3AjLKsbIuBFsGN4jJMmPtYJK0xsV47O0PD2ZlE7h+og==",
            "1815b979259f85130f442f819d1ed90c38cac301461b42fc5072580475e5af03"),
}
ESBUILD = "esbuild@0.24.2"  # bundles the package's TypeScript sources (types erased) so Node can run the builders
EXACT_MARKER = ".exact"  # in a prompts folder: texts are used byte for byte (no trailing whitespace trimmed)
MANIFEST = "source.json"

# markers the extractor passes where Mastra's builders insert observations / guidance (om_core/mastra_texts.mjs)
_OBS = "\u0001OBSERVATIONS\u0001"
_GUIDE = "\u0002GUIDANCE\u0002"
_TASK = "\u0003TASK\u0003"
_SUGGESTED = "\u0004SUGGESTED\u0004"
_THREAD = "\u0005THREAD\u0005"
_OTHER = "\u0006OTHER\u0006"
_THREADS = 7  # threads the extractor names for the multi-thread prompt (none has messages: only the count shows)


_checked: dict[Path, "MastraTexts"] = {}


@dataclass(frozen=True)
class MastraTexts:
    """A prompts folder holding one Mastra release's texts: `source` e.g. "@mastra/memory@1.1.0", `sha256` of
    the texts (hex; what keys a run), `folder` the cached folder to pass as OMConfig.prompts_folder."""

    source: str
    sha256: str
    folder: Path

    @property
    def label(self) -> str:
        return f"{self.source} sha256:{self.sha256[:12]}"


def cache_dir() -> Path:
    """$OM_CORE_CACHE_DIR, else $XDG_CACHE_HOME/om-core, else ~/.cache/om-core."""
    env = os.environ.get("OM_CORE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "om-core"


def texts_sha256(texts: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(texts, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def mastra_texts(profile: str, cache: Path | None = None) -> MastraTexts:
    """The prompts folder of the Mastra release `profile` mirrors, built on first use and cached.

    Raises ConfigError (one line) when the profile has no supported release, Node.js/npm are missing, the
    registry cannot be reached, the tarball's hash or the texts' hash differ from the pinned ones."""
    if profile not in RELEASES:
        raise ConfigError(f"prompt_source=mastra: no Mastra release is supported for profile {profile!r}; use "
                          f"profile=m11 (@mastra/memory 1.1.0), m31 (1.31.0) or prompt_source=packaged")
    version, integrity, want = RELEASES[profile]
    source = f"{PACKAGE}@{version}"
    folder = (cache or cache_dir()) / "mastra" / version
    known = _checked.get(folder)
    if known is not None and (folder / MANIFEST).is_file():
        return known  # checked once per process: the engine asks on every Observer and Reflector call
    texts = _read_folder(folder)
    if texts is not None and want != "PENDING" and texts_sha256(texts) != want and \
            _written_sha256(folder) == texts_sha256(texts):
        texts = None  # intact, but cut by an older om_core (other template names): cut again from the package
    if texts is None:
        texts = _extract(version, integrity)
        _write_folder(folder, source, texts)
    got = texts_sha256(texts)
    if want != "PENDING" and got != want:
        raise ConfigError(f"prompt_source=mastra: the texts read from {source} hash to {got[:12]}, not the pinned "
                          f"{want[:12]}; delete {folder} and run again, or use prompt_source=packaged")
    _checked[folder] = MastraTexts(source, got, folder)
    return _checked[folder]


def _read_folder(folder: Path) -> dict[str, str] | None:
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    names = json.loads(manifest.read_text(encoding="utf-8"))["texts"]
    return {n: (folder / f"{n}.txt").read_text(encoding="utf-8") for n in names}


def _written_sha256(folder: Path) -> str | None:
    """The texts' sha256 the manifest recorded when the folder was written (a changed text no longer matches it)."""
    found = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("sha256")
    return found if isinstance(found, str) else None


def _write_folder(folder: Path, source: str, texts: dict[str, str]) -> None:
    # written beside, then renamed: a half-written folder is never read as a cache
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    for name, text in texts.items():
        (tmp / f"{name}.txt").write_text(text, encoding="utf-8")
    (tmp / EXACT_MARKER).write_text("texts here are used byte for byte\n", encoding="utf-8")
    (tmp / MANIFEST).write_text(json.dumps({"source": source, "texts": sorted(texts),
                                            "sha256": texts_sha256(texts)}, indent=1), encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)


def _run(cmd: list[str], cwd: Path, what: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OM_USE_")}  # 1.1.0 switches texts on these
    try:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise ConfigError(f"prompt_source=mastra needs Node.js and npm ({cmd[0]} not found) to read {PACKAGE} once; "
                          "install Node 20+ or use prompt_source=packaged") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"prompt_source=mastra: {what} failed ({last}); check the npm registry is reachable, "
                          "or use prompt_source=packaged")
    return done.stdout


def _extract(version: str, integrity: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="om-mastra-") as d:
        work = Path(d)
        _run(["npm", "pack", f"{PACKAGE}@{version}", "--silent", "--pack-destination", str(work)], work,
             f"npm pack {PACKAGE}@{version}")
        [tgz] = list(work.glob("*.tgz"))
        digest = "sha512-" + base64.b64encode(hashlib.sha512(tgz.read_bytes()).digest()).decode()
        if digest != integrity:
            raise ConfigError(f"prompt_source=mastra: {tgz.name} does not match the pinned registry integrity of "
                              f"{PACKAGE}@{version}; refusing its texts")
        with tarfile.open(tgz) as tar:
            _extract_safely(tar, work / "unpacked")
        node = work / "node"
        node.mkdir()
        _run(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(node),
              ESBUILD], work, f"npm install {ESBUILD}")
        script = node / "mastra_texts.mjs"  # beside node_modules, so its `import 'esbuild'` resolves there
        script.write_text(resources.files(__package__).joinpath("mastra_texts.mjs").read_text(encoding="utf-8"))
        out = work / "texts.json"
        _run(["node", str(script), str(work / "unpacked" / "package"), str(out)], work, "reading Mastra's builders")
        built = json.loads(out.read_text(encoding="utf-8"))
    return cut_templates(built) if version == "1.1.0" else cut_templates_131(built)


def _extract_safely(tar: tarfile.TarFile, dest: Path) -> None:
    """Unpack regular files and folders only, never outside `dest` (the "data" filter where Python has it)."""
    if hasattr(tarfile, "data_filter"):  # Python 3.11.4+
        tar.extractall(dest, filter="data")
        return
    root = dest.resolve()
    for member in tar.getmembers():
        target = (dest / member.name).resolve()
        if not (member.isfile() or member.isdir()) or not target.is_relative_to(root):
            raise ConfigError(f"prompt_source=mastra: the package holds {member.name!r}, not a plain file; refusing it")
    tar.extractall(dest)


def _between(text: str, start: str, end: str | None, what: str) -> str:
    i = text.find(start)
    if i < 0:
        raise ConfigError(f"prompt_source=mastra: {what} has no {start!r}; the pinned release's layout changed")
    rest = text[i + len(start):]
    if end is None:
        return rest
    j = rest.find(end)
    if j < 0:
        raise ConfigError(f"prompt_source=mastra: {what} has no {end!r}; the pinned release's layout changed")
    return rest[:j]


def cut_templates(built: dict[str, str]) -> dict[str, str]:
    """om_core template name -> text, from what Mastra's builders returned (om_core/mastra_texts.mjs output).

    The layout around the texts (headings, `---` rules) is om_core's and is checked here to be Mastra's: a
    text is cut only where the markers and headings stand where om_core puts them."""
    from .observer_prompt import HISTORY_HEADING, PREVIOUS_OBSERVATIONS_HEADING, TASK_HEADING
    from .reflector import GUIDANCE_HEADING, OBSERVATIONS_END, REFLECT_HEADING

    single, multi = built["observer_user_single"], built["observer_user_multi"]
    prefix = f"{PREVIOUS_OBSERVATIONS_HEADING}\n\n{_OBS}\n\n---\n\n"
    if not single.startswith(prefix) or not multi.startswith(prefix):
        raise ConfigError("prompt_source=mastra: the Observer prompt does not open with the previous observations; "
                          "the pinned release's layout changed")
    note = _between(single, prefix, f"\n\n{HISTORY_HEADING}\n\n", "the Observer prompt")
    task = _between(single, f"\n\n---\n\n{TASK_HEADING}\n\n", None, "the Observer prompt")
    intro = _between(multi, f"{HISTORY_HEADING}\n\n", "\n\n", "the multi-thread Observer prompt")
    count = f" {_THREADS} "
    if intro.count(count) != 1:
        raise ConfigError("prompt_source=mastra: the multi-thread Observer prompt does not state its thread count "
                          "once; the pinned release's layout changed")
    task_multi = _between(multi, f"\n\n---\n\n{TASK_HEADING}\n\n", None, "the multi-thread Observer prompt")
    reflect = built["reflector_user"]
    opening = f"{REFLECT_HEADING}\n\n{_OBS}{OBSERVATIONS_END}"
    if not reflect.startswith(opening):
        raise ConfigError("prompt_source=mastra: the Reflector prompt does not open with the observations; the "
                          "pinned release's layout changed")
    reflector_task = _between(reflect, opening, f"\n\n{GUIDANCE_HEADING}\n\n{_GUIDE}", "the Reflector prompt")
    retry = built["reflector_retry"]
    if not reflect.endswith(f"{_GUIDE}\n\n{retry}"):
        raise ConfigError("prompt_source=mastra: the Reflector prompt does not end with its retry text; the pinned "
                          "release's layout changed")
    # the Actor's system text (observational-memory.ts formatObservationsForContext, called with markers): om_core's
    # m11 layout (om_core/context.py build_actor_context) around three texts
    actor = built["actor_context"]
    opening = f"\n\n<observations>\n{_OBS}\n</observations>\n\n"
    _layout(actor.startswith("\n") and opening in actor, "the Actor context does not open with a preamble and "
            "the observations")
    pre, _, rest = actor[1:].partition(opening)
    before, _, tail = rest.partition("\nSTART_OTHER_CONVERSATIONS_BLOCK\n")
    instructions, _, other_intro = before.rpartition("\n\n")  # the intro is one line after the instructions
    hints = (f"{_OTHER}\nEND_OTHER_CONVERSATIONS_BLOCK\n\n<current-task>\n{_TASK}\n</current-task>\n\n"
             f"<suggested-response>\n{_SUGGESTED}\n</suggested-response>\n")
    _layout(bool(instructions) and "\n" not in other_intro and tail == hints, "the Actor context is not preamble, "
            "observations, instructions, the OTHER block and the hints")
    return {
        "actor_preamble": pre,
        "actor_instructions": instructions,
        "other_conversations": other_intro,
        "observer_system_single": built["observer_system_single"],
        "observer_system_multi": built["observer_system_multi"],
        "observer_previous_note": note,
        "observer_task": task,
        "observer_task_multi": task_multi,
        "observer_threads_intro": intro.replace(count, " {threads} "),
        "reflector_system": built["reflector_system"],
        "reflector_task": reflector_task,
        "reflector_retry": retry,
    }


def _layout(ok: bool, what: str) -> None:
    if not ok:
        raise ConfigError(f"prompt_source=mastra: {what}; the pinned release's layout changed")


def cut_templates_131(built: dict[str, str]) -> dict[str, str]:
    """om_core template name -> text for 1.31.0 (om_core/mastra_texts.mjs output, the `v131` branch).

    Whole texts: the four Observer system prompts (single/multi, with the hint sections / buffered without) and
    the two Reflector ones. The rest is cut where om_core's layout stands (headings, `---` rules, the blank lines
    between parts) and each cut is checked against the builder's output, so a moved layout is refused."""
    from .observer_prompt import HISTORY_HEADING, PREVIOUS_OBSERVATIONS_HEADING, PRIOR_METADATA_HEADING, TASK_HEADING
    from .reflector import GUIDANCE_HEADING, OBSERVATIONS_END, REFLECT_HEADING

    single = built["observer_task_single"]
    prefix = f"{PREVIOUS_OBSERVATIONS_HEADING}\n\n{_OBS}\n\n---\n\n"
    _layout(single.startswith(prefix), "the Observer task does not open with the previous observations")
    note = _between(single, prefix, f"\n\n{TASK_HEADING}\n\n", "the Observer task")
    task = _between(single, f"{note}\n\n{TASK_HEADING}\n\n", None, "the Observer task")
    buffered = built["observer_task_single_buffered"]
    _layout(buffered.startswith(f"{TASK_HEADING}\n\n{task}\n\n"), "the buffered Observer task is not the task "
            "and a note")
    buffered_note = buffered[len(f"{TASK_HEADING}\n\n{task}\n\n"):]
    _layout(built["reflector_user_buffered"].endswith(f"\n\n{buffered_note}"), "the buffered Reflector prompt does "
            "not end with the buffered Observer's note")
    # single-thread prior metadata: the two labelled lines, a closing sentence, a rule, the task
    prior = built["observer_task_single_prior"]
    head = f"{PRIOR_METADATA_HEADING}\n\n"
    _layout(prior.startswith(head) and prior.endswith(f"\n\n---\n\n{TASK_HEADING}\n\n{task}"),
            "the prior thread metadata does not stand before the task")
    lines, _, closing = prior[len(head):prior.rindex("\n\n---\n\n")].partition("\n\n")
    task_line, _, suggested_line = lines.partition("\n")
    _layout(task_line.endswith(_TASK) and suggested_line.endswith(_SUGGESTED) and "\n" not in suggested_line,
            "the prior thread metadata is not one line per hint")
    task_label, suggested_label = task_line[:-len(_TASK)], suggested_line[:-len(_SUGGESTED)]
    # multi-thread: previous observations, then per-thread hints under "<thread label><id>" indented, then the task
    multi = built["observer_task_multi"]
    _layout(multi.startswith(f"{prefix}{note}\n\n{head}"), "the multi-thread Observer task does not open with "
            "the previous observations and the prior thread metadata")
    rest = multi[len(f"{prefix}{note}\n\n{head}"):]
    group, _, rest = rest.partition("\n\n")
    closing_multi, _, rest = rest.partition("\n\n---\n\n")
    g = group.split("\n")
    _layout(len(g) == 3 and g[0].endswith(_THREAD) and g[1] == f"  {task_label}{_TASK}"
            and g[2] == f"  {suggested_label}{_SUGGESTED}", "the multi-thread prior metadata is not a thread line "
            "with its hints indented by two spaces")
    _layout(rest.startswith(f"{TASK_HEADING}\n\n"), "the multi-thread task does not follow its metadata")
    task_multi = rest[len(f"{TASK_HEADING}\n\n"):]
    history = built["observer_history_multi"]
    intro = _between(history, f"{HISTORY_HEADING}\n\n", "\n\n", "the multi-thread Observer history")
    _layout(history == f"{HISTORY_HEADING}\n\n{intro}\n\n" and intro.count(f" {_THREADS} ") == 1,
            "the multi-thread Observer history does not open with one line stating its thread count")
    # Reflector: observations, task, guidance, prior values, additional output sections
    reflect = built["reflector_user"]
    opening = f"{REFLECT_HEADING}\n\n{_OBS}{OBSERVATIONS_END}"
    _layout(reflect.startswith(opening), "the Reflector prompt does not open with the observations")
    reflector_task = _between(reflect, opening, f"\n\n{GUIDANCE_HEADING}\n\n{_GUIDE}", "the Reflector prompt")
    _layout(built["reflector_user_buffered"] == f"{opening}{reflector_task}\n\n{buffered_note}",
            "the buffered Reflector prompt is not the task and the buffered note")
    after = _between(reflect, f"{GUIDANCE_HEADING}\n\n{_GUIDE}\n\n", None, "the Reflector prompt")
    values = f"<current-task>\n{_TASK}\n</current-task>\n\n<suggested-response>\n{_SUGGESTED}\n</suggested-response>"
    _layout(values in after, "the Reflector's prior extracted values are not current-task and suggested-response tags")
    prior_values, _, sections = after.partition("\n\n## ")
    _layout(prior_values.count(values) == 1 and sections.startswith("Additional"), "the Reflector's prior values "
            "are not followed by its additional output sections")
    return {
        "observer_system_single": built["observer_system_single"],
        "observer_system_multi": built["observer_system_multi"],
        "observer_system_single_buffered": built["observer_system_single_buffered"],
        "observer_system_multi_buffered": built["observer_system_multi_buffered"],
        "observer_previous_note": note,
        "observer_task": task,
        "observer_task_multi": task_multi,
        "buffered_note": buffered_note,
        "observer_threads_intro": intro.replace(f" {_THREADS} ", " {threads} "),
        "observer_prior_current_task": task_label,
        "observer_prior_suggested_response": suggested_label,
        "observer_prior_metadata": closing,
        "observer_prior_thread": g[0][:-len(_THREAD)],
        "observer_prior_metadata_multi": closing_multi,
        "reflector_system": built["reflector_system"],
        "reflector_system_buffered": built["reflector_system_buffered"],
        "reflector_task": reflector_task,
        "reflector_prior_values": prior_values.replace(values, "{values}"),
        "reflector_output_sections": "## " + sections,
        **{f"reflector_level_{n}": built[f"reflector_level_{n}"] for n in range(1, 5)},
        "actor_preamble": built["actor_preamble"],
        "actor_instructions": built["actor_instructions"],
        "other_conversations": _other_intro_131(built),
        "continuation": built["continuation"],
    }


def _other_intro_131(built: dict[str, str]) -> str:
    """The OTHER-conversations intro 1.31.0 writes inline in formatObservationsForContext (called with markers:
    a JSON list of its system messages), checked against om_core's m31 layout (om_core/context.py): the
    preamble, the OTHER block, `<observations>`, the observations, then the two hints."""
    msgs = json.loads(built["actor_context"])
    other_start, other_end = "\nSTART_OTHER_CONVERSATIONS_BLOCK\n", "\nEND_OTHER_CONVERSATIONS_BLOCK"
    _layout(isinstance(msgs, list) and len(msgs) == 6
            and msgs[0] == f"{built['actor_preamble']}\n\n{built['actor_instructions']}"
            and msgs[1].endswith(f"{other_start}{_OTHER}{other_end}") and msgs[2:4] == ["<observations>", _OBS]
            and msgs[4:] == [f"<current-task>\n{_TASK}\n</current-task>",
                             f"<suggested-response>\n{_SUGGESTED}\n</suggested-response>"],
            "the Actor context is not preamble, OTHER block, observations and hints")
    intro = msgs[1][: -len(f"{other_start}{_OTHER}{other_end}")]
    _layout(bool(intro) and "\n" not in intro, "the OTHER-conversations intro is not one line")
    return str(intro)
