"""`ombench run`: the Hydra app. `ombench run experiment=quick`, `ombench run -m key=a,b` for sweeps.

The config tree ships inside the package (`bench.conf`, `pkg://bench.conf`), so an installed `ombench` runs
from any directory; `--config-dir DIR` (Hydra's flag) puts a user's own folder first in the search path.
Around Hydra this module adds what a command line owes its user: one-line errors for every misuse of the
command line or the config tree (exit 2), a clean Ctrl-C (one line, exit 130), `--skip-preflight`,
`--version`, bash completion that works through the `ombench run` entry point, and secrets kept out of Hydra:
a key or URL password on the command line becomes an `${oc.env:...}` reference before Hydra parses argv
(bench.cli.hidden_args), and the console is redacted (bench.secrets, docs/secrets.md)."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from bench.conf import CONFIG_NAME, CONFIG_PATH, config_dir

__all__ = ["run_hydra", "config_dir", "hydra_error_line"]

_STATE: dict[str, Any] = {"code": 0, "in_task": False, "multirun": False, "signal": signal.SIGINT}
INTERRUPTED = 130  # the shell's code for a process ended by SIGINT (143: SIGTERM)
CHILD_GRACE_S = 3.0  # how long sweep workers get to end after SIGTERM before they are killed


class _ArgError(Exception):
    pass


def _task(cfg: Any) -> None:
    from bench.errors import UserError, io_kind, storage_failure
    from bench.runner.app import Interrupted, run_job

    _STATE["in_task"] = True
    try:
        with redacted_console():  # a sweep worker prints from its own process: its console is redacted too
            run_job(cfg)
    except UserError as exc:  # one line per problem, each naming the thing and the fix
        for line in str(exc).splitlines() or [type(exc).__name__]:
            _error(line)
        _STATE["code"] = max(_STATE["code"], exc.exit_code)
    except Interrupted as exc:
        print(f"ombench: {exc}", file=sys.stderr)
        _STATE["code"] = _interrupted_code()
        if _STATE["multirun"]:  # the sweep stops too: the next job would start otherwise
            raise KeyboardInterrupt from None
    except OSError as exc:  # the disk or a folder failed somewhere no narrower handler caught it
        if io_kind(exc) is None:
            raise
        where = f" {exc.filename}" if exc.filename else ""
        _error(str(storage_failure(exc, f'writing{where}')))
        _STATE["code"] = max(_STATE["code"], 1)


def _error(line: str) -> None:
    """One error line on stderr, kept in the run log as well (bench.runner.runlog; its file handler writes nothing
    to the console). A run log that cannot be written (the disk that failed) never hides the line."""
    from bench.runner.runlog import log

    print(f"ombench: error: {line}", file=sys.stderr)
    try:
        log.error("ombench: error: %s", line)
    except Exception:  # pragma: no cover - logging reports its own handler errors
        pass


def _interrupted_code() -> int:
    return 128 + int(_STATE["signal"])


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM ends the command as Ctrl-C does: one line, finished work kept, sweep workers stopped."""
    _STATE["signal"] = signum
    raise KeyboardInterrupt


class _signals:
    """SIGTERM handled like SIGINT while the command runs (main thread only; restored after)."""

    def __enter__(self) -> None:
        self.saved: Callable[..., Any] | int | None = None
        _STATE["signal"] = signal.SIGINT
        try:
            self.saved = signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:  # not the main thread (an embedding application): leave signals alone
            self.saved = None

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            signal.signal(signal.SIGTERM, self.saved)


def _children() -> Iterator[Any]:
    import psutil

    try:
        yield from psutil.Process().children(recursive=True)
    except psutil.Error:
        return


def stop_children(grace_s: float = CHILD_GRACE_S) -> int:
    """Terminate this process's children (a joblib sweep's workers and their helpers), kill those still running
    after `grace_s`; returns how many there were."""
    import psutil

    kids = list(_children())
    for k in kids:
        try:
            k.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(kids, timeout=grace_s)
    for k in alive:
        try:
            k.kill()
        except psutil.Error:
            pass
    return len(kids)


