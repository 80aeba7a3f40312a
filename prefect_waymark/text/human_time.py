"""Times as people read them: "3 h ago (Tue 01 Dec 2026, 08:23 CET)" instead of raw ISO text."""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["ago", "as_datetime", "deadline", "local_stamp", "when"]


def as_datetime(at: datetime | str | None) -> datetime | None:
    """``at`` as an aware datetime (naive values are UTC); ``None`` if absent or unreadable."""
    if at is None or at == "":
        return None
    if isinstance(at, str):
        try:
            at = datetime.fromisoformat(at)
        except ValueError:
            return None
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


def ago(at: datetime | str | None, now: datetime) -> str:
    """``at`` relative to ``now``: "just now", "12 min ago", "3 h ago", "2 days ago", "in 5 min"."""
    moment = as_datetime(at)
    if moment is None:
        return "never"
    seconds = (as_datetime(now) or now) - moment
    total = seconds.total_seconds()
    future, total = total < 0, abs(total)
    if total < 45:
        return "just now"
    if total < 3600:
        amount = f"{max(1, round(total / 60))} min"
    elif total < 36 * 3600:
        amount = f"{round(total / 3600)} h"
    else:
        days = round(total / 86400)
        amount = f"{days} day{'s' if days != 1 else ''}"
    return f"in {amount}" if future else f"{amount} ago"


def local_stamp(at: datetime | str | None) -> str:
    """The local date and time: "Tue 01 Dec 2026, 08:23 CET"."""
    moment = as_datetime(at)
    if moment is None:
        return "-"
    local = moment.astimezone()
    return f"{local:%a %d %b %Y, %H:%M} {local.tzname() or local.strftime('%z')}"


def when(at: datetime | str | None, now: datetime) -> str:
    """Both: "3 h ago (Tue 01 Dec 2026, 08:23 CET)"."""
    if as_datetime(at) is None:
        return "never"
    return f"{ago(at, now)} ({local_stamp(at)})"


def deadline(at: datetime | str | None, now: datetime) -> str:
    """A time to come, read after "until": "Tue 01 Dec 2026, 08:23 CET (in 15 min)"."""
    if as_datetime(at) is None:
        return "never"
    return f"{local_stamp(at)} ({ago(at, now)})"
