"""A run of a big plan freezes the heap after the plan's load and thaws it at its end
(flows/plan_input.py): the collector skips the plan's ~10^6 objects during the run, and a
long-lived process gets them back afterwards — also when the run fails, and with nested runs."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from prefect_waymark.flows import run_plan
from prefect_waymark.flows.plan_input import FREEZE_MIN_STEPS, freeze_heap, thaw_heap
from prefect_waymark.plan.loader import load_plan
from tests._support.helpers import write_plan


def _plan(folder: Path, n: int, fail_at: int | None = None) -> Path:
    steps = [
        {"id": f"s{i:04d}", "run": "exit 1" if i == fail_at else "true",
         "depends_on": [f"s{i - 1:04d}"] if i else []}
        for i in range(n)
    ]  # fmt: skip
    return write_plan(folder, {"plan_id": f"heap-{n}", "steps": steps})


def test_a_big_plans_run_freezes_the_heap_and_thaws_it_at_its_end(
    prefect_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    module = sys.modules["prefect_waymark.flows.run_plan"]  # the package exports the flow
    real = module.refuse_closed_run

    def spy(*args: object, **kwargs: object) -> None:
        seen.append(gc.get_freeze_count())  # inside the run, after the freeze
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "refuse_closed_run", spy)
    assert gc.get_freeze_count() == 0
    run_plan(plan=str(_plan(tmp_path / "big", FREEZE_MIN_STEPS)), max_steps=2)
    assert seen[-1] > 0 and gc.get_freeze_count() == 0
    state = run_plan(plan=str(_plan(tmp_path / "bad", FREEZE_MIN_STEPS, 0)), return_state=True)
    assert state.is_failed() and seen[-1] > 0 and gc.get_freeze_count() == 0  # a failed run too
    run_plan(plan=str(_plan(tmp_path / "small", 3)))
    assert seen[-1] == 0  # a small plan's run leaves the collector alone


def test_nested_runs_thaw_once_the_last_one_ends(tmp_path: Path) -> None:
    big = load_plan(_plan(tmp_path, FREEZE_MIN_STEPS))
    freeze_heap(big)
    first = gc.get_freeze_count()
    made_since = [[i] for i in range(1000)]  # objects (or garbage) of the outer run
    freeze_heap(big)  # a sub-plan's run inside the first
    assert gc.get_freeze_count() == first, "the inner run froze the outer run's objects"
    del made_since
    thaw_heap(big)
    assert gc.get_freeze_count() > 0  # the outer run still holds it
    thaw_heap(big)
    assert gc.get_freeze_count() == 0
    thaw_heap(big)  # one thaw too many does no harm
    assert gc.get_freeze_count() == 0
