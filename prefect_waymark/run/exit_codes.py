"""Exit codes shared by every ``waymark`` command."""

from __future__ import annotations

OK = 0  # plan completed / command succeeded
STEP_FAILED = 1  # a step failed
BAD_INPUT = 2  # invalid plan, arguments or files
STOPPED = 3  # stopped with steps remaining (budget, --until)
NEEDS_REVIEW = 4  # stopped for a human review
INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT); SIGTERM ends the process by its signal (143)
