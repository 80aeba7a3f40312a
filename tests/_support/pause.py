"""Answer a paused flow run the way the Prefect UI does: ``resume_flow_run(id, run_input=...)``."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from prefect_waymark.ledger import open_ledger

__all__ = ["answer_when_paused", "start_answering"]


def _when_paused(flow_run_id: uuid.UUID, inspect: Callable[[uuid.UUID], None]) -> None:
    """Call ``inspect`` once the flow run is Paused (what a person sees before answering)."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(flow_run_id).state
        if state is not None and state.is_paused():
            inspect(flow_run_id)
            return
        time.sleep(0.2)
    raise TimeoutError(f"flow run {flow_run_id} never paused")


def answer_when_paused(
    ledger_url: str,
    plan_id: str,
    answer: dict[str, Any],
    box: list[Any],
    inspect: Callable[[uuid.UUID], None] | None = None,
) -> None:
    """Wait for the run's ``review_waiting`` event, then resume the flow run with ``answer``.
    On success ``box`` holds ``["resumed", step_id]``; otherwise it lists what went wrong.
    ``inspect`` is called with the flow run id once it is Paused, before the answer."""
    from prefect.flow_runs import resume_flow_run

    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with open_ledger(ledger_url) as led:
                waiting = led.last_event(plan_id, ["review_waiting"])
            if waiting is not None:
                if inspect is not None:
                    _when_paused(uuid.UUID(waiting.data["flow_run_id"]), inspect)
                # The pause is proposed right after the event; resume_flow_run needs it Paused.
                for _ in range(100):
                    try:
                        resume_flow_run(uuid.UUID(waiting.data["flow_run_id"]), run_input=answer)
                        box[:] = ["resumed", waiting.step_id]  # earlier tries are moot
                        return
                    except Exception as exc:  # noqa: BLE001 - not paused yet: try again
                        box.append(repr(exc))
                        time.sleep(0.3)
                return
            time.sleep(0.3)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        box.append(repr(exc))


def start_answering(
    ledger_url: str,
    plan_id: str,
    answer: dict[str, Any],
    inspect: Callable[[uuid.UUID], None] | None = None,
) -> tuple[threading.Thread, list[Any]]:
    """Answer in a background thread; returns the thread and the box it reports into."""
    box: list[Any] = []
    helper = threading.Thread(
        target=answer_when_paused, args=(ledger_url, plan_id, answer, box, inspect), daemon=True
    )
    helper.start()
    return helper, box
