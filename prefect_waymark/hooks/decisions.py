"""What a hook decides for one event: the :class:`Decision` both forms are written from.

``decide(event, payload, settings)`` never raises: whatever goes wrong — bad stdin, no plan
configured, a plan with problems, no ledger yet, an unexpected error — is a decision ``none``
with the reason in :attr:`Decision.notices` (one line each, for stderr). ``PreToolUse``'s
forbidden check needs the plan file only, so it works before the ledger exists; while the plan
file is invalid it checks against the list recorded while it was valid (:mod:`.fallback`).
An allowed tool call reads the plan's facts (:mod:`.loaded`) and the session's file and nothing
else; what only a deny, a reminder, ``SessionStart`` or ``Stop`` needs (the plan's spec, the
ledger, the models) is imported by the function that needs it.

The generic form (:meth:`Decision.as_generic`, ``waymark hook generic --json``)::

    {"schema": 1, "event": "PreToolUse", "decision": "deny", "reason": "...",
     "context": null, "reminder": false, "plan_id": "...", "executor": "...", "step": null,
     "notices": []}

``decision`` is ``deny`` (PreToolUse: do not run the tool call; ``reason`` says why),
``block`` (Stop: do not end the turn; TaskCompleted: do not close the session task that names
the step; ``reason`` says what is missing), ``allow`` (checked, nothing against it: PreToolUse,
Stop and TaskCompleted) or ``none`` (nothing decided: the other events, or the hook could not
decide). ``context`` is text for the agent's context (SessionStart's next context, a re-anchor
reminder, a subagent's first context), or null.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ..errors import HookNotRecorded, WaymarkError
from .accepted import Enforced, enforced_forbidden
from .counter import HookSession, prune_sessions, updated_session
from .forbidden import forbidden_match
from .loaded import InvalidPlan, LoadedPlan, agent_run_id, item_ids, load
from .payload import EVENTS, HookInput
from .settings import HookSettings
from .texts import deny_reason, no_ledger_context, reminder, session_context, stop_reason

if TYPE_CHECKING:
    from ..plan.spec import PlanSpec

__all__ = ["COMPACTED", "SCHEMA", "Decision", "Verdict", "decide", "named_steps"]

#: The generic form's version; bumped on any change that is not an added key.
SCHEMA = 1
Verdict = Literal["allow", "deny", "block", "none"]
#: The first line of SessionStart's context after a compaction (``source: compact``).
COMPACTED = (
    "The conversation was compacted. Re-read from the plan and its ledger: the goal, the "
    "forbidden list, the current step and its acceptance items below stand as written here, "
    "whatever the summary says."
)
log = logging.getLogger("prefect_waymark.hooks")


@dataclass
class Decision:
    """One event's answer, harness-neutral."""

    event: str | None
    decision: Verdict = "none"
    reason: str | None = None
    context: str | None = None
    reminder: bool = False
    plan_id: str | None = None
    executor: str | None = None
    step: str | None = None
    #: Why nothing (or not everything) was decided: one line each, for stderr.
    notices: list[str] = field(default_factory=list)
    #: A setup problem for the person (SessionStart only: once a session, not every call).
    user_message: str | None = None

    def as_generic(self) -> dict[str, Any]:
        doc = {"schema": SCHEMA, **asdict(self)}
        doc.pop("user_message")
        return doc


def decide(event: str | None, payload: HookInput, settings: HookSettings) -> Decision:
    """The decision for ``event`` (one of :data:`~.payload.EVENTS`)."""
    d = Decision(event, executor=settings.executor)
    d.notices += settings.notices
    if event not in EVENTS:
        d.notices.append(f"event {event!r} is not one the hook answers ({', '.join(EVENTS)})")
        return d
    try:
        plan = load(settings, payload)
        d.plan_id = plan.plan_id
        handler = _HANDLERS.get(event)
        if handler is not None:
            handler(plan, payload, d)
        else:
            _tool_or_prompt(event, plan, payload, d)
    except InvalidPlan as exc:
        if event == "PreToolUse":
            _invalid_plan(exc, settings, payload, d)
        else:
            d.notices.append(str(exc))
        if event == "SessionStart":
            d.user_message = f"waymark hook: {exc}"
    except WaymarkError as exc:
        d.notices.append(str(exc))
        if event == "SessionStart":
            d.user_message = f"waymark hook: {exc}"
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent's session
        log.debug("hook %s failed", event, exc_info=True)
        d.decision, d.reason, d.context = "none", None, None
        d.notices.append(f"{event}: unexpected {type(exc).__name__}: {exc}")
        if event == "SessionStart":
            d.user_message = f"waymark hook: {d.notices[-1]}"
    return d


