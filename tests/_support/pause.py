"""Answer a paused flow run the way the Prefect UI does: ``resume_flow_run(id, run_input=...)``."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from prefect_waymark.ledger import open_ledger

__all__ = ["answer_when_paused", "start_answering"]


def answer_when_paused(
    ledger_url: str, plan_id: str, answer: dict[str, Any], box: list[Any]
) -> None:
    """Wait for the run's ``review_waiting`` event, then resume the flow run with ``answer``.
    On success ``box`` holds ``["resumed", step_id]``; otherwise it lists what went wrong."""
    from prefect.flow_runs import resume_flow_run

    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with open_ledger(ledger_url) as led:
                waiting = led.last_event(plan_id, ["review_waiting"])
            if waiting is not None:
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
    ledger_url: str, plan_id: str, answer: dict[str, Any]
) -> tuple[threading.Thread, list[Any]]:
    """Answer in a background thread; returns the thread and the box it reports into."""
    box: list[Any] = []
    helper = threading.Thread(
        target=answer_when_paused, args=(ledger_url, plan_id, answer, box), daemon=True
    )
    helper.start()
    return helper, box
