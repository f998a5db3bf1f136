"""Bash completion for `ombench`, installed with `eval "$(ombench run -sc install=bash)"`.

Hydra's own bash script completes a program whose first word is the Hydra app; ours is `ombench run`, so the
installed function completes subcommand names itself and, after `ombench run`, asks Hydra (`ombench run -sc
query=bash`) with the `run` word taken out of the line, which is what Hydra's query expects."""

from __future__ import annotations

import os
import sys

SHELLS = ("bash",)

_SCRIPT = r"""_ombench_completion()
{
    local words=($COMP_LINE)
    local word="${COMP_WORDS[COMP_CWORD]}"
    if [ "${words[1]}" == "run" ] && [ "$COMP_CWORD" -ge 2 ]; then
        local choices
        choices=$(COMP_POINT=$COMP_POINT COMP_LINE="$COMP_LINE" "${words[0]}" run -sc query=bash 2>/dev/null)
        COMPREPLY=($(compgen -o nospace -o default -W "$choices" -- "$word"))
    elif [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "__COMMANDS__" -- "$word"))
    else
        COMPREPLY=($(compgen -f -- "$word"))
    fi
}
COMP_WORDBREAKS=${COMP_WORDBREAKS//=}
complete -o nospace -o default -F _ombench_completion ombench
"""


def commands() -> list[str]:
    """Every `ombench` subcommand, plus the top-level flags."""
    from bench.cli.commands import command_names

    return command_names() + ["--help", "--version"]


def script() -> str:
    return _SCRIPT.replace("__COMMANDS__", " ".join(commands()))


def handle(argv: list[str], overrides: list[str]) -> int | None:
    """`-sc install=bash` prints our script; `uninstall=bash` the lines undoing it; `query=bash` is left to
    Hydra (returns None) after the `run` word is taken out of COMP_LINE. Other shells: a one-line error."""
    spec = next(o for o in overrides if o.startswith(("install=", "uninstall=", "query=")))
    verb, _, shell = spec.partition("=")
    if shell not in SHELLS:
        print(f"ombench run: error: shell completion supports {', '.join(SHELLS)} only, not {shell!r}; "
              f"use `eval \"$(ombench run -sc install=bash)\"` in bash", file=sys.stderr)
        return 2
    if verb == "install":
        print(script(), end="")
        return 0
    if verb == "uninstall":
        print("complete -r ombench 2>/dev/null\nunset -f _ombench_completion")
        return 0
    line = os.environ.get("COMP_LINE", "")
    words = line.split(" ")
    if len(words) > 1 and words[1] == "run":  # Hydra strips the program name only
        os.environ["COMP_LINE"] = " ".join([words[0], *words[2:]])
    return None
