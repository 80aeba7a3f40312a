"""``waymark next``: the re-anchor at the start of every agent session.

:func:`next_document` re-reads the goal contract and every state ref (``before_decision``), then
returns the one step to work on now — the executor's own step in progress, else the first ready
agent or manual step it may take — with everything needed to do it without reading the plan's
history: instructions, acceptance items (ids ``A1``…), the forbidden list, the refs with their
versions, the upstream steps' outputs (paths and hashes), earlier attempts; plus the plan's
standing, the last marker's boundary and the refs that changed. Or it says why nothing is ready.
The document is the ``--json`` output (:data:`SCHEMA`); the exit code goes with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..ledger import Ledger
from ..ledger.events import EventKind
from ..ledger.progress_view import PlanView, build_view, stale_words
from ..ledger.step_state import StepState
from ..plan.spec import PlanSpec, StepSpec
from ..run import exit_codes
from ..text.commands import review_command, waymark_command
from .anchor import reanchor
from .checkin import (
    CheckinStopped,
    _stop,
    acceptance_ids,
    agent_run_id,
    applied_receipts,
    refused_before,
)

__all__ = ["SCHEMA", "next_document"]

#: ``waymark next --json``'s version; bumped on any change that is not an added key.
SCHEMA = 1
_ATTEMPT_KINDS = [
    EventKind.step_attempt_failed,
    EventKind.step_failed,
    EventKind.step_interrupted,
    EventKind.step_needs_review,
    EventKind.step_blocked,
]


def _available(
    step: StepSpec, states: dict[str, StepState], held: set[str], executor: str | None
) -> bool:
    st = states.get(step.id)
    status = st.status if st else "pending"
    if not step.checked_in or step.branch in held or refused_before(st):
        return False
    if status == "blocked":
        on = st.blocked_on if st else None
        if on is None or states.get(on) is None or states[on].status != "completed":
            return False
    elif status not in ("pending", "failed"):
        return False
    if executor is not None and step.owner not in (None, executor):
        return False
    return all(  # a stale need runs again first: its new output is what the step needs
        states.get(d) is not None and states[d].status == "completed" and not states[d].stale
        for d in step.depends_on
    )


def _choose(
    plan: PlanSpec, states: dict[str, StepState], run_id: str, executor: str | None, ledger: Ledger
) -> StepSpec | None:
    for sid, st in states.items():
        if st.status == "in_progress" and st.run_id == run_id:
            try:
                return plan.step(sid)
            except KeyError:
                continue
    held = {h.branch for h in ledger.holds(plan.plan_id)}
    for sid in plan.topological_order():
        step = plan.step(sid)
        if _available(step, states, held, executor):
            return step
    return None


def _standing(plan: PlanSpec, view: PlanView, step: StepSpec | None) -> str:
    total, done = len(view.steps), view.counts.get("completed", 0)
    parts = [f"{done}/{total} done"]
    milestone = step.milestone if step is not None and step.milestone else view.active_milestone
    if milestone:
        parts.append(f"milestone {milestone}")
    if step is not None:
        after = [
            s.id
            for s in view.steps
            if s.status != "completed" and s.id != step.id and step.id in _ancestors(plan, s.id)
        ]
        order = plan.topological_order()
        after.sort(key=order.index)
        parts.append(f"next after this: {after[0]}" if after else "nothing waits on this")
    return " · ".join(parts)


def _ancestors(plan: PlanSpec, sid: str) -> set[str]:
    seen: set[str] = set()
    stack = list(plan.step(sid).depends_on)
    while stack:
        d = stack.pop()
        if d not in seen:
            seen.add(d)
            stack.extend(plan.step(d).depends_on)
    return seen


def _step_doc(
    plan: PlanSpec,
    step: StepSpec,
    states: dict[str, StepState],
    ledger: Ledger,
    workdir: Path,
    refs: list[dict[str, Any]],
    forbidden: list[str],
    executor: str | None,
) -> dict[str, Any]:
    st = states.get(step.id)
    by_name = {r.get("name"): r for r in refs}
    upstream = []
    for dep in step.depends_on:
        ds = states.get(dep)
        upstream.append(
            {
                "step": dep,
                "kind": plan.step(dep).kind,
                "executor": ds.executor if ds else None,
                "outputs": [
                    _output(workdir, p, h, ds.workdir if ds else None, plan.allow_outside_workdir)
                    for p, h in (ds.outputs if ds else {}).items()
                ],
                "evidence": dict(ds.evidence) if ds else {},
                "skipped": ds.skipped if ds else None,  # `waymark skip`: left out, no outputs
                "stale": ds.stale if ds else None,  # runs again before this step is offered
            }
        )
    attempts = [
        {"at": ev.at.isoformat(), "event": ev.kind.value, "run": ev.run_id,
         "error": ev.data.get("error") or ev.data.get("reason")}
        for ev in ledger.events(plan.plan_id, kinds=_ATTEMPT_KINDS)
        if ev.step_id == step.id
    ]  # fmt: skip
    who = executor or "NAME"
    return {
        "id": step.id,
        "title": step.title,
        "kind": step.kind,
        "owner": step.owner,
        "branch": step.branch,
        "milestone": step.milestone,
        "status": st.status if st else "pending",
        "instructions": step.instructions,
        "acceptance": [{"id": i, "text": t} for i, t in acceptance_ids(step).items()],
        "forbidden": list(forbidden),
        "action": step.action,
        # The action's committed receipts: done already (by an earlier executor, before a
        # `waymark rerun`), so it is not done again; `done` completes the step on them.
        "receipts": _receipts(plan, ledger, step),
        "outputs": list(step.outputs),
        "reads": [
            {"name": n, **{k: by_name[n].get(k) for k in ("where", "accepted", "current")}}
            if n in by_name
            else {"name": n}
            for n in step.reads
        ],
        "upstream": upstream,
        "attempts": attempts[-10:],
        "commands": {
            "start": waymark_command("start", plan.source, step.id, "--executor", who),
            "tick": waymark_command("tick", plan.source, step.id, "--executor", who),
            "done": waymark_command(
                "done",
                plan.source,
                step.id,
                "--executor",
                who,
                *(f'--evidence "{i}: ..."' for i in acceptance_ids(step)),
            ),
        },
    }


def _receipts(plan: PlanSpec, ledger: Ledger, step: StepSpec) -> list[dict[str, Any]]:
    """The step's action, done already: its committed receipts (an earlier executor's, before a
    ``waymark rerun``) — the action is not done again, ``done`` completes the step on them."""
    out = []
    for r in applied_receipts(ledger, plan, step):
        note = (
            f"{r.applied_words()} (receipt {r.key}): do not do it again; `done` completes the "
            "step on this receipt"
        )
        by = r.settled_by or r.intent_by
        out.append({"key": r.key, "action": r.action, "external_id": r.external_id,
                    "at": r.settled_at, "by": by, "note": note})  # fmt: skip
    return out


def _output(
    workdir: Path, rel: str, sha: str, made_in: str | None, allow_outside: bool
) -> dict[str, Any]:
    """An upstream output: is it here (this workdir, same content), and where it was made. One
    that is refused here (a link out of the workdir, a FIFO) is not here."""
    from ..errors import OutputRefused
    from ..guards.output_hashes import hash_output

    try:
        here = hash_output(workdir, rel, allow_outside=allow_outside) == sha
    except OutputRefused:
        here = False
    return {
        "path": rel,
        "sha256": sha,
        "here": here,
        "abs_path": str((workdir / rel).resolve()) if here else None,
        "made_in": str(Path(made_in) / rel) if made_in else None,
    }


def _why_nothing(plan: PlanSpec, view: PlanView, states: dict[str, StepState], executor: str | None,
                 ledger: Ledger) -> str:  # fmt: skip
    if view.complete:
        return "plan complete: every step is done"
    if view.needs_review:
        item = view.needs_review[0]
        return (
            f"needs review: step {item['step']} ({item.get('reason')}); answer with "
            f"`{review_command(plan.source, item['step'])}`"
        )
    mine = agent_run_id(executor) if executor else None
    for h in ledger.holds(plan.plan_id):
        if h.run_id != mine:
            who = h.run_id.removeprefix("agent:") if h.run_id.startswith("agent:") else h.run_id
            return f"waiting for {who}: step {h.step_id} is in progress since {h.since}"
    for v in view.steps:
        st = states.get(v.id)
        if v.status == "blocked" and st is not None and st.last_event == "step_blocked":
            return f"blocked: step {v.id} — {st.error}"
    refused = [sid for sid, st in states.items() if refused_before(st)]
    if refused:
        return (
            f"refused: step {refused[0]} — {states[refused[0]].error}; "
            f"`{waymark_command('rerun', plan.source, refused[0])}` offers it again (after the "
            "plan or contract changed)"
        )
    nxt = view.next_step
    if nxt is not None:
        step = plan.step(nxt)
        if not step.checked_in:
            run = waymark_command("run", plan.source)
            return f"next is code step {nxt}: a flow run does it (`{run}`)"
        return f"next step {nxt} is for {step.owner}, not {executor}"
    if view.blocked:
        return f"blocked: {', '.join(view.blocked)} behind a failed step"
    return "nothing is ready"


def _next_start_now(view: PlanView, said: Any) -> dict[str, Any]:
    """Where the plan starts next now (:attr:`PlanView.next_start`), in the marker's shape
    (``step``, ``why``): the marker's own words while it still holds; else why it moved —
    steps completed, answered or rerun since that run, in this folder or another."""
    step = view.next_start
    if isinstance(said, dict) and said.get("step") == step:
        return said
    if step is None:
        why = "plan complete"
    elif view.needs_review:
        why = "stopped for review since that run"
    else:
        why = "the plan moved since that run (steps checked in or run since, here or elsewhere)"
    return {"step": step, "why": why}


def next_document(
    plan: PlanSpec, ledger: Ledger, workdir: Path, executor: str | None
) -> tuple[dict[str, Any], int]:
    """The ``waymark next`` document and its exit code (0 a step, 3 nothing ready, 4 review,
    2 the plan was closed: nothing is offered, nothing re-anchored or recorded)."""
    from ..closing.closed import closed_line, closed_refusal
    from ..ledger.plan_close import read_closed

    closed = read_closed(ledger, plan.plan_id)
    if closed is not None:  # `waymark close`: no step is offered again
        shut: dict[str, Any] = {
            "schema": SCHEMA,
            "plan_id": plan.plan_id,
            "executor": executor,
            "standing": closed_line(plan.plan_id, closed),
            "step": None,
            "reason": closed_refusal(plan.plan_id, plan.source, closed),
            "closed": closed,
            "contract": {},
            "refs_changed": [],
            "needs_review": [],
            "boundary": None,
        }
        return shut, exit_codes.BAD_INPUT
    run_id = agent_run_id(executor or "next")
    states = ledger.step_states(plan.plan_id)
    stopped = None
    for _ in range(len(plan.steps) + 1):
        target = _choose(plan, states, run_id, executor, ledger)
        reading = reanchor(plan, ledger, workdir, run_id, target, all_refs=True)
        if target is None or reading.verdict is None:
            break
        try:
            _stop(plan, ledger, run_id, target, reading.verdict)
        except CheckinStopped as exc:
            stopped = str(exc)
        states = ledger.step_states(plan.plan_id)
        if reading.verdict.kind != "refuse":
            target = None  # a conflict: the plan waits for a person's answer
            break
        # A forbidden action: that step is refused (once); look for another to do.
    view = build_view(plan, states)
    last = ledger.last_event(plan.plan_id, [EventKind.marker_written])
    boundary = None
    if last is not None:
        d = last.data
        boundary = {k: d.get(k) for k in ("run_id", "executor", "started_at", "ended_at", "result")}
        boundary["next_start"] = _next_start_now(view, d.get("next_start"))
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "plan_id": plan.plan_id,
        "executor": executor,
        "standing": _standing(plan, view, target),
        "step": None,
        "reason": None,
        "contract": {"goal": reading.goal, "forbidden": reading.forbidden},
        "refs_changed": [r for r in reading.refs if r.get("result") == "changed"],
        "needs_review": view.needs_review,
        # completed steps whose inputs changed since: the next run runs them again (or stops)
        "stale": [
            {"step": v.id, "why": stale_words(v.stale), **v.stale}
            for v in view.steps
            if v.stale and v.status == "completed"
        ],
        "boundary": boundary,
    }
    if target is not None:
        doc["step"] = _step_doc(
            plan, target, states, ledger, workdir, reading.refs, reading.forbidden, executor
        )
        return doc, exit_codes.OK
    doc["reason"] = (stopped if view.needs_review else None) or _why_nothing(
        plan, view, states, executor, ledger
    )
    code = exit_codes.NEEDS_REVIEW if view.needs_review else exit_codes.STOPPED
    return doc, code
