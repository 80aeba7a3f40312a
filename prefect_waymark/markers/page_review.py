"""The plan page's "Needs your answer" section: each stop for review in words, what accept,
rerun and abort each do, and exactly how to answer (the paused run's form, the CLI)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from ..ledger import default_ledger_url
from ..ledger.events import ProgressEvent
from ..ledger.progress_view import PlanView
from ..plan.spec import PlanSpec
from ..review.reasons import answer_effects, reason_words, review_commands
from ..text.human_time import when
from ..text.markdown import code, code_block, link
from .page_sections import step_title
from .plan_copy import PlanCopy, flow_run_url, normal_ledger_url

__all__ = ["review_section"]


_LIST_MAX = 40


def review_section(
    plan: PlanSpec,
    view: PlanView,
    copy: PlanCopy,
    now: datetime,
    ui_url: str | None,
    pause: ProgressEvent | None,
) -> list[str]:
    """Each step waiting for review: why in words, what each answer does, and how to give it —
    the paused run's form (``pause``: this run's open ``review_waiting`` event) and the exact
    ``waymark review`` commands."""
    items = view.needs_review
    if not items:
        return []
    out = ["", f"## Needs your answer ({len(items)})"]
    workdir_flag, ledger_flag = _cli_flags(plan, copy)
    if len(items) > _LIST_MAX:  # a page stays readable (and cheap) on a huge plan
        out += ["", f"The first {_LIST_MAX} of {len(items)}; `waymark status` lists all."]
    for item in items[:_LIST_MAX]:
        sid = str(item["step"])
        details = {k: v for k, v in item.items() if k not in ("step", "reason")}
        spec = view.step(sid)
        paused_here = pause is not None and pause.step_id == sid
        out += ["", f"### {code(sid)}{step_title(spec)}", "", "**Why:**"]
        out += [f"- {w}" for w in reason_words(item.get("reason"), details, now)]
        out += ["", "**What each answer does:**"]
        effects = answer_effects(details, sid, this_run=paused_here)
        out += [f"- **{name}** — {effects[name]}" for name in ("accept", "rerun", "abort")]
        out += ["", "**How to answer:**"]
        suspended = paused_here and pause is not None and bool(pause.data.get("suspended"))
        if suspended and pause is not None:
            wait = timedelta(seconds=float(pause.data.get("timeout_seconds", 0)))
            if pause.at + wait < now:  # Prefect failed the suspended run: nobody can resume it
                paused_here = suspended = False
        if paused_here and pause is not None and suspended:
            until = pause.at + timedelta(seconds=float(pause.data.get("timeout_seconds", 0)))
            run_link = link("its flow run", flow_run_url(ui_url, pause.data.get("flow_run_id")))
            out.append(
                f"- In the Prefect UI: a deployment's run is suspended for this answer until "
                f"{when(until, now)} (its worker is free meanwhile): open {run_link} and press "
                "**Resume**; the form asks for the decision (accept / rerun / abort), a receipt "
                "(only for an action whose outcome is unknown), a reason and your name. Any "
                "worker of the pool then picks the run up and it goes on from here."
            )
        elif paused_here and pause is not None:
            until = pause.at + timedelta(seconds=float(pause.data.get("timeout_seconds", 0)))
            run_link = link("its flow run", flow_run_url(ui_url, pause.data.get("flow_run_id")))
            out.append(
                f"- In the Prefect UI: this run is paused and waits until {when(until, now)}:"
                f" open {run_link} and press **Resume**; the form asks for the decision (accept /"
                " rerun / abort), a receipt (only for an action whose outcome is unknown), a "
                "reason and your name. Without an answer by then the run stops for review."
            )
        else:
            out.append(
                "- In the Prefect UI: no run waits for this answer now. A run started with "
                "`review_wait_seconds` (or `$WAYMARK_REVIEW_WAIT_SECONDS`) pauses here and shows "
                "the form on its flow run page (**Resume**)."
            )
        cmds = review_commands(
            plan.source,
            sid,
            workdir=workdir_flag,
            ledger=ledger_flag,
            open_action=bool(spec.open_actions) or "intent_run" in details,
        )
        after = (
            "it resumes the suspended run with the answer; "
            if suspended
            else "this paused run does not see it; "
            if paused_here
            else ""
        )
        out.append(
            f"- With the CLI ({after}the next `waymark run` follows it; it runs nothing itself):"
        )
        out += ["", code_block("\n".join(f"# {name}\n{cmd}" for name, cmd in cmds), "sh")]
    return out


def _cli_flags(plan: PlanSpec, copy: PlanCopy) -> tuple[str | None, str | None]:
    """``--workdir`` and ``--ledger`` of the CLI commands, when they are not the defaults."""
    wd = copy.workdir
    base = plan.base_dir
    workdir_flag = wd if base is None or str(base.resolve()) != wd else None
    default = normal_ledger_url(default_ledger_url(Path(wd)))
    ledger_flag = None if copy.ledger == default else copy.ledger
    if ledger_flag and "***" in ledger_flag:  # masked: the reader must put the password in
        ledger_flag = "LEDGER_URL"
    return workdir_flag, ledger_flag
