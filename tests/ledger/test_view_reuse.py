"""``build_view(plan, states, previous=...)``: a run's end view keeps the step views of its start
view that nothing changed, and is the view a fresh build gives."""

from __future__ import annotations

import random
from pathlib import Path

from prefect_waymark.ledger.progress_view import build_view
from prefect_waymark.ledger.step_state import StepState
from prefect_waymark.models import StepStatus
from prefect_waymark.plan.loader import validate_plan_data
from prefect_waymark.plan.spec import PlanSpec


def _plan(n: int) -> PlanSpec:
    """A chain, every third step also after the step three before it, on two branches."""
    steps = []
    for i in range(n):
        needs = [f"s{j:04d}" for j in (i - 1, i - 3) if j >= 0 and (j == i - 1 or i % 3 == 0)]
        steps.append(
            {"id": f"s{i:04d}", "run": "true", "branch": "b" if i % 4 == 3 else "main"}
            | ({"depends_on": needs} if needs else {})
        )
    return validate_plan_data(
        {"plan_id": "reuse", "steps": steps}, source="<t>", base_dir=Path(".")
    )


def _random_states(plan: PlanSpec, rng: random.Random, k: int) -> dict[str, StepState]:
    ids = [s.id for s in plan.steps]
    return {
        sid: StepState(
            step_id=sid,
            status=rng.choice(list(StepStatus)),
            attempts=rng.randint(0, 2),
            error=rng.choice([None, "boom"]),
            def_hash=rng.choice([None, "old"]),
            blocked_on=rng.choice([None, None, None, ids[0]]),
        )
        for sid in rng.sample(ids, k)
    }


def test_the_reused_view_is_the_fresh_one() -> None:
    plan = _plan(300)
    rng = random.Random(16)
    for trial in range(40):
        start = _random_states(plan, rng, 60) if trial % 2 else {}
        end = dict(start)
        for sid, st in _random_states(plan, rng, 20).items():
            if rng.random() < 0.3:
                end.pop(sid, None)
            else:
                end[sid] = st
        reused = build_view(plan, end, previous=build_view(plan, start))
        assert reused == build_view(plan, end), trial
        # A view rebuilt from a rebuilt one (what it kept of the plan is kept again).
        later = {**end, **_random_states(plan, rng, 10)}
        assert build_view(plan, later, previous=reused) == build_view(plan, later), trial


def test_only_the_steps_that_moved_are_built_again() -> None:
    plan = _plan(1000)
    first = plan.steps[0].id
    start = build_view(plan, {})
    done = {first: StepState(step_id=first, status=StepStatus.completed)}
    end = build_view(plan, done, previous=start)
    kept = [a is b for a, b in zip(start.steps, end.steps, strict=True)]
    # The completed step and the two that need it (s0001, s0003: a need's status changed) are
    # built again; the other 997 views are the start view's.
    assert [i for i, k in enumerate(kept) if not k] == [0, 1, 3]
    assert end.next_step == plan.steps[1].id and end.counts == {"completed": 1, "pending": 999}
    # Another plan object (an edited plan): nothing is reused.
    other = _plan(1000)
    fresh = build_view(other, {}, previous=start)
    assert not any(a is b for a, b in zip(start.steps, fresh.steps, strict=True))
    # A failed step blocks what comes after it: those views are built again.
    failed = {first: StepState(step_id=first, status=StepStatus.failed, error="x")}
    after = build_view(plan, failed, previous=start)
    assert after.step(plan.steps[1].id).status == "blocked"
    assert after == build_view(plan, failed)
