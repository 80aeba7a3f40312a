"""The words a hook gives the agent: the session context, the reminder, the reasons.

Written as statements about the plan ("The current step is ...", "Forbidden by the goal
contract: ..."), not as out-of-band orders: Claude Code's documentation asks for that, so the
agent reads them as project information. Each text stays under :data:`MAX_CHARS` (Claude Code
moves longer hook output to a file).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .forbidden import Match

__all__ = [
    "MAX_CHARS",
    "clip",
    "deny_reason",
    "no_ledger_context",
    "reminder",
    "session_context",
    "stop_reason",
]

MAX_CHARS = 9000


def clip(text: str, limit: int = MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 40].rstrip() + f"\n… ({len(text) - limit + 40} characters cut)"


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


def done_command(plan_path: Path, step_id: str, executor: str, items: list[str]) -> str:
    """The ``waymark done`` that checks ``step_id`` in with evidence for ``items``."""
    ev = "".join(f' --evidence "{i}: ..."' for i in items)
    return f"waymark done {_q(plan_path)} {step_id} --executor {executor}{ev}"


def session_context(doc: dict[str, Any], executor: str | None) -> str:
    """SessionStart's context: the ``waymark next`` document, compact."""
    who = executor or "any executor"
    lines = [f"waymark plan {doc['plan_id']}: {doc['standing']}"]
    contract = doc.get("contract") or {}
    if contract.get("goal"):
        lines.append(f"Goal: {contract['goal']}")
    if contract.get("forbidden"):
        lines.append("Forbidden by the goal contract: " + "; ".join(contract["forbidden"]))
    for r in doc.get("refs_changed") or []:
        lines.append(
            f"State ref changed: {r.get('name')} ({r.get('where')}): {r.get('accepted')} -> "
            f"{r.get('current')}"
        )
    step = doc.get("step")
    if step is None:
        lines.append(f"No step is ready for {who}: {doc.get('reason')}")
    else:
        lines += _step_lines(step, who)
    return clip("\n".join(lines))


def _step_lines(step: dict[str, Any], who: str) -> list[str]:
    """The current step's part of the context: what to do, with what, and how to check in."""
    where = f"{step['kind']}, {step['status']}; branch {step['branch']}"
    if step.get("milestone"):
        where += f"; milestone {step['milestone']}"
    title = f" — {step['title']}" if step.get("title") else ""
    lines = [
        f"The current step for {who} is {step['id']}{title} ({where}).",
        f"Instructions: {step['instructions']}",
    ]
    if step["acceptance"]:
        lines.append("Acceptance items (each needs evidence at check-in):")
        lines += [f"  {a['id']}: {a['text']}" for a in step["acceptance"]]
    if step.get("outputs"):
        lines.append("Declared outputs (must exist at check-in): " + ", ".join(step["outputs"]))
    for u in step.get("upstream") or []:
        for o in u.get("outputs") or []:
            where = o.get("abs_path") or o.get("path")
            if o.get("here") is False:
                where = f"{o.get('path')} (not in this folder; made in {o.get('made_in')})"
            lines.append(f"Upstream {u.get('step')}: {where} (sha256 {str(o.get('sha256'))[:12]}…)")
    for a in step.get("attempts") or []:
        lines.append(
            f"Earlier: {a.get('event')} at {str(a.get('at'))[:19]}: {a.get('error') or ''}"
        )
    cmd = step.get("commands") or {}
    if step["status"] == "in_progress":
        lines.append(f"The step is in progress as {who}'s; hold renewed by: {cmd.get('tick')}")
    else:
        lines.append(f"Start: {cmd.get('start')}")
    lines.append(f"Check-in when done: {cmd.get('done')}")
    return lines


def no_ledger_context(plan_id: str, plan_path: Path, where: str, executor: str | None) -> str:
    who = f" --executor {executor}" if executor else ""
    return (
        f"waymark plan {plan_id}: nothing is recorded yet (no ledger at {where}). "
        f"`waymark next {_q(plan_path)}{who}` names the first step."
    )


