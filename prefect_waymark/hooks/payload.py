"""The event a harness hands a hook on stdin, read leniently.

The fields are Claude Code's (``session_id``, ``cwd``, ``hook_event_name``, ``tool_name``,
``tool_input``, ``prompt``, ``stop_hook_active``, ``source``, ``task_subject``, ``agent_type``,
...); the generic form reads the
same names. Unknown fields are kept and ignored, a field of the wrong type counts as absent:
a harness that adds fields, or sends a partial event, still gets an answer. Only input that is
not a JSON object at all is refused, and the hook answers that without
a decision (:func:`parse_payload` raises ``ValueError``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["EVENTS", "HookInput", "event_name", "parse_payload"]

#: The events the hook answers, by their Claude Code names.
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "TaskCompleted",
    "SubagentStart",
)
_BY_KEY = {e.lower(): e for e in EVENTS}
#: Enough for any tool input a harness sends (a Write of a big file); more is not an event.
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024


@dataclass
class HookInput:
    """One event, as far as the hook reads it: a plain dataclass read by :meth:`from_json`
    (the hook runs on every tool call; pydantic's import would be most of its cost)."""

    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    permission_mode: str | None = None
    source: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    stop_hook_active: bool = False
    agent_id: str | None = None
    agent_type: str | None = None
    #: TaskCompleted: the session task being closed (Claude Code's task list).
    task_id: str | None = None
    task_subject: str | None = None
    task_description: str | None = None
    #: The fields the hook does not read, kept as given.
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HookInput:
        """The event in a JSON object: a text field that is not a string, a ``tool_input``
        that is not an object and a ``stop_hook_active`` that is not ``true`` count as absent."""
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key == "tool_input":
                known[key] = value if isinstance(value, dict) else None
            elif key == "stop_hook_active":
                known[key] = value is True
            elif key in _TEXT:
                known[key] = value if isinstance(value, str) else None
            else:
                extra[key] = value
        return cls(**known, extra=extra)

    @property
    def command(self) -> str | None:
        """The shell command of a tool call whose input has one (Bash, PowerShell, ...)."""
        cmd = (self.tool_input or {}).get("command")
        return cmd if isinstance(cmd, str) else None


_TEXT = frozenset(f.name for f in fields(HookInput)) - {"tool_input", "stop_hook_active", "extra"}


def parse_payload(raw: bytes | str) -> HookInput:
    """The event in ``raw``; empty input is an empty event. Raises ``ValueError`` (one line:
    why it is no event)."""
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"stdin holds {len(raw)} bytes: more than an event")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return HookInput()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"stdin is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"stdin is JSON but not an object (a {type(data).__name__})")
    return HookInput.from_json(data)


def event_name(given: str | None) -> str | None:
    """``given`` as one of :data:`EVENTS` (``pre-tool-use``, ``pre_tool_use`` and ``pretooluse``
    name ``PreToolUse``); ``None`` for anything else."""
    if not given:
        return None
    return _BY_KEY.get(re.sub(r"[-_\s]", "", given).lower())
