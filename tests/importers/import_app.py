"""A test-only command line with ``waymark import`` registered the way the lead registers it in
``prefect_waymark/cli/commands.py`` (``app.command("import")(import_plan)``); the tests run it in a
real subprocess: ``python tests/importers/import_app.py import FILE --from ...``."""

from __future__ import annotations

import typer

from prefect_waymark.cli.import_command import import_plan

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True)
app.command("import")(import_plan)


@app.callback()
def _root() -> None:
    """waymark (test build: the import command only)."""


if __name__ == "__main__":
    app()
