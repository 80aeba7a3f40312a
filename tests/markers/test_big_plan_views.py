"""Views of a huge plan: the steps table artifact and the plan page list what a person reads
and say what they left out."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from prefect_waymark.ledger.progress_view import build_view
from prefect_waymark.ledger.step_state import StepState
from prefect_waymark.markers.artifacts import STEPS_TABLE_MAX, _table_steps
from prefect_waymark.markers.plan_page.render import ROWS_SHOWN, acceptance_section, steps_section
from prefect_waymark.models import StepStatus
from prefect_waymark.plan.loader import validate_plan_data
from prefect_waymark.plan.spec import PlanSpec


def _plan(n: int) -> PlanSpec:
    steps = [
        {"id": f"s{i:05d}", "run": "true", "acceptance": [f"item {i}"]}
        | ({"depends_on": [f"s{i - 1:05d}"]} if i else {})
        for i in range(n)
    ]
    return validate_plan_data({"plan_id": "big", "steps": steps}, source="<t>", base_dir=Path("."))


def test_steps_table_keeps_touched_steps_and_caps_the_rest() -> None:
    plan = _plan(STEPS_TABLE_MAX + 300)
    late = f"s{STEPS_TABLE_MAX + 200:05d}"  # a step past the cap with a record: still listed
    states = {
        "s00000": StepState(step_id="s00000", status=StepStatus.completed),
        late: StepState(step_id=late, status=StepStatus.failed, error="boom"),
    }
    view = build_view(plan, states)
    shown = [s.id for s in _table_steps(view)]
    assert len(shown) == STEPS_TABLE_MAX
    assert shown[0] == "s00000" and late in shown
    assert shown == sorted(shown)  # plan order
    small = build_view(_plan(5), {})
    assert [s.id for s in _table_steps(small)] == [s.id for s in small.steps]


def test_page_sections_render_the_rows_shown_and_count_the_rest() -> None:
    n = ROWS_SHOWN + 25
    plan = _plan(n)
    view = build_view(plan, {})
    now = datetime.now(timezone.utc)
    steps = "\n".join(steps_section(view, {}, now))
    assert f"### Pending ({n})" in steps
    assert "… and 25 more steps (see TASKS.md)" in steps
    assert f"s{ROWS_SHOWN - 1:05d}" in steps and f"s{ROWS_SHOWN:05d}" not in steps
    acceptance = "\n".join(acceptance_section(plan, view, {}, now))
    assert "… and 25 more items (see TASKS.md)" in acceptance
    assert f"item {ROWS_SHOWN - 1}" in acceptance and f"item {ROWS_SHOWN}" not in acceptance


def test_steps_table_keeps_the_running_and_failed_steps_of_a_long_history() -> None:
    """1,200 completed steps, then a failed one, a running one and pending ones: the cap keeps
    the two that matter and the latest completed ones, not the first 1,000 completed."""
    n = STEPS_TABLE_MAX + 400
    plan = _plan(n)
    done = STEPS_TABLE_MAX + 200
    states = {
        f"s{i:05d}": StepState(
            step_id=f"s{i:05d}",
            status=StepStatus.completed,
            last_at=f"2026-11-{1 + i // 100:02d}T00:00:{i % 60:02d}+00:00",
        )
        for i in range(done)
    }
    failed, running = f"s{done:05d}", f"s{done + 1:05d}"
    states[failed] = StepState(step_id=failed, status=StepStatus.failed, error="boom")
    states[running] = StepState(step_id=running, status=StepStatus.in_progress)
    shown = [s.id for s in _table_steps(build_view(plan, states))]
    assert len(shown) == STEPS_TABLE_MAX
    assert failed in shown and running in shown
    assert f"s{done - 1:05d}" in shown  # the latest completed step
    assert "s00000" not in shown  # the oldest completed ones give way
    assert shown == sorted(shown)  # plan order