def reminder(
    *,
    plan_id: str,
    plan_path: Path,
    count: int | None,
    goal: str | None,
    milestone: str | None,
    forbidden: list[str],
    executor: str | None,
    step: dict[str, Any] | None,
    standing: str | None,
) -> str:
    """The re-anchor reminder: goal, milestone, forbidden list, the current step (``count``:
    prompts and tool calls since the last; ``None``: a subagent's first context)."""
    why = (
        f"waymark re-anchor after {count} prompts and tool calls"
        if count is not None
        else "waymark: this subagent works on the plan's step, under its goal contract"
    )
    lines = [f"{why}: plan {plan_id}" + (f" ({standing})" if standing else "")]  # fmt: skip
    if goal:
        lines.append(f"Goal: {goal}")
    if milestone:
        lines.append(f"Milestone: {milestone}")
    lines.append("Forbidden by the goal contract: " + ("; ".join(forbidden) or "nothing listed"))
    if step is None:
        who = f" --executor {executor}" if executor else ""
        lines.append(
            f"No step is in progress for {executor or 'this executor'}; "
            f"`waymark next {_q(plan_path)}{who}` names the next one."
        )
    else:
        lines.append(f"Current step: {step['id']} ({step['status']}): {step['instructions']}")
        lines += [f"  {i}: {t}" for i, t in step["acceptance"].items()]
        if executor:
            lines.append(
                "Check-in when done: "
                + done_command(plan_path, step["id"], executor, list(step["acceptance"]))
            )
    return clip("\n".join(lines))


def deny_reason(
    m: Match, contract: str, plan_path: Path, executor: str | None, step: str | None = None
) -> str:
    """Why a tool call is denied, and what to do instead: block ``step`` (the executor's step
    in progress) if it cannot go on without the call."""
    if m.how == "unreadable":
        what = (
            f"the command cannot be checked to its end ({m.pattern}), and the contract's "
            "enforced entries cannot be ruled out; split it into plainer commands, with each "
            "program and script spelled out"
        )
    elif m.how == "command":
        what = f"the command `{m.matched}` matches `{m.pattern}`"
    else:
        what = f"the {m.how} `{m.matched}` matches `{m.pattern}`"
    who = f" --executor {executor}" if executor else ""
    head = (
        f"Forbidden by the goal contract ({contract}): {m.rule!r} — {what}. The tool call was "
        "not run."
    )
    if step is not None:
        return (
            f"{head} If step {step} cannot go on without it: `waymark block {_q(plan_path)} "
            f'{step}{who} --reason "..."` records that it waits for a person.'
        )
    return (
        f"{head} No step is in progress for {executor or 'this executor'} "
        f"(`waymark next {_q(plan_path)}{who}` names the next one); if a step cannot go on "
        f'without it, `waymark block {_q(plan_path)} STEP{who} --reason "..."` records that it '
        "waits for a person."
    )


def stop_reason(
    plan_path: Path,
    executor: str,
    open_steps: list[tuple[str, dict[str, str]]],
    done_missing: list[tuple[str, dict[str, str], list[str]]],
) -> str:
    """Why the turn may not end yet: steps in progress (with their acceptance items), and steps
    done without evidence (``(step, items, missing ids)``)."""
    lines: list[str] = []
    for sid, items in open_steps:
        lines.append(
            f"Step {sid} is in progress as {executor}'s and not checked in. When its acceptance "
            f"items hold: {done_command(plan_path, sid, executor, list(items))}"
        )
        lines += [f"  {i}: {t}" for i, t in items.items()]
        lines.append(
            f"If it cannot be finished now: `waymark block {_q(plan_path)} {sid} --executor "
            f'{executor} --reason "..."` (or `waymark fail ... --reason "..."`).'
        )
    for sid, items, missing in done_missing:
        ids = ", ".join(missing)
        lines.append(f"Step {sid} was checked in by {executor} without evidence for {ids}:")
        lines += [f"  {i}: {items[i]}" for i in missing]
        lines.append(
            f"Evidence is recorded only by `waymark done`: `waymark rerun {_q(plan_path)} {sid} "
            f'--reason "evidence missing for {ids}"`, `waymark start {_q(plan_path)} {sid} '
            f"--executor {executor}`, then {done_command(plan_path, sid, executor, list(items))}"
        )
    return clip("\n".join(lines))
