"""``waymark server start|stop|status``: the local Prefect server that waymark runs reuse
(:mod:`prefect_waymark.prefect_server.local`)."""

from __future__ import annotations

import typer

__all__ = ["server_app"]

server_app = typer.Typer(
    help="A local Prefect server that waymark runs reuse.", no_args_is_help=True
)


@server_app.command("start")
def server_start() -> None:
    """Start (or find) the local Prefect server and print its API URL."""
    from ..prefect_server.local import ensure_local_server

    info = ensure_local_server(echo=True)
    print(info.api_url)


@server_app.command("stop")
def server_stop() -> None:
    """Stop the local Prefect server waymark started."""
    from ..prefect_server.local import stop_local_server

    print("stopped" if stop_local_server() else "no local server was running")


@server_app.command("status")
def server_status() -> None:
    """Say whether the local Prefect server is up, and where."""
    from ..prefect_server.local import find_local_server

    info = find_local_server()
    if info is None:
        print("no local server running")
        raise typer.Exit(1)
    print(f"{info.api_url} (pid {info.pid}); UI at {info.ui_url}")
