"""A :class:`~.decisions.Decision` in Claude Code's hooks protocol.

From Claude Code's hooks reference (https://code.claude.com/docs/en/hooks): a command hook
gets the event as JSON on stdin and answers with its exit code and stdout. This module answers
with exit code 0 and, when there is something to say, one JSON object on stdout — and with exit
2 only where Claude Code offers no JSON way to block: a ``TaskCompleted`` block, whose stderr
(the reason alone) goes to Claude. Never another non-zero code, which shows a "hook error"
notice. Stderr at exit 0 goes to Claude Code's debug log only (``claude --debug``): the hook's
notices are silent there.

========================  ======================================================================
SessionStart              ``hookSpecificOutput.additionalContext`` (added before the first
                          prompt); ``systemMessage`` (shown to the person) for a setup problem
UserPromptSubmit          ``hookSpecificOutput.additionalContext`` (next to the prompt)
PreToolUse                ``hookSpecificOutput.permissionDecision: "deny"`` with
                          ``permissionDecisionReason`` (shown to Claude); a reminder as
                          ``hookSpecificOutput.additionalContext``. An allowed call gets no
                          ``permissionDecision`` at all: ``"allow"`` would skip the person's
                          permission prompt, which is not the hook's to skip
PostToolUse               ``hookSpecificOutput.additionalContext`` (next to the tool result)
Stop                      top-level ``decision: "block"`` with ``reason`` (required; tells
                          Claude why to go on)
TaskCompleted             a block: exit 2 with the reason on stderr (the session task stays
                          open; Claude reads why); otherwise nothing
SubagentStart             ``hookSpecificOutput.additionalContext`` (the subagent's context)
========================  ======================================================================
"""

from __future__ import annotations

import json
from typing import Any

from .decisions import Decision

__all__ = ["answer", "blocks"]


def _specific(event: str, **fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}


def blocks(d: Decision) -> bool:
    """Whether ``d`` is answered with exit 2 and its reason on stderr (a TaskCompleted block)."""
    return d.event == "TaskCompleted" and d.decision == "block"


def answer(d: Decision) -> str:
    """The stdout for ``d`` (empty: no decision, nothing to add, or a :func:`blocks` answer)."""
    out: dict[str, Any] = {}
    if d.event == "PreToolUse":
        fields: dict[str, Any] = {}
        if d.decision == "deny":
            fields["permissionDecision"] = "deny"
            fields["permissionDecisionReason"] = d.reason or "forbidden by the goal contract"
        if d.context:
            fields["additionalContext"] = d.context
        if fields:
            out = _specific("PreToolUse", **fields)
    elif d.event == "Stop":
        if d.decision == "block":
            out = {"decision": "block", "reason": d.reason or "the step is not checked in"}
    elif d.event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "SubagentStart"):
        if d.context:
            out = _specific(d.event, additionalContext=d.context)
    if d.event == "SessionStart" and d.user_message:
        out["systemMessage"] = d.user_message
    return json.dumps(out) if out else ""
