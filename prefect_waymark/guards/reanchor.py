"""Re-anchoring: before a plan's decisions, re-read its goal contract and state refs.

``ReanchorGuard`` implements the seed's ``before_decision()`` at its risk points:

- run start / resume: the contract (inline or its Prefect block) and every ref;
- before each step: the refs it ``reads`` and ``writes``; also the contract before a step with an
  ``action`` (irreversible) and everything again when the plan switches milestone;
- after a step: the refs it ``writes`` (the plan's own change is accepted, not a conflict);
- after a failed attempt: the contract and the step's refs;
- every N ``ctx.tick()`` calls inside a long ``call:`` step: the contract and the step's refs.

Each re-anchor is a ``reanchor`` ledger event (what was compared, with what result). The first
read of a ref or contract is accepted (``accepted_versions``). A difference stops the affected
step at needs_review with ``{ref, accepted, current, at}``; a step whose ``action`` matches a
contract entry ``action:<glob>`` is refused before it runs (a ``drift`` event). An aborted plan
does not run.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from ..errors import NeedsReview, StepError, TransitionError
from ..models import GoalContract, ProgressEvent, utcnow
from ..plan.spec import PlanSpec, StepSpec
from ..review.decisions import abort_event, apply_decision
from ..tasks.actions import forbidden_rule
from .base import Verdict
from .conflicts import (
    ACCEPTED_EVENT,
    AcceptedState,
    Conflict,
    compare_contract,
    contract_record,
    load_accepted,
    verdict_for,
)

if TYPE_CHECKING:
    from ..resolvers.base import RefConfig
    from ..tasks.step_task import StepRuntime

__all__ = ["REVIEW_WAIT_ENV", "ReanchorGuard"]

REVIEW_WAIT_ENV = "WAYMARK_REVIEW_WAIT_SECONDS"


def _logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    try:
        from prefect.logging import get_run_logger

        return get_run_logger()
    except Exception:  # noqa: BLE001 - outside a run: a plain logger
        return logging.getLogger("prefect_waymark")


def _review_wait_default() -> float:
    """``run_plan``'s ``review_wait_seconds`` parameter, else ``$WAYMARK_REVIEW_WAIT_SECONDS``."""
    try:
        from prefect.runtime import flow_run

        value = flow_run.parameters.get("review_wait_seconds")
    except Exception:  # noqa: BLE001 - outside a flow run
        value = None
    if value:
        return float(value)
    return float(os.environ.get(REVIEW_WAIT_ENV) or 0)


def _in_flow_run() -> bool:
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