def _invalid_plan(
    exc: InvalidPlan, settings: HookSettings, payload: HookInput, d: Decision
) -> None:
    """PreToolUse with a plan file that has problems: the check against the forbidden list
    recorded while it was valid (:mod:`.fallback`), or none (said in the one notice)."""
    from .fallback import recorded_forbidden

    try:
        kept = recorded_forbidden(exc.path, settings, payload)
    except HookNotRecorded as e:
        d.notices.append(f"{exc}; the forbidden check cannot run until it is valid ({e.reason})")
        return
    except Exception as e:  # noqa: BLE001 - no record to check against
        log.debug("no recorded forbidden list: %s", e, exc_info=True)
        d.notices.append(f"{exc}; the forbidden check cannot run until it is valid "
                         f"({type(e).__name__}: {e})")  # fmt: skip
        return
    d.plan_id = kept.plan_id
    d.notices.append(f"{exc}; checked against the forbidden list of {kept.source}")
    m = forbidden_match(kept.forbidden, payload.tool_name, payload.tool_input, payload.cwd)
    if m is None:
        d.decision = "allow"
        return
    d.decision = "deny"
    d.reason = deny_reason(m, f"as recorded by {kept.source}; the plan file is invalid now",
                           exc.path, d.executor)  # fmt: skip


def _session_start(plan: LoadedPlan, payload: HookInput, d: Decision) -> None:
    """The ``waymark next`` context: re-anchors (a ``reanchor`` ledger event), as ``next``."""
    from ..errors import LedgerNotFound
    from ..ledger import open_ledger

    prune_sessions(plan.workdir)
    with updated_session(plan.workdir, payload.session_id) as s:  # the session starts now
        s.plan_id = plan.plan_id
        s.since_reminder = 0
    _kept(s, d)
    try:
        led = open_ledger(plan.ledger_url, create=False)
    except LedgerNotFound:
        d.context = no_ledger_context(plan.plan_id, plan.path, plan.where(), d.executor)
        d.notices.append(f"plan {plan.plan_id!r}: no ledger yet at {plan.where()}")
        return
    from ..agents.next_step import next_document

    with led:
        doc, _code = next_document(plan.spec, led, plan.workdir, d.executor)
    d.context = session_context(doc, d.executor)
    if payload.source == "compact":  # the summary may shorten the story, never drop these
        d.context = f"{COMPACTED}\n{d.context}"
    step = doc.get("step")
    d.step = step["id"] if step else None
    with updated_session(plan.workdir, payload.session_id) as s:
        s.goal = (doc.get("contract") or {}).get("goal")
        s.forbidden = list((doc.get("contract") or {}).get("forbidden") or [])


def _subagent_start(plan: LoadedPlan, payload: HookInput, d: Decision) -> None:
    """A subagent starts with the plan's anchor: the goal, the forbidden list and the
    executor's step with its acceptance items (the re-anchor reminder's text, read the same way;
    the subagent works under the executor's name, its check-in is the executor's)."""
    with updated_session(plan.workdir, payload.session_id) as s:  # the parent session's
        s.plan_id = plan.plan_id
    _kept(s, d)
    enforced = _enforced(plan, s.accepted_contract) if plan.facts.contract == "goal" else None
    forbidden = enforced.forbidden if enforced is not None else _forbidden(plan, s)
    d.context = _reminder(plan, d, None, _goal(plan, s), forbidden)


def _kept(s: HookSession, d: Decision) -> None:
    if s.unsaved:
        d.notices.append(f"session state not kept ({s.unsaved}): prompts and calls not counted")


def _forbidden(plan: LoadedPlan, s: HookSession) -> list[str]:
    """The contract's forbidden list without Prefect: the plan file's inline contract, else
    what SessionStart's re-anchor read, else the last re-anchor's recorded free-text entries."""
    c = plan.facts.contract
    if c is None:
        return []
    if c == "goal":
        return list(plan.facts.forbidden)
    if s.forbidden is not None:
        return s.forbidden
    from ..ledger.event_kinds import EventKind

    try:
        with plan.reader() as r:
            last = r.last_event(plan.plan_id, [EventKind.reanchor])
    except Exception:  # noqa: BLE001 - no ledger (or an unreadable one): nothing recorded
        return []
    return [str(f) for f in (last.data.get("forbidden") or [])] if last else []


