"""``ReadyFrontier``: the steps a pass of the scheduler looks at — not completed, every need
completed — kept from the run's own moves, and the whole rest of the plan once a pass re-read
the ledger (an answer may have made any step ready)."""

from __future__ import annotations

from pathlib import Path

from prefect_waymark.flows.frontier import ReadyFrontier
from prefect_waymark.plan.loader import validate_plan_data


def _frontier() -> tuple[ReadyFrontier, dict[str, str]]:
    # a -> b, a -> c, (b, c) -> d; e alone
    steps = [
        {"id": "a", "run": "true"},
        {"id": "b", "run": "true", "depends_on": ["a"]},
        {"id": "c", "run": "true", "depends_on": ["a"]},
        {"id": "d", "run": "true", "depends_on": ["b", "c"]},
        {"id": "e", "run": "true"},
    ]
    plan = validate_plan_data({"plan_id": "f", "steps": steps}, source="<t>", base_dir=Path("."))
    order = plan.topological_order()
    status = dict.fromkeys(order, "pending")
    return ReadyFrontier(order, {s.id: s for s in plan.steps}, status), status


def _in_order(frontier: ReadyFrontier, steps: list[str]) -> list[str]:
    return sorted(steps, key=frontier.position.__getitem__)


def test_the_frontier_follows_completions() -> None:
    frontier, status = _frontier()
    now = frontier.of(frontier.order)
    assert now == _in_order(frontier, ["a", "e"])
    assert frontier.advance(now) is now  # nothing completed: the same list, no work
    status["a"] = "in_progress"
    assert frontier.advance(now) == now
    status["a"] = "completed"
    now = frontier.advance(now)
    assert now == _in_order(frontier, ["b", "c", "e"])
    status["b"], status["e"] = "completed", "failed"  # a failed step stays (a retry may run it)
    now = frontier.advance(now)
    assert now == _in_order(frontier, ["c", "e"])
    status["c"] = "completed"
    now = frontier.advance(now)
    assert now == _in_order(frontier, ["d", "e"])
    # The frontier is what a full look at the plan gives.
    assert now == frontier.of(frontier.order)


def test_a_pass_that_reread_the_ledger_looks_at_every_open_step_after() -> None:
    frontier, status = _frontier()
    now = frontier.of(frontier.order)
    reread = [False]
    seen = []
    for sid in frontier.scan(now, lambda: reread[0]):
        seen.append(sid)
        if sid == now[0]:
            reread[0] = True  # e.g. an answer during this step's pause
    rest = [s for s in frontier.order[frontier.position[now[0]] + 1 :]]
    assert seen == [now[0], *rest]
    assert [s for s in frontier.scan(now, lambda: False)] == now