class ReanchorGuard:
    """A :class:`~prefect_waymark.guards.base.StepGuard` that re-reads contract and refs."""

    def __init__(self, runtime: StepRuntime, *, review_wait_seconds: float | None = None) -> None:
        self.plan: PlanSpec = runtime.plan
        self.ledger = runtime.ledger
        self.workdir = runtime.workdir
        self.run_id = runtime.run_id
        self.review_wait_seconds = (
            _review_wait_default() if review_wait_seconds is None else review_wait_seconds
        )
        self.active = self.plan.contract is not None or bool(self.plan.state_refs)
        self.contract: GoalContract | None = None
        self.contract_rec: dict[str, Any] | None = None
        self.configs: dict[str, RefConfig] = {}
        self.refs_error: str | None = None
        self.accepted = AcceptedState()
        self.aborted: ProgressEvent | None = None
        # The last milestone seen per branch in this run: branches run concurrently, so a
        # single "last milestone" would flap between them and re-anchor at every step.
        self._milestones: dict[str, str | None] = {}
        self._announced: set[str] = set()
        self._ticks: dict[str, int] = {}
        self._lock = threading.RLock()

    # -- hook points ---------------------------------------------------------------------
    def on_run_start(self, runtime: StepRuntime) -> list[tuple[str, Verdict]]:
        from ..ledger.progress_view import build_view

        view = build_view(self.plan, self.ledger.step_states(self.plan.plan_id))
        reviewing = [str(item["step"]) for item in view.needs_review]
        target = reviewing[0] if reviewing else view.next_step
        self.aborted = abort_event(self.ledger, self.plan.plan_id)
        if self.aborted is not None:
            message = self._abort_message()
            _logger().error("%s", message)
            if target is None or target in reviewing:
                return []
            return [(target, Verdict("review", message, {"aborted": True}))]
        verdicts: list[tuple[str, Verdict]] = []
        if self.active:
            with self._lock:
                self.accepted = load_accepted(self.ledger, self.plan.plan_id)
                self._load_refs()
                conflicts = self._reanchor("run_start", list(self.configs), True, None)
            if self.contract is not None:
                runtime.forbidden = list(self.contract.forbidden)
            if conflicts and target is not None and target not in reviewing:
                verdict = self._stop(target, verdict_for(conflicts, "run_start", self.contract_rec))
                if verdict is not None:
                    verdicts.append((target, verdict))
        self._announce_unannounced(view.needs_review)
        return verdicts

    def on_run_end(self, runtime: StepRuntime) -> None:
        """Announce every needs_review stop of this run not announced yet (an edited output, an
        outcome unknown, a lost upstream result), so the automation hears of all of them."""
        from ..ledger.progress_view import build_view

        view = build_view(self.plan, runtime.ledger.step_states(self.plan.plan_id))
        self._announce_unannounced(view.needs_review)

    def _announce_unannounced(self, reviews: list[dict[str, Any]]) -> None:
        fresh = [
            {"step": str(item["step"]), "reason": item.get("reason")}
            for item in reviews
            if item["step"] not in self._announced
        ]
        if fresh:
            self._announce(fresh)

    def before_step(self, runtime: StepRuntime, step: StepSpec) -> Verdict | None:
        if self.aborted is not None:
            return Verdict("review", self._abort_message(), {"aborted": True})
        if not self.active:
            return None
        with self._lock:
            # Switching subtask: entering a branch after another one started (the run's first
            # step is covered by the run-start re-anchor), or a branch's milestone changing.
            entering = step.branch not in self._milestones and bool(self._milestones)
            switching = entering or (
                step.branch in self._milestones and self._milestones[step.branch] != step.milestone
            )
            self._milestones[step.branch] = step.milestone
            names = list(self.configs) if switching else _dedupe(step.reads + step.writes)
            check_contract = switching or step.action is not None
            if not names and not check_contract:
                return None
            if switching:
                self._load_refs()
                names = list(self.configs)
            point = (
                "branch_switch" if entering else "milestone_switch" if switching else "before_step"
            )
            conflicts = self._reanchor(point, names, check_contract, step.id)
        if conflicts:
            return self._stop(step.id, verdict_for(conflicts, point, self.contract_rec))
        if step.action is not None and self.contract is not None:
            runtime.forbidden = list(self.contract.forbidden)
            rule = forbidden_rule(step.action, self.contract.forbidden)
            if rule is not None:
                return self._refuse_forbidden(step, rule)
        return None

    def after_step(self, runtime: StepRuntime, step: StepSpec, value: Any) -> None:
        if not self.active or not step.writes:
            return
        from ..resolvers.resolve import resolve_refs

        with self._lock:
            configs = [self.configs[n] for n in _dedupe(step.writes) if n in self.configs]
            readings = resolve_refs(configs, self.workdir)
            new: dict[str, str] = {}
            entries = []
            for cfg in configs:
                r = readings[cfg.name]
                entries.append(
                    {
                        "name": cfg.name,
                        "kind": cfg.kind,
                        "accepted": self.accepted.refs.get(cfg.name),
                        "current": r.version,
                        "error": r.error,
                        "result": "accepted" if r.ok else "unreadable",
                    }
                )
                if r.version is not None:
                    new[cfg.name] = r.version
            self.ledger.record(
                self.plan.plan_id,
                "reanchor",
                step_id=step.id,
                run_id=self.run_id,
                point="after_step",
                refs=entries,
                conflicts=[],
            )
            if new:
                self._accept(new, None, f"written by step {step.id}", step.id)
        for e in entries:
            if e["error"]:
                _logger().warning(
                    "step %s wrote state ref %s but it cannot be read back: %s; the next step "
                    "that reads it stops for review",
                    step.id,
                    e["name"],
                    e["error"],
                )

    def after_failed_attempt(self, runtime: StepRuntime, step: StepSpec, error: str) -> None:
        if not self.active:
            return
        with self._lock:
            conflicts = self._reanchor(
                "after_failed_attempt", _dedupe(step.reads + step.writes), True, step.id
            )
        for c in conflicts:
            _logger().warning("re-anchor after a failed attempt of %s: %s", step.id, c.message)

    def on_tick(self, runtime: StepRuntime, step: StepSpec, every: int) -> None:
        """``ctx.tick()``: every ``every`` ticks re-anchor the contract and the step's refs;
        a conflict raises :class:`NeedsReview` (or :class:`StepError` for ``on_error: fail``)."""
        if not self.active:
            return
        with self._lock:
            n = self._ticks[step.id] = self._ticks.get(step.id, 0) + 1
            if n % max(1, every):
                return
            conflicts = self._reanchor("tick", _dedupe(step.reads + step.writes), True, step.id)
        if not conflicts:
            return
        verdict = verdict_for(conflicts, "tick", self.contract_rec)
        self._announce([{"step": step.id, "reason": verdict.reason}])
        if verdict.kind == "refuse":
            raise StepError(f"step {step.id!r}: {verdict.reason}")
        raise NeedsReview(f"{verdict.reason} (found at tick {n})", verdict.details)

    # -- internals -----------------------------------------------------------------------
    def _abort_message(self) -> str:
        ev = self.aborted
        assert ev is not None
        who = ev.data.get("by") or "someone"
        why = f" ({ev.data['reason']})" if ev.data.get("reason") else ""
        return (
            f"plan {self.plan.plan_id!r} was aborted by {who} at {ev.at.isoformat()}{why}; "
            "`waymark run` will not run it (answer with `waymark review --accept|--rerun` to "
            "lift the abort)"
        )

    def _load_refs(self) -> None:
        from .sources import load_ref_configs

        try:
            configs = load_ref_configs(self.plan)
        except Exception as exc:  # noqa: BLE001 - an unreadable refs block is a conflict
            self.refs_error = f"{type(exc).__name__}: {exc}"
            return
        self.refs_error = None
        self.configs = {c.name: c for c in configs}

    def _read_contract(self, at: str) -> tuple[list[Conflict], dict[str, Any] | None]:
        from .sources import load_contract

        try:
            loaded = load_contract(self.plan)
        except Exception as exc:  # noqa: BLE001 - an unreadable contract is a conflict
            msg = f"cannot re-read the goal contract: {type(exc).__name__}: {exc}"
            return [Conflict("contract", "contract", "unreadable", msg, at, error=msg)], None
        if loaded is None:
            return [], None
        contract, source = loaded
        self.contract = contract
        rec = contract_record(contract, source)
        self.contract_rec = rec
        found, accept = compare_contract(rec, self.accepted.contract, at)
        if accept and self.accepted.contract is not None:
            _logger().warning(
                "goal contract %r moved from v%s to v%s (status accepted): the plan follows it",
                rec["goal_id"],
                self.accepted.contract["version"],
                rec["version"],
            )
        return found, (rec if accept else None)

    def _reanchor(
        self, point: str, names: list[str], check_contract: bool, step_id: str | None
    ) -> list[Conflict]:
        from ..resolvers.resolve import resolve_refs

        at = utcnow().isoformat()
        conflicts: list[Conflict] = []
        accept_contract: dict[str, Any] | None = None
        contract_entry: dict[str, Any] | None = None
        if check_contract and self.plan.contract is not None:
            accepted_before = self.accepted.contract
            found, accept_contract = self._read_contract(at)
            conflicts += found
            contract_entry = {
                "current": self.contract_rec
                if not found or found[0].problem != "unreadable"
                else None,
                "accepted": accepted_before,
                "result": "conflict" if found else ("accepted" if accept_contract else "same"),
            }
        if self.refs_error is not None:
            conflicts.append(
                Conflict(
                    "state_refs",
                    "refs",
                    "unreadable",
                    f"cannot load the state refs: {self.refs_error}",
                    at,
                    error=self.refs_error,
                )
            )
        configs = [self.configs[n] for n in names if n in self.configs]
        if self.refs_error is None:
            for n in names:
                if n not in self.configs:
                    conflicts.append(
                        Conflict(
                            n,
                            "unknown",
                            "unknown_ref",
                            f"state ref {n!r} is not declared (declared: "
                            f"{', '.join(self.configs) or 'none'})",
                            at,
                        )
                    )
        readings = resolve_refs(configs, self.workdir) if configs else {}
        new: dict[str, str] = {}
        entries: list[dict[str, Any]] = []
        for cfg in configs:
            r = readings[cfg.name]
            accepted = self.accepted.refs.get(cfg.name)
            result = "same"
            if r.error is not None:
                result = "unreadable"
                conflicts.append(
                    Conflict(
                        cfg.name,
                        cfg.kind,
                        "unreadable",
                        f"state ref {cfg.name!r} ({cfg.describe()}) cannot be read: {r.error}",
                        r.at,
                        accepted,
                        None,
                        r.error,
                        cfg.on_error,
                    )
                )
            elif accepted is None:
                result = "accepted"
                assert r.version is not None
                new[cfg.name] = r.version
            elif accepted != r.version:
                result = "changed"
                conflicts.append(
                    Conflict(
                        cfg.name,
                        cfg.kind,
                        "changed",
                        f"state ref {cfg.name!r} ({cfg.describe()}) changed: accepted "
                        f"{accepted!r}, current {r.version!r} (read {r.at})",
                        r.at,
                        accepted,
                        r.version,
                    )
                )
            entries.append(
                {
                    "name": cfg.name,
                    "kind": cfg.kind,
                    "where": cfg.describe(),
                    "accepted": accepted,
                    "current": r.version,
                    "error": r.error,
                    "result": result,
                    "seconds": round(r.seconds, 4),
                }
            )
        free_text = [
            f
            for f in (self.contract.forbidden if self.contract else [])
            if not f.startswith("action:")
        ]
        self.ledger.record(
            self.plan.plan_id,
            "reanchor",
            step_id=step_id,
            run_id=self.run_id,
            point=point,
            contract=contract_entry,
            refs=entries,
            conflicts=[c.as_dict() for c in conflicts],
            forbidden=free_text,
        )
        if new or accept_contract:
            self._accept(new, accept_contract, "first read" if new else "contract version", step_id)
        log = _logger()
        if (
            point in ("run_start", "milestone_switch", "branch_switch")
            and self.contract is not None
        ):
            c = self.contract
            log.info("goal contract %s v%s (%s): %s", c.goal_id, c.version, c.status, c.objective)
            for item in c.forbidden:
                log.info("forbidden: %s", item)
        log.info(
            "re-anchor (%s%s): %d ref(s) read, %d conflict(s)",
            point,
            f", step {step_id}" if step_id else "",
            len(configs),
            len(conflicts),
        )
        return conflicts

    def _accept(
        self,
        refs: dict[str, str],
        contract: dict[str, Any] | None,
        reason: str,
        step_id: str | None,
    ) -> None:
        data: dict[str, Any] = {"refs": refs, "reason": reason}
        if contract is not None:
            data["contract"] = contract
        self.ledger.record(
            self.plan.plan_id, ACCEPTED_EVENT, step_id=step_id, run_id=self.run_id, **data
        )
        self.accepted.refs.update(refs)
        if contract is not None:
            self.accepted.contract = contract

    def _announce(self, steps: list[dict[str, Any]]) -> None:
        """Emit ``waymark.plan.needs-review`` once per step and run."""
        if not _in_flow_run():
            return
        from ..review.signal import emit_needs_review

        try:
            emit_needs_review(self.plan.plan_id, self.run_id, steps)
        except Exception as exc:  # noqa: BLE001 - a lost notification must not stop the run
            _logger().warning("could not emit the needs-review event: %s", exc)
        self._announced.update(str(s["step"]) for s in steps)

    def _stop(self, step_id: str, verdict: Verdict) -> Verdict | None:
        """Stop ``step_id`` for review: announce it and, if configured, wait for an answer."""
        if verdict.kind != "review":
            return verdict
        d = verdict.details
        self._announce(
            [
                {
                    "step": step_id,
                    "reason": verdict.reason,
                    "ref": d.get("ref"),
                    "accepted": d.get("accepted"),
                    "current": d.get("current"),
                    "at": d.get("at"),
                }
            ]
        )
        if self.review_wait_seconds <= 0 or not _in_flow_run():
            return verdict
        from prefect.runtime import flow_run

        from ..review.signal import wait_for_review

        spec = self.plan.step(step_id)
        try:
            self.ledger.record(
                self.plan.plan_id,
                "step_needs_review",
                step_id=step_id,
                branch=spec.branch,
                run_id=self.run_id,
                reason=verdict.reason,
                details=verdict.details,
            )
        except TransitionError:
            return verdict
        self.ledger.record(
            self.plan.plan_id,
            "review_waiting",
            step_id=step_id,
            run_id=self.run_id,
            flow_run_id=str(flow_run.get_id()),
            timeout_seconds=self.review_wait_seconds,
        )
        log = _logger()
        log.warning(
            "step %s needs review: %s — the flow run pauses up to %ss for an answer "
            "(accept / rerun / abort) in the Prefect UI",
            step_id,
            verdict.reason,
            self.review_wait_seconds,
        )
        answer = wait_for_review(self.review_wait_seconds)
        if answer is None:
            log.warning("no answer within %ss: the run stops for review", self.review_wait_seconds)
            return verdict
        with self._lock:
            done = apply_decision(
                self.ledger,
                self.plan,
                answer.decision,
                step_id=step_id,
                by=answer.by or "prefect-ui",
                reason=answer.reason,
                run_id=self.run_id,
            )
            for line in done:
                log.info("review: %s", line)
            if answer.decision == "abort":
                self.aborted = abort_event(self.ledger, self.plan.plan_id)
                return verdict
            self.accepted = load_accepted(self.ledger, self.plan.plan_id)
        return None

    def _refuse_forbidden(self, step: StepSpec, rule: str) -> Verdict:
        assert step.action is not None and self.contract is not None
        reason = (
            f"action {step.action!r} is forbidden by goal contract {self.contract.goal_id!r} "
            f"v{self.contract.version} ({rule!r}); the step was refused before it ran"
        )
        self.ledger.record(
            self.plan.plan_id,
            "drift",
            step_id=step.id,
            run_id=self.run_id,
            drift="forbidden_action",
            action=step.action,
            rule=rule,
            goal_id=self.contract.goal_id,
            contract_version=self.contract.version,
        )
        _logger().error("step %s refused: %s", step.id, reason)
        return Verdict(
            "refuse",
            reason,
            {"drift": "forbidden_action", "action": step.action, "forbidden": rule},
        )


def _dedupe(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))
