"""Who runs a plan, and where: cheap helpers used by the CLI without importing Prefect."""

from __future__ import annotations

import getpass
import socket


def default_executor() -> str:
    """``user@host``, the executor recorded when none is given."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
