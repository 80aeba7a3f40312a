"""Re-anchoring for check-ins: the seed's ``before_decision()`` outside a flow run.

``waymark next``, ``start`` and every N-th ``tick`` re-read the goal contract and the state refs
(the same :class:`~prefect_waymark.guards._anchor.Anchor` a flow run uses, recorded as a
``reanchor`` ledger event with ``point: before_decision`` or ``tick``); a conflict stops the step
for review through the same gate a flow run's stops go through.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..guards._anchor import Anchor
from ..guards.base import Verdict
from ..guards.conflicts import load_accepted, verdict_for
from ..guards.reanchor import forbidden_verdict
from ..ledger import Ledger
from ..models import forbidden_rule
from ..plan.spec import PlanSpec, StepSpec

__all__ = ["Reading", "reanchor"]

log = logging.getLogger("prefect_waymark.agents")


@dataclass
class Reading:
    """What a re-anchor found: the contract's words, each ref's versions, and the verdict."""

    goal: str | None = None
    forbidden: list[str] = field(default_factory=list)
    refs: list[dict[str, Any]] = field(default_factory=list)
    verdict: Verdict | None = None


def reanchor(
    plan: PlanSpec,
    ledger: Ledger,
    workdir: Path,
    run_id: str,
    step: StepSpec | None,
    point: str = "before_decision",
    *,
    all_refs: bool = False,
) -> Reading:
    """Re-read the contract and the refs (all of them with ``all_refs`` or without ``step``,
    else the ones it reads and writes); return what was read and the verdict a conflict — or a
    forbidden action — gives ``step``."""
    a = Anchor(plan, ledger, workdir, run_id)
    a.accepted = load_accepted(ledger, plan.plan_id)
    a.load_refs()
    if all_refs or step is None:
        names = list(a.configs)
    else:
        names = list(dict.fromkeys(step.reads + step.writes))
    conflicts = a.reanchor(point, names, True, step.id if step else None)
    out = Reading(forbidden=a.forbidden)
    if a.contract is not None:
        out.goal = a.contract.objective
    last = ledger.last_event(plan.plan_id, ["reanchor"])
    if last is not None:
        out.refs = [
            {k: r.get(k) for k in ("name", "kind", "where", "accepted", "current", "result")}
            for r in last.data.get("refs") or []
        ]
    if conflicts:
        out.verdict = verdict_for(conflicts, point, a.contract_rec)
    elif step is not None and step.action is not None and a.contract is not None:
        rule = forbidden_rule(step.action, a.contract.forbidden)
        if rule is not None:
            out.verdict = forbidden_verdict(step, rule, a.contract)
    return out