@contextlib.contextmanager
def redacted_console() -> Iterator[None]:
    """stdout and stderr redacted (bench.secrets.RedactingStream) for the duration; nested uses wrap once."""
    from bench.secrets import RedactingStream

    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def hydra_error_line(exc: BaseException) -> str:
    """One line for an error Hydra or OmegaConf raised while reading the command line or composing the config."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    options: list[str] = []
    head: list[str] = []
    collecting = False
    for ln in lines:
        if ln.startswith(("Config search path", "provider=")):  # where Hydra looked: noise on one line
            continue
        if ln.startswith("Available options in"):
            collecting = True
            head.append(ln.rstrip(":").replace("Available options", "available options"))
            continue
        if collecting and " " not in ln:
            options.append(ln)
            continue
        collecting = False
        head.append(ln)
    if "Config group override must be a string or a list. Got NoneType" in text:
        return ("a config group was set to null (e.g. experiment=null); name one of its options "
                "(`ombench run --help` lists them) or drop the override")
    msg = "; ".join(head)
    if "LexerNoViableAlt" in text or "mismatched input" in text or "token recognition error" in text:
        msg += ("; a value with spaces, non-ASCII letters or any of , [ ] { } = ' \" must be quoted for Hydra "
                "inside the shell's quotes: 'key=\"my value\"'")
    if options:
        msg += ": " + ", ".join(options)
    if isinstance(exc, _ArgError):
        return f"{msg} (see `ombench run --help`)"
    return f"{msg} (see `ombench run --help`; Hydra's override syntax: https://hydra.cc/docs/advanced/override_grammar/basic)"


def _check_flags(argv: list[str]) -> argparse.Namespace:
    """Parse the command line with Hydra's own parser, turning its usage-and-exit errors into one line."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def fail(message: str) -> None:
        raise _ArgError(message)

    parser.error = fail  # type: ignore[method-assign,assignment]  # argparse has no other hook for its usage errors
    return parser.parse_args(argv)


# config sections that map names (a role or provider) to values: their keys are the user's to add
OPEN_MAPPINGS = ("gateway.api_base", "gateway.api_key_env", "gateway.rpm", "gateway.tpm", "gateway.context_window")


def open_mapping_overrides(argv: list[str]) -> list[str]:
    """`gateway.api_base.openai=URL` and `gateway.api_base={openai: URL}` as Hydra accepts them: `++` (add or
    replace). Hydra's struct mode refuses both spellings on a mapping whose key is not in the config yet (it wants
    `+gateway.api_base.openai=URL`, which in turn fails once the key exists); a `+`/`++`/`~` prefix is kept."""
    out = []
    for arg in argv:
        name = arg.split("=", 1)[0]
        if "=" in arg and not arg.startswith(("+", "~", "-")) and any(
                name == m or name.startswith(m + ".") for m in OPEN_MAPPINGS):
            arg = "++" + arg
        out.append(arg)
    return out


# config keys holding ids (strings) that Hydra's grammar would read as numbers: 1e043500 -> inf, 726462e0 -> 726462.0
STRING_LIST_KEYS = ("dataset.ids",)


