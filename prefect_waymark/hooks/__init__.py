"""Agent harness hooks: ``waymark hook claude-code EVENT`` and ``waymark hook generic``.

A coding agent's harness (Claude Code, or another that runs a command per lifecycle event)
calls the hook with the event as JSON on stdin; the hook answers from the plan file and the
ledger alone — never Prefect — so an agent that checks in to a plan is re-anchored and held to
the goal contract without having to remember to ask:

- ``SessionStart``: the ``waymark next`` context (:mod:`.texts`) as context for the agent;
- ``UserPromptSubmit`` / ``PreToolUse`` / ``PostToolUse``: every N prompts and tool calls
  (:mod:`.counter`) a re-anchor reminder; ``PreToolUse`` also denies a tool call the contract
  forbids (:mod:`.forbidden`, reading shell commands with :mod:`.shell_commands`; while the plan
  file is invalid, against the list recorded while it was valid: :mod:`.fallback`);
- ``Stop``: refuses to end the turn while the executor's step is open or was checked in
  without evidence for each acceptance item.

:mod:`.decisions` decides (one :class:`~.decisions.Decision` per event, shared by both forms);
:mod:`.claude_code` writes it in Claude Code's hooks protocol, the decision's own JSON is the
harness-neutral form; :mod:`.command` is ``waymark hook``'s one parser, without typer (the
console script calls it first, the CLI's ``hook`` command forwards to it, ``python -m
prefect_waymark.hooks`` runs it); :mod:`.loaded` keeps the plan's facts that an allowed tool call
needs, so that it imports neither pydantic nor SQLAlchemy. A hook never breaks the session: any
failure is an answer without a decision and one line on stderr.
"""

from __future__ import annotations

__all__: list[str] = []
