"""Irreversible actions inside steps: done at most once per idempotency key, with receipts.

In a ``call:`` step::

    with ctx.action("publish-report", probe=is_published) as act:
        if act.needed:  # False when a receipt is already committed: the effect is skipped
            resp = httpx.post(url, headers={"Idempotency-Key": act.key})
            act.record(external_id=resp.json()["id"], response=resp.content)
    act.receipt  # the committed receipt: from this attempt or an earlier one

or as a decorator, which skips its function when a receipt exists::

    @ctx.action("send-invoice")
    def send(act: Action) -> dict: ...
    done = send()  # the Action: done.ran, done.result, done.receipt

A ``run:`` step with ``action: NAME`` is one action at step level
(:func:`~.step_action.run_step_action`): its command gets ``WAYMARK_IDEMPOTENCY_KEY`` and never
runs again once a receipt is committed.

The order is always: forbidden check -> claim the key in the ledger (the intent, committed before
the effect) -> the effect -> the receipt. An intent without a receipt (the runner died, or the
body raised during the effect) means the outcome is unknown: a probe asks the business system
(applied: record the receipt; not applied: run it), otherwise the step stops at needs_review
(:class:`~prefect_waymark.errors.OutcomeUnknownError`). Nothing is ever re-executed blindly.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..errors import ForbiddenActionError, NeedsReview, OutcomeUnknownError, StepError
from ..guards.receipts import receipts_of_action
from ..ledger.base import pid_alive, this_host
from ..ledger.identity import default_executor
from ..ledger.receipts import ReceiptRecord, default_action_key
from ..models import ActionReceipt, forbidden_rule
from ..run.env_settings import probe_timeout

if TYPE_CHECKING:
    import logging

    from ..ledger import Ledger
    from ..plan.spec import PlanSpec, StepSpec

__all__ = [
    "Action",
    "ActionSite",
    "Probe",
    "forbidden_rule",
]

Probe = Callable[[str], "bool | None"]
"""Asks the business system about an idempotency key: True applied, False not, None unknown."""


def _hash(response: Any) -> str:
    if isinstance(response, bytes):
        raw = response
    elif isinstance(response, str):
        raw = response.encode()
    else:
        raw = json.dumps(response, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()


class ActionSite(Protocol):
    """Where an action runs: what :class:`Action` reads of its step's
    :class:`~prefect_waymark.tasks.step_context.StepContext` (named structurally, so this module
    does not import the context that creates actions)."""

    @property
    def plan_id(self) -> str: ...
    @property
    def step_id(self) -> str: ...

    plan: PlanSpec
    step: StepSpec
    run_id: str
    executor: str | None
    forbidden: list[str]
    ledger: Ledger | None
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger]


def _recorded(ctx: ActionSite, name: str) -> ReceiptRecord | None:
    """The receipt row this step's action was claimed with before, if any: a renamed plan's receipts
    keep their old keys (``old-id/step/action``), and the action must find them there. The
    receipt follows the action (:func:`~prefect_waymark.guards.receipts.receipts_of_action`): a
    committed receipt of a renamed or moved action is found and the effect skipped; an open
    intent goes to the probe or to review, as for any intent without a receipt."""
    if ctx.ledger is None:
        return None
    rows = receipts_of_action(ctx.plan, ctx.step_id, name, ctx.ledger.receipts(ctx.plan_id))
    if not rows or rows[-1].step_id == ctx.step_id:
        return rows[-1] if rows else None
    rec = rows[-1]
    ctx.logger.warning(
        "step %s: action %s was claimed by step %s, which no longer holds it (renamed, removed "
        "or its action moved) on %s (%s): the receipt follows the action, key %s. To apply the "
        "action again, give it another name in the plan.",
        ctx.step_id,
        name,
        rec.step_id,
        rec.settled_at or rec.intent_at,
        "applied" if rec.state == "applied" else "outcome unknown",
        rec.key,
    )
    return rec


def _again_key(ctx: ActionSite, name: str) -> str | None:
    """The key of an action a person chose to apply again (a review's rerun of a stale step
    whose action was applied: :mod:`prefect_waymark.review.stale`): ``plan/step/action/again-N``
    for the step's N-th such rerun, else None (the action keeps its key, and its receipt)."""
    if ctx.ledger is None:
        return None
    st = ctx.ledger.step_states(ctx.plan_id).get(ctx.step_id)
    if st is None or not st.action_round:
        return None
    return f"{default_action_key(ctx.plan_id, ctx.step_id, name)}/again-{st.action_round}"


