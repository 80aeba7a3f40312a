"""``python -m prefect_waymark.hooks claude-code EVENT``: the ``waymark hook`` commands, for a
harness that runs a Python module rather than the ``waymark`` script."""

from __future__ import annotations

import sys

from .command import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="waymark hook"))
