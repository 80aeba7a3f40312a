"""Plan shapes shared by several tests, built with the public :class:`~prefect_waymark.Plan`.

``write_plan(folder, plan)`` writes any of them as a plan file (``Plan.to_dict()``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect_waymark import Plan

__all__ = ["counting_chain", "produce_consume"]


def counting_chain(
    plan_id: str,
    ids: Sequence[str],
    *,
    echo: str | None = None,
    reads: Sequence[str] = (),
    **plan_fields: Any,
) -> Plan:
    """Steps in one chain, each after the one before; each appends a line to ``<id>.count``.

    The line is ``echo`` (the step's own id if None), so the number of lines in ``<id>.count`` is
    the number of times the step really ran. Every step reads ``reads`` (if any).
    """
    plan = Plan(plan_id, **plan_fields)
    for i, sid in enumerate(ids):
        step: dict[str, Any] = {"id": sid, "run": f"echo {echo or sid} >> {sid}.count"}
        if i:
            step["depends_on"] = [ids[i - 1]]
        if reads:
            step["reads"] = list(reads)
        plan.add_step(**step)
    return plan


def produce_consume(plan_id: str, module: str) -> Plan:
    """``produce`` then ``consume``: two ``call:`` steps of ``<module>.py`` in the workdir."""
    return (
        Plan(plan_id)
        .add_step(id="produce", call=f"{module}:produce")
        .add_step(id="consume", call=f"{module}:consume", depends_on=["produce"])
    )
