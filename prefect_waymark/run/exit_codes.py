"""Exit codes shared by every ``waymark`` command."""

from __future__ import annotations

OK = 0  # plan completed / command succeeded
STEP_FAILED = 1  # a step failed
BAD_INPUT = 2  # invalid plan, arguments or files
STOPPED = 3  # stopped with steps remaining (budget, --until)
NEEDS_REVIEW = 4  # stopped for a human review
INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT); SIGTERM ends the process by its signal (143)

#: Each code in a few words, as ``waymark mcp``'s tool errors name it (docs: exit codes).
MEANINGS = {
    OK: "done",
    STEP_FAILED: "a step failed",
    BAD_INPUT: "bad input",
    STOPPED: "stopped with steps remaining (nothing ready)",
    NEEDS_REVIEW: "review needed",
    INTERRUPTED: "interrupted",
}