class Action:
    """One irreversible action of a step. Use once, as a context manager or as a decorator."""

    def __init__(
        self,
        ctx: ActionSite,
        name: str,
        *,
        key: str | None = None,
        probe: Probe | None = None,
        not_applied_on: tuple[type[BaseException], ...] = (),
    ) -> None:
        if not name:
            raise ValueError("an action needs a name")
        self.ctx = ctx
        self.name = name
        again = None if key else _again_key(ctx, name)
        found = None if key or again else _recorded(ctx, name)
        self.key = (
            key
            or again
            or (found.key if found else default_action_key(ctx.plan_id, ctx.step_id, name))
        )
        #: The step the key's ledger row names: this one, or the step that claimed the action
        #: before it was renamed or moved here (the receipt follows the action).
        self.key_step = found.step_id if found else ctx.step_id
        self.probe = probe
        self.not_applied_on = not_applied_on
        #: True while the effect must be done now (the key is claimed by this attempt).
        self.needed = False
        #: True once the body ran the effect in this attempt.
        self.ran = False
        #: The committed receipt (this attempt's or an earlier one), if any.
        self.receipt: ActionReceipt | None = None
        #: The body's result: this attempt's, or the one kept in an earlier receipt.
        self.result: Any = None
        #: How the receipt was found: "run", "receipt" (already committed) or "probe".
        self.how: Literal["run", "receipt", "probe"] | None = None
        self._token: str | None = None
        self._entered = False
        self._external_id: str | None = None
        self._response_hash: str | None = None
        self._not_applied: str | None = None

    def __repr__(self) -> str:
        return f"Action({self.name!r}, key={self.key!r}, needed={self.needed})"

    # -- what the body tells ------------------------------------------------------------
    def record(
        self, *, external_id: str | None = None, response: Any = None, result: Any = None
    ) -> None:
        """Details for the receipt: the business system's id, its response (hashed), a result."""
        if external_id is not None:
            self._external_id = str(external_id)
        if response is not None:
            self._response_hash = _hash(response)
        if result is not None:
            self.result = result

    def not_applied(self, reason: str = "") -> None:
        """The body knows the effect did not happen (e.g. refused before the call)."""
        self._not_applied = reason or "the step said the action was not applied"

    # -- context manager ----------------------------------------------------------------
    def __enter__(self) -> Action:
        if self._entered:
            raise RuntimeError(f"action {self.name!r}: an Action is used once")
        self._entered = True
        self._begin()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.needed:
            return
        self.needed = False
        if exc is None and self._not_applied is None:
            self.ran = True
            self._settle("applied", note=None)
            return
        if self._not_applied is not None or isinstance(exc, self.not_applied_on):
            note = self._not_applied or f"{type(exc).__name__}: {exc}"
            self._settle("not_applied", note=note)
            return
        self.ctx.logger.warning(
            "action %s (key %s): the step raised %s during the action; its outcome is unknown. "
            "The intent stays open: the next attempt asks the probe or stops for review.",
            self.name,
            self.key,
            type(exc).__name__,
        )

    # -- decorator ----------------------------------------------------------------------
    def __call__(self, fn: Callable[[Action], Any]) -> Callable[[], Action]:
        """Wrap ``fn(act)``: calling the wrapper runs it once, or skips it given a receipt."""

        def run_once() -> Action:
            with self:
                if self.needed:
                    value = fn(self)
                    if value is not None:
                        self.record(result=value)
            return self

        run_once.__name__ = getattr(fn, "__name__", "action")
        run_once.__doc__ = fn.__doc__
        return run_once

    # -- the protocol ---------------------------------------------------------------------
    @property
    def _by(self) -> str:
        return self.ctx.executor or default_executor()

    def _ledger(self) -> Ledger:
        if self.ctx.ledger is None:
            raise StepError(
                f"step {self.ctx.step_id!r}: action {self.name!r} needs the run's ledger; "
                "run the step through run_plan (or give StepContext a ledger)"
            )
        return self.ctx.ledger

    def _begin(self) -> None:
        rule = forbidden_rule(self.name, list(self.ctx.forbidden))
        if rule is not None:  # checked before anything is written
            raise ForbiddenActionError(self.ctx.step_id, self.name, rule)
        self._claim(reconcile=True)

    def _claim(self, *, reconcile: bool, replace_token: str | None = None) -> None:
        """Write the intent for the key (or take over ``replace_token``'s) and act on the answer."""
        claim = self._ledger().claim_action(
            plan_id=self.ctx.plan_id,
            step_id=self.key_step,
            action=self.name,
            key=self.key,
            run_id=self.ctx.run_id,
            by=self._by,
            branch=self.ctx.step.branch,
            replace_token=replace_token,
        )
        self._take(claim.status, claim.record, reconcile=reconcile)

    def _take(self, status: str, rec: ReceiptRecord, *, reconcile: bool) -> None:
        if status == "claimed":
            self._token = rec.token
            self.needed = True
        elif status == "applied":
            self._found(rec, "receipt")
        elif reconcile:
            self._reconcile(rec)
        else:
            raise OutcomeUnknownError(
                f"outcome unknown: action {self.name!r} (key {rec.key}) changed hands while "
                "it was being reconciled",
                self._details(rec),
            )

    def _found(self, rec: ReceiptRecord, how: Literal["receipt", "probe"]) -> None:
        self.receipt = rec.to_receipt()
        self.result = rec.result
        self.how = how
        self.ctx.logger.info(
            "action %s (key %s) already applied (receipt %s, %s at %s): not running it again",
            self.name,
            self.key,
            rec.external_id or "-",
            rec.source,
            rec.settled_at,
        )

    def _details(self, rec: ReceiptRecord) -> dict[str, Any]:
        return {
            "key": rec.key,
            "action": rec.action,
            "intent_run": rec.run_id,
            "intent_at": rec.intent_at,
            "intent_by": rec.intent_by,
        }

    def _ask_probe(self, probe: Probe, key: str) -> bool | None:
        """The probe's answer for ``key``; ``None`` (unknown) if it fails or takes longer than
        ``$WAYMARK_PROBE_TIMEOUT_SECONDS`` (a ``probe:`` command is killed at that limit; a
        Python probe is left behind in its daemon thread). Logged before it starts."""
        limit = probe_timeout()
        self.ctx.logger.info(
            "action %s (key %s): an intent without a receipt; asking its probe (at most %.0f s)",
            self.name,
            key,
            limit,
        )
        answers: list[bool | None] = []
        failed: list[BaseException] = []

        def ask() -> None:
            try:
                answers.append(probe(key))
            except Exception as exc:  # noqa: BLE001 - a failing probe cannot tell
                failed.append(exc)

        worker = threading.Thread(target=ask, name=f"waymark-probe-{self.name}", daemon=True)
        worker.start()
        worker.join(limit + 10)  # a command's own kill comes first; this is the backstop
        if failed:
            self.ctx.logger.warning("probe of action %s failed: %s", self.name, failed[0])
            return None
        if not answers:
            self.ctx.logger.warning(
                "probe of action %s gave no answer in %.0f s: the outcome is unknown",
                self.name,
                limit,
            )
            return None
        return answers[0]

    def _reconcile(self, rec: ReceiptRecord) -> None:
        """An intent without a receipt: ask the probe, or stop for a person."""
        if rec.host == this_host() and rec.pid not in (None, os.getpid()) and pid_alive(rec.pid):
            raise NeedsReview(
                f"action {self.name!r} (key {rec.key}) was claimed by run {rec.run_id} whose "
                f"process {rec.pid} is still alive; not touching it",
                self._details(rec),
            )
        started = f"started by run {rec.run_id} at {rec.intent_at}"
        if self.probe is None:
            raise OutcomeUnknownError(
                f"outcome unknown: action {self.name!r} (key {rec.key}) was {started} but no "
                "receipt was recorded, and it has no probe; record what happened with "
                f"`waymark receipt PLAN {self.ctx.step_id} --applied|--not-applied`",
                self._details(rec),
            )
        answer = self._ask_probe(self.probe, rec.key)
        if answer is True:
            settled = self._ledger().settle_action(
                rec.key,
                outcome="applied",
                token=rec.token,
                by=self._by,
                source="probe",
                note=f"intent {started} had no receipt; the probe found it applied",
                branch=self.ctx.step.branch,
                run_id=self.ctx.run_id,
            )
            self._found(settled, "probe")
        elif answer is False:
            self.ctx.logger.warning(
                "action %s (key %s) was %s without a receipt; the probe says it was not "
                "applied: running it",
                self.name,
                rec.key,
                started,
            )
            self._claim(reconcile=False, replace_token=rec.token)
        else:
            raise OutcomeUnknownError(
                f"outcome unknown: action {self.name!r} (key {rec.key}) was {started} but no "
                f"receipt was recorded, and its probe could not tell (answer {answer!r}); "
                f"record what happened with `waymark receipt PLAN {self.ctx.step_id} "
                "--applied|--not-applied`",
                self._details(rec),
            )

    def _settle(self, outcome: Literal["applied", "not_applied"], note: str | None) -> None:
        response_hash = self._response_hash
        if response_hash is None and self.result is not None and outcome == "applied":
            response_hash = _hash(self.result)
        rec = self._ledger().settle_action(
            self.key,
            outcome=outcome,
            token=self._token,
            by=self._by,
            external_id=self._external_id,
            response_hash=response_hash,
            result=self.result if outcome == "applied" else None,
            source="run",
            note=note,
            branch=self.ctx.step.branch,
            run_id=self.ctx.run_id,
        )
        if outcome == "applied":
            self.receipt = rec.to_receipt()
            self.how = "run"
