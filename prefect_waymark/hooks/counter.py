"""A hook session's small state: its prompt and tool-call counts, kept between hook calls.

Each hook call is a new process, so what it must remember lives in
``<workdir>/.waymark/hooks/<session_id>.json``: when the session was first seen, how many
prompts and tool calls it made (and how many since the last reminder), which event counts the
tool calls, the contract's words as ``SessionStart``'s re-anchor read them (and the plan file's
inline forbidden list at the last tool call), and which gaps in a
step's evidence ``Stop`` has told already. Parallel tool calls run their hooks at the same time:
the file is read and written under an exclusive ``flock`` (where the platform has one). A file
that cannot be read is a new session; one that cannot be written loses a count, never a
decision. ``SessionStart`` removes the files of sessions idle for :data:`KEEP_DAYS` days.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

try:  # POSIX; elsewhere the counts are kept without a lock
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "KEEP_DAYS",
    "HookSession",
    "prune_sessions",
    "read_session",
    "session_file",
    "updated_session",
]

KEEP_DAYS = 30
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class HookSession:
    """What a session's hooks remember (a plain dataclass: read and written on every call)."""

    session_id: str
    started_at: str = field(default_factory=_now)
    plan_id: str | None = None
    #: Prompts and tool calls since the last reminder (or the last SessionStart).
    since_reminder: int = 0
    prompts: int = 0
    tool_calls: int = 0
    reminders: int = 0
    #: The first tool event the session sent (PreToolUse or PostToolUse): only it counts tool
    #: calls, so a session with both hooks counts each call once.
    tool_event: str | None = None
    #: The contract as SessionStart's re-anchor read it (a contract block's words are not
    #: in the plan file, and the hooks after it read no Prefect).
    goal: str | None = None
    forbidden: list[str] | None = None
    #: The plan file's inline forbidden list at the last tool call: what is checked while the
    #: plan file is invalid (:mod:`.fallback`).
    plan_forbidden: list[str] | None = None
    #: The hash of the plan file's contract when this session last found it accepted (or
    #: nothing accepted yet): the ledger is read again only when the contract changes.
    accepted_contract: str | None = None
    stop_blocks: int = 0
    #: The done-without-evidence gaps Stop told already ("step:A2,A3"): each is told once.
    told: list[str] = field(default_factory=list)
    #: Why this state could not be kept (the file cannot be written); not saved.
    unsaved: str | None = None

    @classmethod
    def from_json(cls, doc: Any) -> HookSession:
        """The state in a decoded file; raises ``ValueError`` for anything else (a field of
        another type, no ``session_id``). Keys it does not know are left out."""
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        known: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "unsaved" or f.name not in doc:
                continue
            value = doc[f.name]
            if not _KINDS[f.name](value):
                raise ValueError(f"{f.name}: {type(value).__name__}")
            known[f.name] = value
        if "session_id" not in known:
            raise ValueError("no session_id")
        return cls(**known)

    def to_json(self) -> str:
        """The state as the file keeps it (without :attr:`unsaved`)."""
        doc = asdict(self)
        doc.pop("unsaved")
        return json.dumps(doc, separators=(",", ":"))

    def count(self, event: str) -> bool:
        """Count one prompt or tool call of ``event``; True if it is one that counts."""
        if event == "UserPromptSubmit":
            self.prompts += 1
        elif event in ("PreToolUse", "PostToolUse"):
            if self.tool_event is None:
                self.tool_event = event
            if self.tool_event != event:
                return False
            self.tool_calls += 1
        else:
            return False
        self.since_reminder += 1
        return True


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _text_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _texts_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v))


def _texts(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


#: What each saved field may hold; anything else makes the file a foreign one.
_KINDS = {
    "session_id": _text, "started_at": _text, "plan_id": _text_or_none,
    "since_reminder": _count, "prompts": _count, "tool_calls": _count, "reminders": _count,
    "tool_event": _text_or_none, "goal": _text_or_none, "forbidden": _texts_or_none,
    "plan_forbidden": _texts_or_none, "accepted_contract": _text_or_none,
    "stop_blocks": _count, "told": _texts,
}  # fmt: skip


def session_file(workdir: Path, session_id: str | None) -> Path:
    """The state file of ``session_id`` (made safe as a file name)."""
    name = _SAFE.sub("_", session_id or "")[:120] or "unknown-session"
    return workdir / ".waymark" / "hooks" / f"{name}.json"


def _lock(f: IO[str]) -> None:
    if fcntl is not None:
        with contextlib.suppress(OSError):  # a file system without locks: counted unlocked
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)


def _read(f: IO[str], session_id: str) -> HookSession:
    f.seek(0)
    raw = f.read()
    if raw.strip():
        try:
            found = HookSession.from_json(json.loads(raw))
            if found.session_id == session_id:
                return found
        except ValueError:
            pass  # a torn or foreign file: the session starts again
    return HookSession(session_id=session_id)


def read_session(workdir: Path, session_id: str | None) -> HookSession | None:
    """The session's state as last written, read only (no file: None)."""
    path = session_file(workdir, session_id)
    try:
        with open(path, encoding="utf-8") as f:
            _lock(f)
            return _read(f, session_id or "unknown-session")
    except OSError:
        return None


@contextlib.contextmanager
def updated_session(workdir: Path, session_id: str | None) -> Iterator[HookSession]:
    """The session's state, written back when the block ends (under the file's lock). A file
    that cannot be opened or written gives a fresh state with :attr:`HookSession.unsaved`
    saying why: the hook decides on, only the count is lost."""
    sid = session_id or "unknown-session"
    path = session_file(workdir, session_id)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "a+", encoding="utf-8")  # closed by the with below
    except OSError as exc:
        state = HookSession(session_id=sid, unsaved=f"{path}: {exc.strerror or exc}")
        yield state
        return
    with f:
        _lock(f)
        state = _read(f, sid)
        yield state
        try:
            f.seek(0)
            f.truncate()
            f.write(state.to_json())
            f.flush()
        except OSError as exc:
            state.unsaved = f"{path}: {exc.strerror or exc}"


def prune_sessions(workdir: Path, keep_days: float = KEEP_DAYS) -> int:
    """Remove the state files of sessions idle for ``keep_days``; return how many."""
    folder = workdir / ".waymark" / "hooks"
    cutoff = time.time() - keep_days * 86400
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for e in entries:
        try:
            if e.name.endswith(".json") and e.stat().st_mtime < cutoff:
                os.unlink(e.path)
                removed += 1
        except OSError:
            continue
    return removed
