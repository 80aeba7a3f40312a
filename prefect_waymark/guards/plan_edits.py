"""Editing the plan is a change of state: what changed since the ledger last saw the plan file,
and what each change does to progress.

1. :func:`last_seen` reads the plan the ledger saw last: the newest ``plan_seen`` event (each
   step's definition hash, ``depends_on`` and action), else — a ledger from before — the step
   hashes of the plan's last run.
2. :func:`compare` matches it with the plan file (pure): steps added, removed, renamed (the
   same definition under a new id, dependencies read through the other renames; or the same
   action under a new id), definitions changed, dependencies changed (the definition is the
   same with the old ``depends_on``), and steps whose only change is a renamed dependency.
3. :func:`see_plan` — before a run, ``next`` or a check-in acts — records the renames
   (:meth:`~prefect_waymark.ledger.plan_rename.PlanRenames.rename_steps`) and the plan as seen
   (``plan_seen``), and returns the comparison to report. ``waymark diff`` shows the same
   comparison and records nothing.

A rename **carries the completion automatically**, it never asks: the renamed step keeps its
old id's state (completed stays completed, with its receipts and open intents) and is not run
again; a run that asked instead would offer "run it again", which must never apply an action
twice. A rename found by the action alone (the definition changed too) carries the history,
and the changed definition stops the completed step for review at the next run (accept keeps
it; rerun runs it again — the action's receipt follows it, so the action is not applied again).
A rename whose old id has no history carries nothing; one whose new id already has a history
is not carried (a rename never merges two histories) and is reported. An ambiguous match (two
removed steps of one definition) is not a rename: ``waymark rename-step`` says which.
A removed step's history stays in the ledger under its id (``waymark status`` lists it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from ..errors import LedgerError, WaymarkError
from ..ledger.events import EventKind
from ..ledger.run_hashes import run_step_hashes
from ..ledger.step_state import StepState, has_history
from ..text.human_time import ago

if TYPE_CHECKING:
    from ..ledger.base import Ledger, LedgerReader
    from ..plan.spec import PlanSpec, StepSpec

__all__ = ["PlanEdit", "PlanEdits", "SeenStep", "compare", "last_seen", "see_plan", "seen_steps"]

Change = Literal["added", "removed", "renamed", "changed", "dependencies", "dependency_renamed"]


@dataclass(frozen=True)
class SeenStep:
    """A step of the plan as the ledger saw it (``depends_on`` and ``action`` unknown for a
    plan read from a run's hashes only)."""

    hash: str
    depends_on: tuple[str, ...] | None = None
    action: str | None = None


def seen_steps(spec: PlanSpec) -> dict[str, list[Any]]:
    """The plan's steps as ``plan_seen`` records them: ``[hash, depends_on, action]``."""
    hashes = spec.step_hashes()
    return {s.id: [hashes[s.id], list(s.depends_on), s.action] for s in spec.steps}


@dataclass(frozen=True)
class PlanEdit:
    """One change and what it does to progress."""

    change: Change
    step: str  # the id in the plan file (a removed step: its id in the ledger)
    was: str | None = None  # a renamed step's old id
    detail: str = ""
    effect: str = ""

    def line(self) -> str:
        """``renamed draft → write (same definition): completion kept``."""
        what = {
            "added": f"added {self.step}",
            "removed": f"removed {self.step}",
            "renamed": f"renamed {self.was} → {self.step}",
            "changed": f"changed {self.step}",
            "dependencies": f"dependencies of {self.step} changed",
            "dependency_renamed": f"dependency of {self.step} renamed",
        }[self.change]
        detail = f" ({self.detail})" if self.detail else ""
        return f"{what}{detail}: {self.effect}" if self.effect else what + detail

    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"change": self.change, "step": self.step}
        if self.was is not None:
            doc["was"] = self.was
        return {**doc, "detail": self.detail, "effect": self.effect}


@dataclass
class PlanEdits:
    """The comparison of the plan file with the plan the ledger saw last."""

    first: bool  #: the ledger saw no plan before (nothing to compare)
    edits: list[PlanEdit] = field(default_factory=list)
    #: Renames whose history is carried over: old id to new.
    renames: dict[str, str] = field(default_factory=dict)
    #: Steps whose completion stands for their definition under the new ids: step to hash.
    rebase: dict[str, str] = field(default_factory=dict)
    #: Why the renames were not carried over (a run held a step): they are found again later.
    problem: str | None = None

    def lines(self) -> list[str]:
        """What a run, ``next`` or a check-in reports (nothing when nothing changed)."""
        if not self.edits and self.problem is None:
            return []
        head = ["the plan file changed since the ledger last saw it:"] if self.edits else []
        tail = [f"  {self.problem}"] if self.problem else []
        return head + [f"  {e.line()}" for e in self.edits] + tail

    def doc(self) -> list[dict[str, Any]]:
        return [e.doc() for e in self.edits]


