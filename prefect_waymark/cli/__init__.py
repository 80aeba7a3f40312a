"""The ``waymark`` command line. Prefect is imported only by the commands that run plans; typer
and the command modules load when ``app`` is first asked for (``waymark status``, the table or
``--json``, on a plan it knows may answer without them: :mod:`.quick_status`)."""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .commands import app

__all__ = ["READ_COMMANDS", "app", "main"]

#: Commands that read, print and exit. They run with the cyclic garbage collector off: each of
#: its passes walks every object a big plan loaded (~1 million for 10,000 steps: ~0.1 s of a
#: 0.6 s ``waymark status``), to free almost nothing before the process ends anyway.
READ_COMMANDS = frozenset({"status", "validate", "schema"})


def main() -> None:
    """The ``waymark`` console script."""
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    if command in READ_COMMANDS:
        gc.disable()
    if command == "status":
        from .quick_status import quick_status

        try:
            code = quick_status(sys.argv[1:])
        except KeyboardInterrupt:  # Ctrl-C: as typer (>= 0.13) ends the full command, quietly
            from ..run.exit_codes import INTERRUPTED

            sys.exit(INTERRUPTED)
        if code is not None:
            sys.exit(code)
    from .commands import app

    app()


__getattr__ = _lazy_exports(__name__, {"app": ".commands"})
