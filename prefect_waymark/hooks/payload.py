"""The event a harness hands a hook on stdin, read leniently.

The fields are Claude Code's (``session_id``, ``cwd``, ``hook_event_name``, ``tool_name``,
``tool_input``, ``prompt``, ``stop_hook_active``, ``source``, ...); the generic form reads the
same names. Unknown fields are kept and ignored, a field of the wrong type counts as absent:
a harness that adds fields, or sends a partial event, still gets an answer. Only input that is
not a JSON object at all is refused, and the hook answers that without
a decision (:func:`parse_payload` raises ``ValueError``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

__all__ = ["EVENTS", "HookInput", "event_name", "parse_payload"]

#: The events the hook answers, by their Claude Code names.
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
_BY_KEY = {e.lower(): e for e in EVENTS}
#: Enough for any tool input a harness sends (a Write of a big file); more is not an event.
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024


class HookInput(BaseModel):
    """One event, as far as the hook reads it."""

    model_config = ConfigDict(extra="allow")

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

    @field_validator(
        "session_id", "transcript_path", "cwd", "hook_event_name", "permission_mode", "source",
        "prompt", "tool_name", "tool_use_id", "agent_id", mode="before",
    )  # fmt: skip
    @classmethod
    def _text_or_none(cls, v: Any) -> Any:
        return v if isinstance(v, str) else None

    @field_validator("tool_input", mode="before")
    @classmethod
    def _object_or_none(cls, v: Any) -> Any:
        return v if isinstance(v, dict) else None

    @field_validator("stop_hook_active", mode="before")
    @classmethod
    def _true_only(cls, v: Any) -> bool:
        return v is True

    @property
    def command(self) -> str | None:
        """The shell command of a tool call whose input has one (Bash, PowerShell, ...)."""
        cmd = (self.tool_input or {}).get("command")
        return cmd if isinstance(cmd, str) else None


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
    try:
        return HookInput.model_validate(data)
    except ValidationError as exc:  # pragma: no cover - every field is lenient
        raise ValueError(f"stdin is not an event: {exc.errors()[0]['msg']}") from None


def event_name(given: str | None) -> str | None:
    """``given`` as one of :data:`EVENTS` (``pre-tool-use``, ``pre_tool_use`` and ``pretooluse``
    name ``PreToolUse``); ``None`` for anything else."""
    if not given:
        return None
    return _BY_KEY.get(re.sub(r"[-_\s]", "", given).lower())
