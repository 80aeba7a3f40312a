"""Re-anchoring: before a plan's decisions, re-read its goal contract and state refs.

``ReanchorGuard`` implements the seed's ``before_decision()`` at its risk points:

- run start / resume: the contract (inline or its Prefect block) and every ref;
- before each step: the refs it ``reads`` and ``writes``; also the contract before a step with an
  ``action`` (irreversible) and everything again when the plan switches milestone or enters
  another branch;
- after a step: the refs it ``writes`` (the plan's own change is accepted, not a conflict);
- after a failed attempt: the contract and the step's refs;
- every N ``ctx.tick()`` calls inside a long ``call:`` step: the contract and the step's refs.

Each re-anchor is a ``reanchor`` ledger event (:class:`~._anchor.Anchor`). The contract and its
forbidden list are logged once per run, and again only when a re-read finds them changed. A
difference is a ``review`` verdict naming ``{ref, accepted, current, at}``; a step whose
``action`` matches a contract entry ``action:<glob>`` gets a ``refuse`` verdict (with its
``drift`` event). The review gate records and announces both.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import GoalContract, contract_hash, forbidden_rule
from ..text.lists import capped_list
from ._anchor import Anchor, run_logger
from .base import GuardBase, GuardContext, Verdict
from .conflicts import Conflict, load_accepted, verdict_for

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..plan.spec import PlanSpec, StepSpec

__all__ = ["ReanchorGuard", "forbidden_verdict"]


class ReanchorGuard(GuardBase):
    """A guard that re-reads the goal contract and the state refs at the seed's risk points."""

    def __init__(self, plan: PlanSpec, ledger: Ledger, workdir: Path, run_id: str) -> None:
        self.plan = plan
        self.anchor = Anchor(plan, ledger, workdir, run_id)
        self.active = plan.contract is not None or bool(plan.state_refs)
        # The last milestone seen per branch in this run: branches run concurrently, so a
        # single "last milestone" would flap between them and re-anchor at every step.
        self._milestones: dict[str, str | None] = {}
        self._ticks: dict[str, int] = {}
        self._logged: tuple[Any, ...] | None = None  # the contract as this run last logged it
        #: Each ref some step reads or writes -> those steps (a change stops only them).
        self._declared: dict[str, list[str]] = {}
        for s in plan.steps:
            for name in _dedupe(s.reads + s.writes):
                self._declared.setdefault(name, []).append(s.id)

    @property
    def forbidden(self) -> list[str]:
        """The contract's forbidden list as last re-read (steps see it in ``ctx.forbidden``)."""
        return self.anchor.forbidden

    def reload_accepted(self) -> None:
        """A person's answer recorded new accepted versions: compare against them from now on."""
        self.anchor.reload_accepted()

    # -- hook points ---------------------------------------------------------------------
    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        if ctx.aborted or not self.active:
            return []
        view = ctx.view
        reviewing = [str(item["step"]) for item in view.needs_review]
        target = reviewing[0] if reviewing else view.next_step
        a = self.anchor
        with a.lock:
            a.accepted = load_accepted(a.ledger, self.plan.plan_id)
            a.load_refs()
            conflicts = a.reanchor("run_start", list(a.configs), True, None)
            plan_wide = self._plan_wide(conflicts, ctx)
            verdict = verdict_for(plan_wide, "run_start", a.contract_rec) if plan_wide else None
            self._log_contract()
        if verdict is not None and target is not None and target not in reviewing:
            # Only conflicts that want review stop the next step here; a ref whose
            # ``on_error: fail`` makes it unreadable refuses the steps that read it, before each.
            if verdict.kind == "review":
                return [(target, verdict)]
        return []

    def _plan_wide(self, conflicts: list[Conflict], ctx: GuardContext) -> list[Conflict]:
        """The run-start conflicts that concern the whole plan and stop its next step: the goal
        contract's, and those of refs no step declares. A ref that steps ``reads`` or ``writes``
        stops exactly those steps, each before it runs (:meth:`before_step`); one that only
        completed steps declare stops nothing and is logged (its ``reanchor`` event is on
        record), with the command that runs such a step again on the new version."""
        wide: list[Conflict] = []
        for c in conflicts:
            steps = self._declared.get(c.ref)
            if c.ref == "contract" or not steps:
                wide.append(c)
                continue
            open_steps = [
                s for s in steps if (st := ctx.states.get(s)) is None or st.status != "completed"
            ]
            if not open_steps:
                run_logger().warning(
                    "%s; only completed steps read or write it (%s): recorded, nothing stops. "
                    "To run one again on the new version: `waymark rerun %s %s`",
                    c.message,
                    capped_list(steps),
                    self.plan.source,
                    steps[0],
                )
        return wide

    def before_step(self, ctx: GuardContext, step: StepSpec) -> Verdict | None:
        if not self.active:
            return None
        a = self.anchor
        with a.lock:
            # Switching subtask: entering a branch after another one started (the run's first
            # step is covered by the run-start re-anchor), or a branch's milestone changing.
            entering = step.branch not in self._milestones and bool(self._milestones)
            switching = entering or (
                step.branch in self._milestones and self._milestones[step.branch] != step.milestone
            )
            self._milestones[step.branch] = step.milestone
            names = list(a.configs) if switching else _dedupe(step.reads + step.writes)
            check_contract = switching or step.action is not None
            if not names and not check_contract:
                return None
            if switching:
                a.load_refs()
                names = list(a.configs)
            point = (
                "branch_switch" if entering else "milestone_switch" if switching else "before_step"
            )
            conflicts = a.reanchor(point, names, check_contract, step.id)
            if switching:  # every ref was re-read: this step answers only for its own
                own = set(step.reads + step.writes)
                conflicts = [c for c in conflicts if c.ref in own or c.ref not in self._declared]
            if check_contract:
                self._log_contract()
            if conflicts:
                return verdict_for(conflicts, point, a.contract_rec)
        if step.action is not None and a.contract is not None:
            rule = forbidden_rule(step.action, a.contract.forbidden)
            if rule is not None:
                return forbidden_verdict(step, rule, a.contract)
        return None

    def after_step(self, ctx: GuardContext, step: StepSpec, value: Any) -> None:
        if not self.active or not step.writes:
            return
        for name, error in self.anchor.accept_written(step.id, _dedupe(step.writes)):
            run_logger().warning(
                "step %s wrote state ref %s but it cannot be read back: %s; the next step "
                "that reads it stops for review",
                step.id,
                name,
                error,
            )

    def after_failed_attempt(self, ctx: GuardContext, step: StepSpec, error: str) -> None:
        if not self.active:
            return
        a = self.anchor
        with a.lock:
            conflicts = a.reanchor(
                "after_failed_attempt", _dedupe(step.reads + step.writes), True, step.id
            )
            self._log_contract()
        for c in conflicts:
            run_logger().warning("re-anchor after a failed attempt of %s: %s", step.id, c.message)

    def on_tick(self, ctx: GuardContext, step: StepSpec, every: int) -> Verdict | None:
        """Every ``every`` ticks: re-anchor the contract and the step's refs."""
        if not self.active:
            return None
        a = self.anchor
        with a.lock:
            n = self._ticks[step.id] = self._ticks.get(step.id, 0) + 1
            if n % max(1, every):
                return None
            conflicts = a.reanchor("tick", _dedupe(step.reads + step.writes), True, step.id)
            self._log_contract()
            if not conflicts:
                return None
            verdict = verdict_for(conflicts, "tick", a.contract_rec)
        if verdict.kind == "refuse":
            return verdict
        return Verdict("review", f"{verdict.reason} (found at tick {n})", verdict.details)

    # -- internals -----------------------------------------------------------------------
    def _log_contract(self) -> None:
        """Log the goal contract and its forbidden list once per run, and again only when a
        re-read found it changed (another version, status or content)."""
        c = self.anchor.contract
        if c is None:
            return
        seen = (c.goal_id, c.version, c.status, contract_hash(c))
        if seen == self._logged:
            return
        again = self._logged is not None
        self._logged = seen
        forbidden = "".join(f"\n  forbidden: {item}" for item in c.forbidden)
        run_logger().info(
            "%sgoal contract %s v%s (%s): %s%s",
            "the goal contract changed — now " if again else "",
            c.goal_id,
            c.version,
            c.status,
            c.objective,
            forbidden,
        )


def forbidden_verdict(step: StepSpec, rule: str, contract: GoalContract) -> Verdict:
    """The refusal of a step whose ``action`` the contract's ``rule`` (``action:<glob>``)
    forbids, with its ``drift`` event — for a flow run's step and for a check-in alike."""
    assert step.action is not None
    reason = (
        f"action {step.action!r} is forbidden by goal contract {contract.goal_id!r} "
        f"v{contract.version} ({rule!r}); the step was refused before it ran"
    )
    return Verdict(
        "refuse",
        reason,
        {"drift": "forbidden_action", "action": step.action, "forbidden": rule},
        drift={
            "drift": "forbidden_action",
            "action": step.action,
            "rule": rule,
            "goal_id": contract.goal_id,
            "contract_version": contract.version,
        },
    )


def _dedupe(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))