def _enforced(plan: LoadedPlan, remembered: str | None) -> Enforced:
    """The plan file's contract as accepted (:mod:`.accepted`): an edit that waits for review
    does not drop an entry."""
    try:
        url: str | None = plan.ledger_url
    except WaymarkError:  # a ledger pinned in a Secret block: the file's list
        url = None
    return enforced_forbidden(plan, url, remembered)


def _goal(plan: LoadedPlan, s: HookSession) -> str | None:
    f = plan.facts
    if f.contract == "goal":
        return f.objective
    return s.goal or (f"(the goal contract in block {f.block!r})" if f.contract else None)


def _tool_or_prompt(event: str, plan: LoadedPlan, payload: HookInput, d: Decision) -> None:
    """PreToolUse's forbidden check; every N prompts and tool calls the reminder. Neither the
    count nor the reminder can cost the check: their failures are notices."""
    every = plan.settings.every
    s = HookSession(session_id=payload.session_id or "unknown-session")
    remind, count = False, 0
    c = plan.facts.contract
    enforced: Enforced | None = None
    try:
        with updated_session(plan.workdir, payload.session_id) as s:
            s.plan_id = plan.plan_id
            if c == "goal":  # the list enforced, kept for while it is invalid
                enforced = _enforced(plan, s.accepted_contract)
                s.accepted_contract = enforced.followed
                s.plan_forbidden = enforced.forbidden
            else:
                s.plan_forbidden = None if c else []
            counted = s.count(event)
            remind = counted and every > 0 and s.since_reminder >= every
            count = s.prompts + s.tool_calls
            if remind:
                s.since_reminder = 0
                s.reminders += 1
        _kept(s, d)
    except Exception as exc:  # noqa: BLE001 - not counted, still checked
        d.notices.append(f"session state: {type(exc).__name__}: {exc}")
    if enforced is None and c == "goal":
        enforced = _enforced(plan, None)
    forbidden = enforced.forbidden if enforced is not None else _forbidden(plan, s)
    if enforced is not None and enforced.notice:
        d.notices.append(enforced.notice)
    if event == "PreToolUse":
        m = forbidden_match(forbidden, payload.tool_name, payload.tool_input, payload.cwd)
        if m is not None:
            d.decision = "deny"
            d.step = _my_step(plan, d)
            label = (enforced.label if enforced else None) or plan.contract_label()
            d.reason = deny_reason(m, label, plan.path, d.executor, d.step)
        else:
            d.decision = "allow"
    if remind:
        try:
            d.context = _reminder(plan, d, count, _goal(plan, s), forbidden)
            d.reminder = True
        except Exception as exc:  # noqa: BLE001 - a reminder lost, the decision kept
            d.notices.append(f"reminder: {type(exc).__name__}: {exc}")


def _my_step(plan: LoadedPlan, d: Decision) -> str | None:
    """The executor's step in progress, if the ledger can tell (for the deny's hint)."""
    from ..models import StepStatus

    if d.executor is None:
        return None
    mine = agent_run_id(d.executor)
    try:
        with plan.reader() as r:
            states = r.step_states(plan.plan_id)
    except Exception:  # noqa: BLE001 - no ledger yet: no step in progress
        return None
    for sid in plan.spec.topological_order():
        st = states.get(sid)
        if st is not None and st.status == StepStatus.in_progress and st.run_id == mine:
            return sid
    return None


def _reminder(
    plan: LoadedPlan, d: Decision, count: int | None, goal: str | None, forbidden: list[str]
) -> str:
    """The re-anchor text (``count`` prompts and tool calls since the last; ``None``: for a
    subagent that starts)."""
    from ..ledger.progress_view import build_view
    from ..models import StepStatus

    step_doc: dict[str, Any] | None = None
    try:
        with plan.reader() as r:
            states = r.step_states(plan.plan_id)
    except WaymarkError as exc:
        d.notices.append(str(exc))
        states = {}
    view = build_view(plan.spec, states)
    milestone = view.active_milestone
    standing = f"{view.counts.get('completed', 0)}/{len(view.steps)} done"
    if d.executor is not None:
        mine = agent_run_id(d.executor)
        for sid, st in states.items():
            if st.status == StepStatus.in_progress and st.run_id == mine:
                try:
                    spec = plan.spec.step(sid)
                except KeyError:
                    continue
                d.step = sid
                milestone = spec.milestone or milestone
                step_doc = {"id": sid, "status": st.status.value,
                            "instructions": spec.instructions or spec.title,
                            "acceptance": item_ids(spec.acceptance)}  # fmt: skip
                break
    return reminder(
        plan_id=plan.plan_id, plan_path=plan.path, count=count, goal=goal,
        milestone=milestone, forbidden=forbidden, executor=d.executor, step=step_doc,
        standing=standing,
    )  # fmt: skip


