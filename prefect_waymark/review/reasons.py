"""A stop for review in words: why the step stopped, what each answer does, and how to give it.

The ledger keeps what a guard found (``step_needs_review``: ``reason`` and ``details``, see
:mod:`prefect_waymark.guards`); people need it said plainly — "state ref ``terms`` was version
``a1b2…`` when accepted and is ``c3d4…`` now" rather than two hashes. Used by the review form's
description, the plan page and the per-run marker artifact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..text.commands import carry_options
from ..text.human_time import ago, deadline

if TYPE_CHECKING:
    from ..plan.spec import PlanSpec

__all__ = [
    "ANSWERS",
    "answer_effects",
    "form_description",
    "review_commands",
    "reason_words",
    "short_version",
]

ANSWERS = ("accept", "rerun", "abort")


_HASHED = re.compile(r"^([A-Za-z0-9_-]+:)?([0-9a-fA-F]{16,})$")


def short_version(value: object) -> str:
    """A version as people compare it: a hash (``sha256:<hex>`` or bare hex) cut to 12 hex
    digits, other long values to 24 characters."""
    text = str(value)
    hashed = _HASHED.match(text)
    if hashed:
        return f"{hashed.group(1) or ''}{hashed.group(2)[:12]}…"
    return text if len(text) <= 24 else text[:23] + "…"


def _conflict_words(c: Mapping[str, Any], now: datetime) -> str:

    ref, problem = c.get("ref"), c.get("problem")
    read = f" (read {ago(c['at'], now)})" if c.get("at") else ""
    if c.get("kind") == "contract":
        return str(c.get("message") or f"the goal contract is {problem}")
    if problem == "changed":
        return (
            f"state ref `{ref}` was version `{short_version(c.get('accepted'))}` when accepted "
            f"and is `{short_version(c.get('current'))}` now{read}"
        )
    if problem == "unreadable":
        return f"state ref `{ref}` cannot be read{read}: {c.get('error') or c.get('message')}"
    return str(c.get("message") or f"state ref `{ref}`: {problem}")


def _output_words(details: Mapping[str, Any]) -> list[str]:
    recorded = details.get("recorded_outputs") or {}
    lines = []
    for path, now_hash in sorted((details.get("current_outputs") or {}).items()):
        if now_hash == "absent":
            lines.append(f"output `{path}` was deleted since the step completed")
        else:
            was = short_version(recorded.get(path, "?"))
            lines.append(
                f"output `{path}` changed since the step completed (sha256 `{was}` then, "
                f"`{short_version(now_hash)}` now); a re-run would overwrite the edit"
            )
    return lines


def reason_words(reason: str | None, details: Mapping[str, Any], now: datetime) -> list[str]:
    """Why a step waits for review, one sentence per finding."""
    if details.get("aborted"):
        return [reason or "the plan was aborted"]
    if details.get("conflicts"):
        words = [_conflict_words(c, now) for c in details["conflicts"]]
        point = details.get("point")
        if point:
            words[-1] += f" — found at {str(point).replace('_', ' ')}"
        return words
    if details.get("current_outputs"):
        return _output_words(details)
    if "recorded_hash" in details:
        return [
            "the step's definition (its command or callable, dependencies, outputs or action) "
            "changed since it completed; running it again or keeping its old result are both "
            "a guess"
        ]
    if "result_key" in details:
        needed = f", and step `{details['needed_by']}` needs it" if details.get("needed_by") else ""
        return [f"the step's persisted result is gone{needed} ({reason})"]
    if "intent_run" in details:
        started = f" {ago(details['intent_at'], now)}" if details.get("intent_at") else ""
        return [
            f"action `{details.get('action')}` (key `{details.get('key')}`) was started"
            f"{started} by run {details.get('intent_run')} and no receipt was recorded: whether "
            "it happened is unknown — check the business system"
        ]
    return [reason or "stopped for review"]


def answer_effects(
    details: Mapping[str, Any], step_id: str, *, this_run: bool, checked_in: bool = False
) -> dict[str, str]:
    """What accept, rerun and abort each do for this stop. ``this_run``: the run is paused and
    goes on with the answer (else the next ``waymark run`` follows it). ``checked_in``: an agent's
    or a person's step, which no flow run runs: its rerun goes back to its executor."""
    who = "this run" if this_run else "the next `waymark run`"
    if details.get("current_outputs"):
        accept = (
            f"keep the edited files as step `{step_id}`'s outputs; the step stays completed "
            f"and {who} goes on with the steps after it"
        )
    elif "recorded_hash" in details:
        accept = f"keep step `{step_id}` completed under its new definition; {who} goes on"
    elif "result_key" in details:
        accept = (
            f"keep step `{step_id}` completed without its value ({who} goes on; a step that "
            "needs the value stops again — choose rerun to recompute it)"
        )
    elif "intent_run" in details:
        accept = (
            "say what happened with receipt *applied* (it is never done again) or *not-applied* "
            f"({who} does it); then {who} goes on"
        )
    else:
        accept = (
            "take the current versions shown above as the accepted ones; "
            f"{who} goes on with step `{step_id}`"
        )
    if checked_in:
        accept = accept.replace(
            f"{who} goes on with step `{step_id}`",
            f"step `{step_id}` goes back to its executor (`waymark next` offers it)",
        )
        rerun = (
            f"accept the current versions and hand step `{step_id}` back to its executor to do "
            "again (`waymark next` offers it; a flow run never runs an agent's or a person's "
            "step; a committed action receipt is never done twice)"
        )
    else:
        rerun = (
            f"accept the current versions and run step `{step_id}` again in {who} "
            "(its outputs are written anew; a committed action receipt is never done twice)"
        )
    return {
        "accept": accept,
        "rerun": rerun,
        "abort": f"stop the plan: {who} runs nothing more, and `waymark run` refuses the plan "
        "until someone answers `waymark review --accept` or `--rerun`",
    }


