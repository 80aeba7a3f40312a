"""The plan in one line, as artifact descriptions and cards show it:
``failed at check-figures · 3/6 done · next: check-figures``."""

from __future__ import annotations

from ..ledger.progress_view import PlanView

__all__ = ["next_start", "plan_line"]


def next_start(view: PlanView) -> str | None:
    """Where the next run starts: a step waiting for review first, else the next ready step."""
    if view.complete:
        return None
    if view.needs_review:
        return str(view.needs_review[0]["step"])
    return view.next_step


def plan_line(
    view: PlanView,
    *,
    result: str | None = None,
    executed: int | None = None,
    paused_at: str | None = None,
    aborted: bool = False,
) -> str:
    """``result`` is the run's (``completed``, ``stopped``, ...) once it ended; ``executed`` the
    number of steps it ran; ``paused_at`` the step a paused run waits on."""
    total = len(view.steps)
    done = view.counts.get("completed", 0)
    parts: list[str] = []
    failed = [s.id for s in view.steps if s.status == "failed"]
    running = sorted(view.current_step.values())
    if view.complete:
        return f"complete · {done}/{total} done"
    if aborted:
        parts.append("aborted")
    elif paused_at is not None:
        parts.append(f"paused for review at {paused_at}")
    elif view.needs_review:
        parts.append(f"needs review at {view.needs_review[0]['step']}")
    elif failed:
        parts.append(f"failed at {failed[0]}" + (f" (+{len(failed) - 1})" if failed[1:] else ""))
    elif running and result is None:
        parts.append("running " + ", ".join(running[:3]) + (" …" if running[3:] else ""))
    elif result == "stopped" and executed is not None:
        parts.append(f"stopped after {executed} step{'s' if executed != 1 else ''}")
    elif result == "interrupted":
        parts.append("interrupted")
    parts.append(f"{done}/{total} done")
    nxt = next_start(view)
    parts.append(f"next: {nxt}" if nxt else "next: none ready")
    return " · ".join(parts)
