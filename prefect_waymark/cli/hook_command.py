"""``waymark hook``: forwards its arguments, unparsed, to the hooks' own parser
(:func:`prefect_waymark.hooks.command.main`). The console script calls that parser itself,
without typer; this command is what ``waymark --help`` and the CLI reference list."""

from __future__ import annotations

import typer

from ..hooks.command import HELP

__all__ = ["hook"]


def hook(ctx: typer.Context) -> None:
    from ..hooks.command import main as hook_main

    raise typer.Exit(hook_main(list(ctx.args)))


# The command's help is the hooks' own (hooks/command.py holds it), so it is set here, not
# written twice: typer reads a command's help from its docstring.
hook.__doc__ = (
    f"{HELP} Commands: `claude-code EVENT`, `generic [EVENT] --json`; `waymark hook "
    "COMMAND --help` lists their options."
)