def _after(at: str | None, since: str) -> bool:
    if at is None:
        return False
    try:
        return datetime.fromisoformat(at) >= datetime.fromisoformat(since)
    except (ValueError, TypeError):  # unreadable, or naive against aware: not this session
        return False


def _stop(plan: LoadedPlan, payload: HookInput, d: Decision) -> None:
    """Block the end of the turn while the executor's step is open, or was checked in during
    this session without evidence for an acceptance item (told once per step and gap)."""
    if payload.stop_hook_active:
        d.decision = "allow"
        d.notices.append("stop_hook_active: the turn already continued for a Stop hook; no block")
        return
    _unfinished(plan, payload, d, None)


def _task_completed(plan: LoadedPlan, payload: HookInput, d: Decision) -> None:
    """A session task closed: the session's tasks are the low layer, the plan's step the high
    one. A task that names one of the executor's steps (:func:`named_steps`) cannot close while
    that step is open or was checked in without its evidence — the same block as ``Stop``; any
    other task closes freely."""
    named = named_steps(plan.spec, payload.task_subject)
    if not named:
        d.decision = "allow"
        return
    _unfinished(plan, payload, d, named)


def named_steps(spec: PlanSpec, subject: str | None) -> set[str]:
    """The steps a session task's subject names: the subject is the step's id or title, or
    starts with the id followed by ``:``, `` - ``, ``—`` or ``–``, or says ``step <id>`` (case,
    spacing and surrounding quotes aside). A subject that only uses the id as a word ("draft the
    intro" beside a step ``draft``) names nothing: an agent's own sub-tasks of a step close freely.
    ``waymark init --agent`` tells the agent to name the step's task ``STEP: title``."""
    if not subject:
        return set()
    text = " ".join(subject.split()).strip(" .`'\"*").casefold()
    found: set[str] = set()
    for step in spec.steps:
        sid = step.id.casefold()
        title = (step.title or "").strip().casefold()
        if text == sid or (title and text == title):
            found.add(step.id)
        elif re.match(rf"{re.escape(sid)}(?:\s*[:\u2014\u2013]|\s+-\s|$)", text):
            found.add(step.id)
        elif re.search(rf"(?<![\w-])step\s+`?{re.escape(sid)}`?(?![\w-])", text):
            found.add(step.id)
    return found


def _unfinished(plan: LoadedPlan, payload: HookInput, d: Decision, only: set[str] | None) -> None:
    """Block while one of the executor's steps (of ``only``, else any) is open, or was checked in
    during this session without evidence for an acceptance item (told once per step and gap)."""
    if d.executor is None:
        d.notices.append(f"no valid executor: {d.event} checks nothing")
        return
    from ..models import StepStatus

    with plan.reader() as r:
        states = r.step_states(plan.plan_id)
    mine = agent_run_id(d.executor)
    open_steps: list[tuple[str, dict[str, str]]] = []
    done_missing: list[tuple[str, dict[str, str], list[str]]] = []
    with updated_session(plan.workdir, payload.session_id) as s:
        s.plan_id = plan.plan_id
        for sid in plan.spec.topological_order():
            st = states.get(sid)
            if st is None or (only is not None and sid not in only):
                continue
            items = item_ids(plan.spec.step(sid).acceptance)
            if st.status == StepStatus.in_progress and st.run_id == mine:
                open_steps.append((sid, items))
            elif (
                st.status == StepStatus.completed
                and st.skipped is None  # `waymark skip` asks for no evidence
                and st.executor == d.executor
                and _after(st.completed_at, s.started_at)
            ):
                missing = [i for i in items if not st.evidence.get(i)]
                key = f"{sid}:{','.join(missing)}"
                if missing and key not in s.told:
                    done_missing.append((sid, items, missing))
                    s.told.append(key)
        if open_steps or done_missing:
            s.stop_blocks += 1
    _kept(s, d)
    if not open_steps and not done_missing:
        d.decision = "allow"
        return
    d.decision = "block"
    d.step = (open_steps or done_missing)[0][0]
    d.reason = stop_reason(plan.path, d.executor, open_steps, done_missing)


#: The events with their own handler (the prompt and tool events share :func:`_tool_or_prompt`).
_HANDLERS: dict[str, Callable[[LoadedPlan, HookInput, Decision], None]] = {
    "SessionStart": _session_start,
    "Stop": _stop,
    "TaskCompleted": _task_completed,
    "SubagentStart": _subagent_start,
}
