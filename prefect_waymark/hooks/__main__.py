"""``python -m prefect_waymark.hooks claude-code EVENT``: the ``waymark hook`` commands, for a
harness that runs a Python module rather than the ``waymark`` script."""

from __future__ import annotations

from .command import hook_app

if __name__ == "__main__":
    hook_app(prog_name="waymark hook")
