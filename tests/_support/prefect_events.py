"""Events waymark sends to the Prefect server, read back from it."""

from __future__ import annotations

import time
from typing import Any


def needs_review_events(plan_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    flt = EventFilter(
        event=EventNameFilter(name=["waymark.plan.needs-review"]),
        resource=EventResourceFilter(id=[f"waymark.plan.{plan_id}"]),
    )
    # The server ingests events asynchronously: wait for it (up to 60 s), do not time it.
    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            found = list(client.read_events(filter=flt, limit=50).events)
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.5)
