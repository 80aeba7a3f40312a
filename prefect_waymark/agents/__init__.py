"""Agents and people as executors: steps done outside the flow, checked in with the CLI.

A step with ``kind: agent`` or ``kind: manual`` has ``instructions`` instead of ``run`` /
``call``. Its executor asks ``waymark next`` what to do (:mod:`.next_step`: re-anchors first),
takes the branch's one in_progress slot with ``waymark start``, renews it with ``waymark tick``
and checks in with ``waymark done`` / ``fail`` / ``block`` (:mod:`.checkin`). Every check-in is
a ledger event like a flow-run step's; the ledger's rule of one in_progress step per branch
holds for agents, people and flow runs alike. A flow run that reaches such a step waits for it
(``agent_wait_seconds``) or stops with "waiting for <owner>" (exit 3); the next run continues
from what was checked in.
"""

from __future__ import annotations

__all__: list[str] = []
