"""What a restore (:meth:`~.plan_archive.PlanArchive.restore_plan`) derives from the exported
events beyond the rows themselves: the ``seq`` references inside event data moved with the
events, and the branch holds of the steps left in progress.

Shifted by the restore's offset (they name other events of the plan by their ``seq``):

- ``boundary.seq_start`` and ``boundary.seq_end`` in ``run_finished`` and ``marker_written``
  data (a run's ledger range, boundary/);
- ``stops`` in ``review_announced`` data (step -> the seq of its ``step_needs_review``, how a
  later run knows a stop was announced already).

Not shifted: a suspended run's ``pause_key`` (``waymark-review-<seq>`` in ``review_waiting`` and
``review_resumed``). It is an identifier the Prefect server holds for the paused flow run, read
back from the event (never recomputed from the seq): changing it would leave the run's form
unanswerable. Nor an event's own ``seq`` read at view time (``closed.seq``): that is the row's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from .events import EventKind, ProgressEvent
from .step_state import StepState

__all__ = ["SEQ_MAX", "restored_holds", "shift_refs"]

#: The largest ``seq`` a ledger holds: PostgreSQL's ``integer`` column (SQLite takes 64 bits;
#: an export must restore into either).
SEQ_MAX = 2**31 - 1


def _moved(value: Any, offset: int) -> Any:
    return value + offset if isinstance(value, int) and not isinstance(value, bool) else value


def shift_refs(ev: ProgressEvent, offset: int) -> ProgressEvent:
    """``ev`` with the seq references in its data moved up by ``offset``."""
    if not offset:
        return ev
    data = ev.data
    boundary = data.get("boundary")
    if ev.kind in (EventKind.run_finished, EventKind.marker_written) and isinstance(boundary, dict):
        moved = {
            k: _moved(v, offset) if k in ("seq_start", "seq_end") else v
            for k, v in boundary.items()
        }
        data = {**data, "boundary": moved}
    stops = data.get("stops")
    if ev.kind == EventKind.review_announced and isinstance(stops, dict):
        data = {**data, "stops": {k: _moved(v, offset) for k, v in stops.items()}}
    return ev if data is ev.data else ev.model_copy(update={"data": data})


def restored_holds(
    plan_id: str, states: Mapping[str, StepState], started: Mapping[str, ProgressEvent]
) -> list[dict[str, Any]]:
    """The holds rows of the steps in progress (one per branch), from each one's last
    ``step_started``: its run, branch, host, pid and time. The lease counts as run out at the
    restore: the holder renews it (``waymark tick``, a flow run's heartbeat) or, as after a
    crash, another run may take the step over; ``done``/``fail`` of its executor go through."""
    rows: dict[str, dict[str, Any]] = {}
    now = time.time()
    in_progress: Sequence[str] = [s for s, st in states.items() if st.status == "in_progress"]
    for step_id in sorted(in_progress, key=lambda s: started[s].seq or 0 if s in started else 0):
        ev = started.get(step_id)
        if ev is None:
            continue
        branch = ev.branch or states[step_id].branch or "main"
        pid = ev.data.get("pid")
        rows[branch] = {  # a later start on the same branch wins (never two, in a real ledger)
            "plan_id": plan_id,
            "branch": branch,
            "step_id": step_id,
            "run_id": ev.run_id or "",
            "host": str(ev.data.get("host") or "")[:255],
            "pid": pid if isinstance(pid, int) and 0 <= pid <= SEQ_MAX else 0,
            "since": ev.at.isoformat(),
            "lease_until": now,
        }
    return list(rows.values())
