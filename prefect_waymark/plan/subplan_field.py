"""The ``plan:`` field of a plan file: checked with its step, and the sub-plan file validated
when its parent is (its problems named by its own file and field path; a cycle refused)."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PlanError, PlanProblem

if TYPE_CHECKING:
    from .spec import PlanSpec

__all__ = ["plan_step_problems", "resolve_subplans", "subplan_source"]

_Loc = tuple[int | str, ...]

#: Fields a ``plan:`` step does not take: the sub-plan's own steps run, act and produce.
_NOT_ON_PLAN_STEPS = ("run", "call", "instructions", "action", "probe", "outputs")

#: The plan files being validated, outermost first, as (resolved path, plan id): a sub-plan that
#: names one of them is a cycle, and a sub-plan id equal to an ancestor's is refused.
_LOADING: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "waymark_subplans_loading", default=()
)


def plan_step_problems(raw: dict[str, Any]) -> list[tuple[_Loc, str]]:
    """What is wrong with a ``plan:`` step's own fields (the sub-plan file is checked later)."""
    found: list[tuple[_Loc, str]] = []
    plan = raw.get("plan")
    if plan is None:
        found.append((("plan",), "a `kind: plan` step needs 'plan': the sub-plan file's path"))
    elif not isinstance(plan, str) or not plan.strip():
        found.append((("plan",), f"expected the sub-plan file's path, got {plan!r}"))
    given = [f for f in _NOT_ON_PLAN_STEPS if raw.get(f) not in (None, [], "")]
    if given:
        found.append(
            (
                (),
                f"a plan step runs its sub-plan: it must not have "
                f"{' or '.join(repr(f) for f in given)} (the sub-plan's steps do that)",
            )
        )
    return found


def subplan_source(parent_source: str, base_dir: Path | None, plan: str) -> tuple[str, Path]:
    """The sub-plan file as messages name it (beside the parent's name) and resolved."""
    base = base_dir or Path.cwd()
    resolved = (base / plan).resolve()
    if parent_source.startswith("<"):
        return str(resolved), resolved
    return os.path.normpath(os.path.join(os.path.dirname(parent_source), plan)), resolved


def resolve_subplans(
    spec: PlanSpec,
    source: str,
    base_dir: Path | None,
    load: Callable[[str | Path], PlanSpec],
) -> tuple[list[tuple[_Loc, str]], list[PlanProblem]]:
    """Validate each ``plan:`` step's sub-plan and keep it on the step; return the problems on
    the parent's fields and the sub-plans' own problems (each naming the sub-plan's file)."""
    steps = [(i, s) for i, s in enumerate(spec.steps) if s.plan is not None]
    if not steps:
        return [], []
    top = not _LOADING.get()  # the plan run by itself, not a sub-plan being loaded
    here: list[tuple[str, str]] = list(_LOADING.get())
    if not source.startswith("<") and base_dir is not None:
        own = str((base_dir / Path(source).name).resolve())
        if not here or here[-1][0] != own:
            here.append((own, spec.plan_id))
    else:
        here.append((source, spec.plan_id))
    found: list[tuple[_Loc, str]] = []
    theirs: list[PlanProblem] = []
    used: dict[str, str] = {}  # sub-plan id -> the step that runs it
    for i, step in steps:
        assert step.plan is not None
        shown, resolved = subplan_source(source, base_dir, step.plan)
        loc: _Loc = ("steps", i, "plan")
        chain = [p for p, _ in here]
        if str(resolved) in chain:
            names = [Path(p).name for p in chain[chain.index(str(resolved)) :]]
            found.append((loc, f"a cycle of sub-plans: {' -> '.join([*names, resolved.name])}"))
            continue
        token = _LOADING.set(tuple(here))
        try:
            sub = load(shown if Path(shown).resolve() == resolved else resolved)
        except PlanError as exc:
            found.append((loc, f"sub-plan {step.plan!r} is invalid (its problems follow)"))
            theirs += exc.problems
            continue
        finally:
            _LOADING.reset(token)
        ancestors = {pid for _, pid in here}
        if sub.plan_id in ancestors:
            found.append(
                (
                    loc,
                    f"sub-plan {step.plan!r} has plan_id {sub.plan_id!r}, the id of a plan that "
                    "runs it; a sub-plan keeps its own ledger scope: give it another plan_id",
                )
            )
            continue
        if sub.plan_id in used:
            found.append(
                (
                    loc,
                    f"sub-plan {sub.plan_id!r} is already run by step {used[sub.plan_id]!r}; "
                    "one step per sub-plan",
                )
            )
            continue
        used[sub.plan_id] = step.id
        step._subplan = (resolved, sub.plan_hash())
        step._subspec = sub
    if top and not found:
        found += _repeated_ids(spec)
    return found, theirs


def _repeated_ids(spec: PlanSpec) -> list[tuple[_Loc, str]]:
    """Each plan id once in the whole tree: two sub-plans with one id (at any depth, or one
    file reached twice) would share one ledger scope, markers folder and review answers."""
    seen: dict[str, str] = {spec.plan_id: "the top plan"}
    found: list[tuple[_Loc, str]] = []
    for i, step in enumerate(spec.steps):
        stack = [(step, step.id)]
        while stack:
            current, where = stack.pop()
            sub = current.subplan_spec
            if sub is None:
                continue
            if sub.plan_id in seen:
                found.append(
                    (
                        ("steps", i, "plan"),
                        f"sub-plan id {sub.plan_id!r} (at {where}) is also {seen[sub.plan_id]}; "
                        "each plan in a tree keeps its own ledger scope: give each sub-plan "
                        "file its own plan_id, and run a file from one step only",
                    )
                )
                continue
            seen[sub.plan_id] = f"the sub-plan at {where}"
            stack.extend((s, f"{where}/{s.id}") for s in sub.steps if s.plan is not None)
    return found