def quote_string_overrides(argv: list[str]) -> list[str]:
    """`dataset.ids=[1e043500,726462e0]` (or a single `dataset.ids=1e043500`) with each unquoted element quoted,
    so that Hydra keeps the text the user typed instead of parsing a number; a `+`/`++` prefix, quoted
    elements, sweeps (`a,b` without brackets) and interpolations (`${...}`) are kept as they are."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        if eq and name.lstrip("+") in STRING_LIST_KEYS and "${" not in value and value.strip() not in ("", "null"):
            v = value.strip()
            if v.startswith("[") and v.endswith("]"):
                items = [x.strip() for x in v[1:-1].split(",") if x.strip()]
                arg = f"{name}=[{','.join(_quoted(x) for x in items)}]"
            elif "," not in v and not v.startswith(("'", '"')):
                arg = f"{name}=[{_quoted(v)}]"
        out.append(arg)
    return out


# what Hydra's lexer takes unquoted in a value (ASCII only); anything else (a space kept inside, é, ü) needs quotes
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_\-+./:%@~\\*?$]*")
# characters with a meaning in Hydra's grammar (lists, dicts, sweeps, quotes, interpolation): never quoted
_GRAMMAR = set("[]{},'\"=") | {"${"}
_FUNCTION = re.compile(r"\s*[A-Za-z_]\w*\(")  # a sweep or cast function: choice(...), range(...), str(...)


def quote_plain_values(argv: list[str]) -> list[str]:
    """`output.db=/data/my runs/bench é.duckdb` (one shell argument: a path with spaces or non-ASCII letters) quoted
    for Hydra, whose lexer refuses such a value unquoted. Values with grammar characters (lists, dicts, sweeps,
    quotes, `${...}`, function calls) and flags are left as typed (Hydra's error then says how to quote)."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        if eq and not arg.startswith("-") and value and not _PLAIN_VALUE.fullmatch(value) \
                and not any(g in value for g in _GRAMMAR) and not _FUNCTION.match(value):
            arg = f"{name}='{value}'" if "\\" not in value else arg
        out.append(arg)
    return out


def _quoted(item: str) -> str:
    return item if item[:1] in ("'", '"') or "'" in item else f"'{item}'"


def broken_config_file(config_dir: str | None) -> str | None:
    """One line naming the first YAML file of a `--config-dir` folder that does not parse (Hydra would skip a
    broken `config.yaml` there without a word and run the packaged defaults), or None when all parse."""
    if not config_dir:
        return None
    from omegaconf import OmegaConf

    folder = Path(config_dir).expanduser()
    if not folder.is_dir():
        return f"--config-dir {config_dir}: not a folder; give the folder holding your config.yaml"
    for path in sorted(folder.rglob("*.yaml")):
        try:
            OmegaConf.load(path)  # Hydra's own YAML loader (PyYAML with OmegaConf's resolvers)
        except Exception as exc:  # noqa: BLE001  (yaml's scanner/parser errors, a bad encoding, an unreadable file)
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            what = getattr(exc, "problem", None) or type(exc).__name__
            return f"{path}:{where}: not valid YAML ({what}); fix it or remove it from --config-dir"
    return None


def run_hydra(argv: list[str]) -> int:
    """Run `ombench run ARGV`; returns the exit status (0, 2 for a user error, 130 when interrupted)."""
    argv = list(argv)
    if "--version" in argv:  # Hydra's own --version would print Hydra's
        from bench.cli.commands import version

        print(f"ombench {version()}")
        return 0
    # Hydra's docs add experiments with `+experiment=X`; here the group is in the defaults, so that means `experiment=X`
    argv = [a[1:] if a.startswith("+experiment=") else a for a in argv]
    if "--skip-preflight" in argv:
        argv = [a for a in argv if a != "--skip-preflight"] + ["run.preflight=false"]
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        args = _check_flags(argv)
    except _ArgError as exc:
        print(f"ombench run: error: {hydra_error_line(exc)}", file=sys.stderr)
        return 2
    broken = broken_config_file(args.config_dir)
    if broken:
        print(f"ombench run: error: {broken}", file=sys.stderr)
        return 2
    completion = args.shell_completion and any(o.startswith(("install=", "uninstall=", "query=")) for o in args.overrides)
    if completion:
        from bench.cli.completion import handle

        handled = handle(argv, args.overrides)
        if handled is not None:
            return handled
    import logging

    import hydra

    from bench import notices
    from bench.cli.hidden_args import hide_secrets
    from bench.runner.sweep_check import SweepRefused
    from bench.secrets import redact_text, remember_environment

    # a secret typed on the command line goes to a private variable: Hydra sees and stores only ${oc.env:...}
    remember_environment()
    hidden = hide_secrets(argv)
    for note in hidden.notes:
        print(f"ombench: note: {note}", file=sys.stderr)

    main = hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name=CONFIG_NAME)(_task)
    saved_argv, saved_full = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
    saved_env = {k: os.environ.get(k) for k in hidden.env}
    os.environ.update(hidden.env)  # sweep workers inherit them
    sys.argv = ["ombench run", *quote_plain_values(quote_string_overrides(open_mapping_overrides(hidden.argv)))]
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises instead of printing its own multi-line report
    logging.raiseExceptions = False  # a run log on a full disk must not print tracebacks over the one error line
    _STATE.update(code=0, in_task=False, multirun=bool(args.multirun))
    notices.reset()
    try:
        with redacted_console(), _signals():  # Hydra's own lines, the progress, the summary, a sweep's merge
            main()
    except SweepRefused as exc:  # a sweep job's config is invalid: nothing ran
        for text in exc.lines:
            print(f"ombench: error: {redact_text(text)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if _STATE["multirun"]:
            stop_children()
            if not _STATE["in_task"] or _STATE["code"] == 0:
                print("ombench: interrupted: the sweep stopped; every finished question is stored in its job's "
                      "shards: re-run the same command to resume (the merge runs at its end)", file=sys.stderr)
            return _interrupted_code()
        if not _STATE["in_task"]:
            print("ombench: interrupted before the run started; nothing was written", file=sys.stderr)
        return _STATE["code"] or _interrupted_code()
    except Exception as exc:
        if _STATE["in_task"]:  # a defect in the run itself, not a misuse: keep the traceback
            raise
        from bench.errors import io_kind, storage_failure

        if isinstance(exc, OSError) and io_kind(exc) is not None:  # Hydra creating the run folder
            where = f" {exc.filename}" if exc.filename else ""
            line = storage_failure(exc, f"creating{where}", safe="nothing was written")
            print(f"ombench run: error: {redact_text(str(line))}", file=sys.stderr)
            return 1
        print(f"ombench run: error: {redact_text(hydra_error_line(exc))}", file=sys.stderr)
        return 2
    finally:
        sys.argv = saved_argv
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if saved_full is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = saved_full
    return max(int(_STATE["code"]), notices.exit_status())
