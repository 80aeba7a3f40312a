"""What ``run_plan`` is given as its plan: a file path, a plan document or a ``PlanSpec``."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

from ..errors import WaymarkError
from ..plan.loader import load_plan, validate_plan_data
from ..plan.spec import PlanSpec

__all__ = ["FREEZE_MIN_STEPS", "check_until", "freeze_heap", "load_plan_input", "thaw_heap"]

#: From this many steps a run moves the objects alive after its plan's load out of the garbage
#: collector's way until it ends (:func:`gc.freeze`): a 10,000-step plan is ~10^6 objects that
#: every full collection walked again (0.4–0.7 s of a 5-step run, ~0.1 s frozen). Every run
#: froze for a while: on a 200-step chain its CPU against plain Prefect's was the same either
#: way (1.30x–1.40x, three pairs of bench_resume runs), so small plans leave the collector be.
FREEZE_MIN_STEPS = 1000
_frozen = [0]  # runs of this process holding the heap frozen (sub-plans, threads)
_frozen_lock = threading.Lock()


def load_plan_input(plan: str | dict[str, Any] | PlanSpec, workdir: str | None) -> PlanSpec:
    """The validated plan (a document's sub-plan files are found from ``workdir``)."""
    if isinstance(plan, PlanSpec):
        spec = plan
    elif isinstance(plan, dict):
        base = Path(workdir) if workdir else Path.cwd()
        spec = validate_plan_data(plan, source="<plan parameter>", base_dir=base)
    else:
        spec = load_plan(plan)
    return spec


def freeze_heap(spec: PlanSpec) -> None:
    """At the start of the run of a big plan (its objects loaded): freeze the heap until
    :func:`thaw_heap` at the run's end. Only the first of overlapping runs freezes (a
    sub-plan's run inside its parent's, runs on a worker's threads): a later one would freeze
    the garbage the others made since, never freed while runs kept overlapping."""
    if len(spec.steps) >= FREEZE_MIN_STEPS:
        with _frozen_lock:
            _frozen[0] += 1
            if _frozen[0] == 1:
                gc.freeze()


def thaw_heap(spec: PlanSpec) -> None:
    """At the end of the run of ``spec``: when no other run of this process holds the heap
    frozen, its objects go back to the collector (a long-lived worker frees them)."""
    if len(spec.steps) < FREEZE_MIN_STEPS:
        return
    with _frozen_lock:
        _frozen[0] = max(0, _frozen[0] - 1)
        if _frozen[0] == 0:
            gc.unfreeze()


def check_until(spec: PlanSpec, until: str | None) -> None:
    """``until`` must name a step of the plan."""
    if until is not None and until not in {s.id for s in spec.steps}:
        raise WaymarkError(f"until: plan {spec.plan_id!r} has no step {until!r}")