def last_seen(ledger: LedgerReader, plan_id: str) -> dict[str, SeenStep] | None:
    """The plan the ledger saw last (``None``: none): its newest ``plan_seen``, else the step
    hashes of its last run (a ledger written before ``plan_seen``)."""
    seen = ledger.last_event(plan_id, [EventKind.plan_seen])
    if seen is not None and isinstance(steps := seen.data.get("steps"), dict):
        return {
            str(sid): SeenStep(str(v[0]), tuple(str(d) for d in v[1] or ()), v[2])
            for sid, v in steps.items()
            if isinstance(v, list) and len(v) == 3  # noqa: PLR2004 - hash, depends_on, action
        }
    run = ledger.last_event(plan_id, [EventKind.run_started])
    if run is None or not run.run_id:
        return None
    hashes = run_step_hashes(ledger, plan_id, run.run_id)
    return {sid: SeenStep(h) for sid, h in hashes.items()} if hashes is not None else None


def _hash_back(step: StepSpec, back: Mapping[str, str]) -> str:
    """The step's definition hash with its dependencies under their old ids."""
    return step.definition_hash([back.get(d, d) for d in step.depends_on])


def _find_renames(
    old: Mapping[str, SeenStep], spec: PlanSpec, force: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Old id to new of each rename (``force``: given by ``waymark rename-step``), in
    dependency order (a dependency's rename is known before its dependents' hashes are read
    back); and the steps left out as ambiguous, with the reason."""
    ids = {s.id for s in spec.steps}
    renames = dict(force)
    ambiguous: dict[str, str] = {}
    removed = [sid for sid in old if sid not in ids and sid not in renames]
    for sid in spec.topological_order():
        if sid in old or sid in renames.values():
            continue
        back = {n: o for o, n in renames.items()}
        step = spec.step(sid)
        free = [r for r in removed if r not in renames]
        same = [r for r in free if old[r].hash == _hash_back(step, back)]
        if not same and step.action is not None:
            same = [r for r in free if old[r].action == step.action]
        if len(same) == 1:
            renames[same[0]] = sid
        elif same:
            ambiguous[sid] = f"matches {', '.join(same)}: use `waymark rename-step`"
    return renames, ambiguous


def compare(
    old: Mapping[str, SeenStep] | None,
    spec: PlanSpec,
    states: Mapping[str, StepState],
    *,
    force: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> PlanEdits:
    """The plan file ``spec`` against the plan the ledger saw (``old``), with what each change
    does to the steps' ``states`` (by id as the ledger holds them). Pure."""
    if old is None:
        return PlanEdits(first=True)
    now = now or datetime.now(timezone.utc)
    renames, ambiguous = _find_renames(old, spec, force or {})
    back = {n: o for o, n in renames.items()}
    out = PlanEdits(first=False)
    hashes = spec.step_hashes()
    for sid in spec.topological_order():
        step, was = spec.step(sid), back.get(sid, sid if sid in old else None)
        if was is None:
            note = ambiguous.get(sid, "")
            out.edits.append(PlanEdit("added", sid, detail=note, effect="new: not run yet"))
            continue
        st = states.get(was)
        seen = old.get(was) or SeenStep((st.def_hash if st is not None else None) or "")
        same = _hash_back(step, back) == seen.hash
        if was != sid:
            _renamed(out, step, was, same, states)
        carried = was == sid or out.renames.get(was) == sid
        if same and hashes[sid] != seen.hash:
            if carried and st is not None and st.def_hash == seen.hash:
                out.rebase[sid] = hashes[sid]
            if was == sid:
                effect = "completion kept" if _completed(st) else "nothing to change"
                renamed = [f"{back[d]} → {d}" for d in step.depends_on if d in back]
                out.edits.append(
                    PlanEdit("dependency_renamed", sid, detail=", ".join(renamed), effect=effect)
                )
        elif not same and was == sid:  # a renamed step's line says it
            out.edits.append(_changed(step, seen, st))
    ids = {s.id for s in spec.steps}
    for sid in old:
        if sid not in renames and sid not in ids:
            out.edits.append(PlanEdit("removed", sid, effect=_removed(states.get(sid), now)))
    return out


def _completed(st: StepState | None) -> bool:
    return st is not None and st.status == "completed"


def _renamed(
    out: PlanEdits, step: StepSpec, was: str, same: bool, states: Mapping[str, StepState]
) -> None:
    detail = "same definition" if same else f"same action {step.action}; definition changed"
    old_st, new_st = states.get(was), states.get(step.id)
    if has_history(new_st):
        status = new_st.status if new_st is not None else "?"
        effect = f"not carried: {step.id} already has a history ({status}); {was}'s stays"
    elif not has_history(old_st):
        effect = "no history to carry"
    else:
        out.renames[was] = step.id
        assert old_st is not None
        kept = "completion kept" if _completed(old_st) else f"history carried ({old_st.status})"
        effect = kept if same else f"{kept}; {_definition_effect(old_st)}"
    out.edits.append(PlanEdit("renamed", step.id, was=was, detail=detail, effect=effect))


def _definition_effect(st: StepState | None) -> str:
    if st is None or st.status in ("pending", "failed"):
        return "runs with the new definition"
    if st.status == "completed" and st.skipped is None:
        return "the next run stops it for review (accept keeps the completion, rerun runs it again)"
    return f"{st.status}: the new definition applies when it runs"


def _changed(step: StepSpec, seen: SeenStep, st: StepState | None) -> PlanEdit:
    effect = _definition_effect(st)
    if seen.depends_on is not None and step.definition_hash(seen.depends_on) == seen.hash:
        detail = f"{sorted(seen.depends_on)} → {sorted(step.depends_on)}"
        return PlanEdit("dependencies", step.id, detail=detail, effect=effect)
    return PlanEdit("changed", step.id, detail="definition changed", effect=effect)


def _removed(st: StepState | None, now: datetime) -> str:
    if not has_history(st):
        return "never ran: nothing to keep"
    assert st is not None
    if st.status == "completed":
        return f"completed {ago(st.completed_at, now)}, kept in history"
    return f"{st.status}, kept in history"


def see_plan(
    ledger: Ledger,
    spec: PlanSpec,
    *,
    by: str,
    source: str,
    force: Mapping[str, str] | None = None,
) -> PlanEdits | None:
    """Before a run, ``next`` or a check-in acts (``source``): compare the plan file with the
    plan the ledger saw last; if it differs, carry the renames over and record the plan as
    seen. Returns the comparison (``None``: the same plan as last seen). Raises
    :class:`LedgerError` if a forced rename (``waymark rename-step``) cannot be done."""
    seen = ledger.last_event(spec.plan_id, [EventKind.plan_seen])
    if force is None and seen is not None and seen.data.get("plan_hash") == spec.plan_hash():
        return None
    if force is None and seen is None and ledger.last_event(spec.plan_id, _ANY) is None:
        return None  # a plan the ledger never saw: nothing to compare, nothing recorded yet
    states = ledger.step_states(spec.plan_id)
    old = last_seen(ledger, spec.plan_id)
    if old is None and force:  # only check-ins so far: the steps the ledger holds
        old = {sid: SeenStep(st.def_hash or "") for sid, st in states.items()}
    edits = compare(old, spec, states, force=force)
    for was, new in (force or {}).items():
        if edits.renames.get(was) != new:
            why = next((e.effect for e in edits.edits if e.was == was), "no history to carry")
            raise LedgerError(why)
    if edits.renames or edits.rebase:
        try:
            ledger.rename_steps(
                spec.plan_id, edits.renames, rebase=edits.rebase, by=by, source=source
            )
        except LedgerError as exc:
            if force:
                raise
            edits.problem = f"the renames were not carried over: {exc}"
            return edits  # not recorded as seen: the next run, next or check-in tries again
    try:
        ledger.record(
            spec.plan_id,
            EventKind.plan_seen,
            plan_hash=spec.plan_hash(),
            steps=seen_steps(spec),
            changes=edits.doc(),
            by=by,
            source=source,
        )
    except (LedgerError, WaymarkError):
        pass  # a closed or renamed-away plan: the command itself says so
    return edits


#: Any event says the ledger knows the plan.
_ANY = [EventKind.run_started, EventKind.step_started, EventKind.plan_renamed]
