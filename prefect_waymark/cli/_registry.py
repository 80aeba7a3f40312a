"""Every ``waymark`` command: the module and function that hold it and the options typer names it
with, in the order ``waymark --help`` lists them; and :func:`build_app`, the one way the typer
app is built from them.

The console script (:func:`prefect_waymark.cli.main`) builds the app with the one command its
arguments name (:func:`verb_of`), so ``waymark status`` imports the status command's module and
what that imports, not the thirty other commands' modules; ``waymark --help``, ``waymark``
alone, or a word that is no command get every command, so typer's help and its "No such
command" (with its suggestions) are the full app's. ``prefect_waymark.cli.app`` (module
:mod:`.commands`) is the full app, built here too.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

import typer

__all__ = ["VERBS", "Verb", "build_app", "verb_of"]


@dataclass(frozen=True)
class Verb:
    """One command: ``target`` is ``"module:attribute"``, the module relative to this package;
    ``options`` go to ``app.command`` with the command's name. A ``group`` target is a
    :class:`typer.Typer` of sub-commands (``waymark server start``)."""

    target: str
    options: Mapping[str, Any] = field(default_factory=dict)
    group: bool = False

    def load(self) -> Any:
        """Import the target's module (only it, and what it imports) and return the target."""
        module, _, name = self.target.partition(":")
        return getattr(import_module(f".{module}", __package__), name)


#: The commands, in the order ``waymark --help`` lists them.
VERBS: dict[str, Verb] = {
    "validate": Verb("plan_commands:validate"),
    "schema": Verb("plan_commands:schema"),
    "status": Verb("status_command:status"),
    "run": Verb("run_command:run"),
    # `waymark resume` is the same command under the name people reach for the next day.
    "resume": Verb(
        "run_command:run",
        {"help": "Same as `run`: continue the plan where the last run stopped."},
    ),
    "rerun": Verb("plan_history:rerun"),
    "rename-plan": Verb("plan_history:rename_plan"),
    "rename-step": Verb("plan_history:rename_step"),
    "diff": Verb("plan_history:diff"),
    "skip": Verb("close_command:skip"),
    "close": Verb("close_command:close"),
    "init": Verb("init_command:init"),
    "deploy": Verb("deploy_command:deploy"),
    "serve": Verb("deploy_command:serve"),
    "worker": Verb("deploy_command:worker"),
    "next": Verb("agent_commands:next_command"),
    "start": Verb("agent_commands:start"),
    "tick": Verb("agent_commands:tick"),
    "done": Verb("agent_commands:done"),
    "fail": Verb("agent_commands:fail_command"),
    "block": Verb("agent_commands:block"),
    "import": Verb("import_command:import_plan"),
    "metrics": Verb("metrics_command:metrics"),
    "export": Verb("audit_command:export"),
    "replay": Verb("audit_command:replay"),
    "restore": Verb("audit_command:restore"),
    "marker": Verb("marker_command:marker"),
    "receipt": Verb("receipts:receipt"),
    "review": Verb("review:review"),
    "mcp": Verb("mcp_command:mcp"),
    "hook": Verb(
        "hook_command:hook",
        {
            "add_help_option": False,
            "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True},
        },
    ),
    "server": Verb("server_commands:server_app", group=True),
}


def verb_of(args: Sequence[str]) -> str | None:
    """The command ``args`` (the arguments after ``waymark``) name, or ``None`` when they name
    none: no arguments, ``--help`` or another option first, or a word that is no command."""
    return args[0] if args and args[0] in VERBS else None


def build_app(verbs: Iterable[str] | None = None) -> typer.Typer:
    """The ``waymark`` typer app with ``verbs`` (default: every command), each imported from its
    module now."""
    app = typer.Typer(
        name="waymark",
        help="Run long multi-week plans on Prefect and resume them where they stopped.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name in VERBS if verbs is None else verbs:
        verb = VERBS[name]
        target = verb.load()
        if verb.group:
            _one_line_summaries(target)
            app.add_typer(target, name=name)
        else:
            app.command(name, **verb.options)(target)
    _one_line_summaries(app)
    return app


def _one_line_summaries(group: typer.Typer) -> None:
    """Each command's line in ``waymark --help``: its help's first paragraph on one line (typer's
    rich help keeps a docstring's single line breaks there, mid-sentence)."""
    for info in group.registered_commands:
        text = info.help or (info.callback.__doc__ if info.callback else None)
        if info.short_help is None and text:
            info.short_help = " ".join(inspect.cleandoc(text).split("\n\n")[0].split())