def review_commands(
    plan_source: str,
    step_id: str,
    *,
    workdir: str | None = None,
    ledger: str | None = None,
    open_action: bool = False,
) -> list[tuple[str, str]]:
    """The exact ``waymark review`` command of each answer, as (answer, command) pairs;
    ``--workdir``/``--ledger`` only when they are not the plan's defaults (pass them masked).
    For an action whose outcome is unknown, accept comes as two commands: it happened, or not."""
    if plan_source.startswith("<"):
        plan = "PLAN"
    else:
        plan = str(Path(plan_source).resolve()) if Path(plan_source).exists() else plan_source
    base = f"waymark review {_shell(plan)} --step {step_id}"
    if workdir:
        base += f" --workdir {_shell(workdir)}"
    if ledger:
        base += f" --ledger {_shell(ledger)}"
    base = carry_options(base)
    if open_action:
        accepts = [
            ("accept (it happened)", f"{base} --accept --receipt applied"),
            ("accept (it did not happen)", f"{base} --accept --receipt not-applied"),
        ]
    else:
        accepts = [("accept", f"{base} --accept")]
    return [*accepts, ("rerun", f"{base} --rerun"), ("abort", f"{base} --abort")]


def _shell(text: str) -> str:
    import shlex

    return shlex.quote(text)


def form_description(
    plan: PlanSpec,
    step_id: str,
    reason: str | None,
    details: Mapping[str, Any],
    *,
    wait_seconds: float,
    now: datetime,
    page_url: str | None = None,
) -> str:
    """The Markdown above the review form in the Prefect UI: why the run paused, what each
    answer does for this run, and what happens without one."""
    from datetime import timedelta

    spec = plan.step(step_id)
    title = f" ({spec.title})" if spec.title else ""
    lines = [
        f"**Plan `{plan.plan_id}` stopped at step `{step_id}`{title} for review.**",
        "",
        "Why:",
        *[f"- {w}" for w in reason_words(reason, details, now)],
        "",
        "Choose a **decision**:",
    ]
    effects = answer_effects(details, step_id, this_run=True, checked_in=spec.checked_in)
    lines += [f"- **{name}** — {effects[name]}" for name in ANSWERS]
    open_action = "intent_run" in details
    lines += [
        "",
        "**receipt**: "
        + (
            "this step's action has an unknown outcome — *applied* if it happened (it is never "
            "done again), *not-applied* if it did not (this run does it)."
            if open_action
            else "leave it empty (it is only for an action whose outcome is unknown)."
        ),
        "**reason** and **by** go into the ledger with your decision.",
        "",
        f"This run waits until {deadline(now + timedelta(seconds=wait_seconds), now)}; without "
        f"an answer it stops for review, and `waymark review PLAN --step {step_id} --accept` "
        "(or `--rerun`, `--abort`) answers later.",
    ]
    if page_url:
        lines += ["", f"Where the plan stands: [the plan page]({page_url})."]
    return "\n".join(lines)
