"""The plan page, the run marker's text and the review words, rendered from ledger states and
events without Prefect: pure functions, every section checked on a plan in each state."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from prefect_waymark.ledger.events import EventKind, ProgressEvent
from prefect_waymark.ledger.progress_view import build_view
from prefect_waymark.ledger.step_state import StepState
from prefect_waymark.markers.plan_copy import PlanCopy
from prefect_waymark.markers.plan_page.render import PageInput, plan_line, render_plan_page
from prefect_waymark.markers.run_marker_page import render_run_marker
from prefect_waymark.models import GoalContract
from prefect_waymark.plan.loader import validate_plan_data
from prefect_waymark.review.reasons import (
    answer_effects,
    form_description,
    reason_words,
    review_commands,
)
from prefect_waymark.text.human_time import ago, local_stamp, when
from prefect_waymark.text.markdown import code, code_block, table

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
H3 = (NOW - timedelta(hours=3)).isoformat()
COPY = PlanCopy("weekly", "3f9a2c1d", "/srv/weekly", "sqlite:////srv/weekly/.waymark/ledger.db")


def _copy(workdir: Path) -> PlanCopy:
    """The copy of a plan run in its own folder with the default ledger."""
    from prefect_waymark.ledger import default_ledger_url
    from prefect_waymark.markers.plan_copy import normal_ledger_url

    ledger = normal_ledger_url(default_ledger_url(workdir))
    return PlanCopy("weekly", "3f9a2c1d", str(workdir.resolve()), ledger)


def _plan(tmp: Path) -> Any:
    doc = {
        "plan_id": "weekly",
        "title": "Weekly report",
        "steps": [
            {"id": "fetch", "title": "Fetch", "owner": "ana", "milestone": "m1", "run": "true"},
            {"id": "check", "depends_on": ["fetch"], "milestone": "m1", "run": "false"},
            {"id": "send", "depends_on": ["check"], "milestone": "m2", "run": "true"},
            {"id": "pay", "branch": "money", "action": "pay-invoice", "run": "true"},
            {"id": "terms", "branch": "legal", "reads": ["terms"], "run": "true"},
        ],
        "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
    }
    (tmp / "plan.yaml").write_text("")
    return validate_plan_data(doc, source=str(tmp / "plan.yaml"), base_dir=tmp)


def _states() -> dict[str, StepState]:
    return {
        "fetch": StepState(
            step_id="fetch",
            status="completed",
            attempts=1,
            last_at=H3,
            completed_at=H3,
            outputs={"data.csv": "ab" * 32},
        ),
        "check": StepState(
            step_id="check",
            status="failed",
            attempts=2,
            last_at=H3,
            error="ShellStepError: step 'check': command exited with code 1: Q4 growth is stale",
            output_tail="checking\nrow 7 ok\n[stderr]\nQ4 growth is stale",
        ),
        "pay": StepState(
            step_id="pay",
            status="completed",
            last_at=H3,
            receipts=[
                {
                    "key": "k-1",
                    "action": "pay-invoice",
                    "outcome": "applied",
                    "external_id": "INV|9",
                    "at": H3,
                    "by": "bank",
                }
            ],
        ),
        "terms": StepState(
            step_id="terms",
            status="needs_review",
            last_at=H3,
            review_reason="state ref 'terms' (file terms.md) changed: accepted 'sha256:aaa…'",
            review_data={
                "ref": "terms",
                "point": "run_start",
                "conflicts": [
                    {
                        "ref": "terms",
                        "kind": "file",
                        "problem": "changed",
                        "at": H3,
                        "accepted": "sha256:" + "a" * 64,
                        "current": "sha256:" + "b" * 64,
                        "message": "changed",
                    }
                ],
            },
        ),
    }


def _events(paused: bool) -> list[ProgressEvent]:
    def ev(kind: EventKind, run: str, at: datetime, **data: Any) -> ProgressEvent:
        return ProgressEvent(plan_id="weekly", kind=kind, run_id=run, at=at, data=data)

    t0 = NOW - timedelta(hours=3)
    out = [
        ev(EventKind.run_started, "r1", t0, executor="agent-1", flow_run_id="fr-1"),
        ev(
            EventKind.run_finished,
            "r1",
            t0,
            result="failed",
            executed_steps=["fetch", "pay"],
            next_start="check",
            next_start_reason="a step failed; the next run retries it",
            finished_at=t0.isoformat(),
        ),
        ev(
            EventKind.run_started,
            "r2",
            NOW - timedelta(minutes=2),
            executor="agent-2",
            flow_run_id="fr-2",
        ),
    ]
    if paused:
        pause = ev(
            EventKind.review_waiting,
            "r2",
            NOW - timedelta(minutes=1),
            flow_run_id="fr-2",
            timeout_seconds=3600,
        )
        out.append(pause.model_copy(update={"step_id": "terms"}))
    return out


def test_the_plan_page_says_where_the_plan_stands(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    contract = GoalContract(goal_id="g", objective="Send the weekly report", acceptance=["sent"])
    page = render_plan_page(
        PageInput(
            plan=plan,
            states=_states(),
            events=_events(paused=True),
            copy=_copy(tmp_path),
            now=NOW,
            contract=contract,
            ui_url="http://ui:4200",
            live_run="r2",
        )
    )
    assert page.startswith("# Weekly report\n")
    assert "```json" not in page
    assert "**Where it stands:** paused for review at terms · 2/5 done · next: terms" in page
    assert "**Next start:** `terms` — it waits for your answer (below)" in page
    assert (
        "**This run:** paused for review since 2 min ago, by agent-2 — "
        "[flow run](http://ui:4200/runs/flow-run/fr-2)" in page
    )
    review = page[page.index("## Needs your answer (1)") : page.index("## Failed")]
    assert (
        "state ref `terms` was version `sha256:aaaaaaaaaaaa…` when accepted and is "
        "`sha256:bbbbbbbbbbbb…` now (read 3 h ago) — found at run start" in review
    )
    assert "this run goes on with step `terms`" in review  # accept, for the paused run
    assert re.search(
        r"this run is paused and waits until \w{3} \d\d \w{3} \d{4}, [:\d]+ .+ \(in 59 min\):",
        review,
    )
    assert "[its flow run](http://ui:4200/runs/flow-run/fr-2)" in review
    assert f"waymark review {tmp_path / 'plan.yaml'} --step terms --accept" in review
    assert "--workdir" not in review and "--ledger" not in review  # the defaults need neither
    failed = page[page.index("## Failed (1)") : page.index("## Blocked")]
    assert "2 attempts · failed 3 h ago" in failed
    assert (
        "> ShellStepError: step 'check': command exited with code 1: Q4 growth is stale" in failed
    )
    assert "row 7 ok\n[stderr]\nQ4 growth is stale\n```" in failed
    assert "- `send` — waits for `check` (failed)" in page
    assert "**Send the weekly report**" in page and "- A1: sent" in page
    assert "| m1 | 1/2 |  | 1 |  |  |  |" in page  # per milestone
    assert "| `money` | 1/1 |" in page  # per branch
    assert "| `pay` | `pay-invoice` | `k-1` | applied | INV\\|9 | 3 h ago | bank |" in page
    assert (
        "| 3 h ago | failed | agent-1 | fetch, pay | check | "
        "[open](http://ui:4200/runs/flow-run/fr-1) |" in page
    )
    assert "| 2 min ago | no end recorded | agent-2 |" in page


def test_an_unanswered_stop_without_a_pause_points_at_the_cli(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    copy = PlanCopy("weekly", "3f9a2c1d", "/elsewhere", "postgresql+psycopg://u:***@db/led")
    page = render_plan_page(
        PageInput(plan=plan, states=_states(), events=_events(paused=False), copy=copy, now=NOW)
    )
    assert "**Where it stands:** needs review at terms · 2/5 done · next: terms" in page
    assert "no run waits for this answer now" in page
    assert "the next `waymark run` goes on with step `terms`" in page
    assert "--workdir /elsewhere --ledger LEDGER_URL --accept" in page  # masked: a placeholder
    assert "[flow run]" not in page and "fr-1" not in page  # no UI address known: no links


def test_the_run_marker_says_what_the_run_did(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    states = _states()
    view = build_view(plan, states)
    marker = {
        "plan_id": "weekly",
        "run_id": "r1",
        "result": "failed",
        "executor": "agent-1",
        "executed_at": NOW.isoformat(),
        "started_at": (NOW - timedelta(minutes=3)).isoformat(),
        "flow_run_id": "fr-1",
        "started_from": "fetch",
        "executed_steps": ["fetch", "pay"],
        "skipped_count": 0,
        "failed_steps": ["check"],
        "outputs": [{"step": "fetch", "path": "data.csv", "sha256": "ab" * 32}],
        "receipts": [{"step": "pay", "key": "k-1", "action": "pay-invoice", "at": H3}],
        "state_refs": [{"name": "terms", "version": "sha256:bbb"}],
        "contract": None,
        "next_start": {"step": "check", "why": "a step failed; the next run retries it"},
    }
    text = render_run_marker(marker, view, states, copy=COPY, now=NOW, ui_url="http://ui")
    assert text.startswith("# Run of Weekly report — failed\n")
    assert "```json" not in text
    assert "took 3 min" in text and "[flow run](http://ui/runs/flow-run/fr-1)" in text
    assert "[the plan page](http://ui/artifacts/key/waymark-weekly-3f9a2c1d-plan-page)" in text
    assert "| 2 | 1 | 0 | 2 | 1 | 1 |" in text
    assert "> ShellStepError: step 'check': command exited with code 1: Q4 growth is stale" in text
    assert "- `send` — waits for `check` (failed)" in text
    assert "- `terms` — waits for an answer: state ref 'terms'" in text
    assert "| `fetch` | Fetch | `data.csv` (abababababab) |" in text
    assert "| `pay` | `pay-invoice` | `k-1` | applied | - | 3 h ago (" in text
    assert "state ref `terms`: version `sha256:bbb`" in text


def test_review_words_for_every_kind_of_stop() -> None:
    edited = {
        "recorded_outputs": {"a.md": "1" * 64},
        "current_outputs": {"a.md": "2" * 64, "b.md": "absent"},
    }
    words = reason_words("output changed", edited, NOW)
    assert words == [
        "output `a.md` changed since the step completed (sha256 `111111111111…` then, "
        "`222222222222…` now); a re-run would overwrite the edit",
        "output `b.md` was deleted since the step completed",
    ]
    assert "keep the edited files" in answer_effects(edited, "s", this_run=True)["accept"]
    assert "definition" in reason_words("x", {"recorded_hash": "a", "current_hash": "b"}, NOW)[0]
    lost = reason_words(
        "persisted result is missing: gone", {"result_key": "k", "needed_by": "n"}, NOW
    )
    assert lost == [
        "the step's persisted result is gone, and step `n` needs it "
        "(persisted result is missing: gone)"
    ]
    unknown = {"key": "k", "action": "pay", "intent_run": "r9", "intent_at": H3}
    assert reason_words("outcome unknown", unknown, NOW) == [
        "action `pay` (key `k`) was started 3 h ago by run r9 and no receipt was recorded: "
        "whether it happened is unknown — check the business system"
    ]
    cmds = dict(review_commands("<plan parameter>", "s", open_action=True))
    assert cmds["accept (it happened)"] == "waymark review PLAN --step s --accept --receipt applied"
    assert cmds["abort"] == "waymark review PLAN --step s --abort"
    contract = {
        "conflicts": [
            {
                "kind": "contract",
                "problem": "superseded",
                "message": "goal contract 'g' v2 is superseded",
            }
        ]
    }
    assert reason_words("x", contract, NOW) == ["goal contract 'g' v2 is superseded"]
    assert reason_words("plain reason", {}, NOW) == ["plain reason"]


def test_the_form_description(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    details = _states()["terms"].review_data
    text = form_description(
        plan,
        "terms",
        "changed",
        details,
        wait_seconds=600,
        now=NOW,
        page_url="http://ui/artifacts/key/k",
    )
    assert text.startswith("**Plan `weekly` stopped at step `terms` for review.**")
    assert (
        "- **accept** — take the current versions shown above as the accepted ones; this "
        "run goes on with step `terms`" in text
    )
    assert "- **abort** — stop the plan: this run runs nothing more" in text
    assert "leave it empty" in text  # no action whose outcome is unknown
    assert re.search(r"This run waits until \w{3} \d\d \w{3} \d{4}, [:\d]+ .+ \(in 10 min\);", text)
    assert "[the plan page](http://ui/artifacts/key/k)" in text


def test_times_lines_and_markdown() -> None:
    assert ago(NOW - timedelta(seconds=10), NOW) == "just now"
    assert ago(NOW - timedelta(minutes=12), NOW) == "12 min ago"
    assert ago((NOW - timedelta(hours=3)).isoformat(), NOW) == "3 h ago"
    assert ago(NOW - timedelta(days=2), NOW) == "2 days ago"
    assert ago(NOW + timedelta(minutes=5), NOW) == "in 5 min"
    assert ago(None, NOW) == "never" and when("not a time", NOW) == "never"
    local = NOW.astimezone()
    assert local_stamp(NOW) == f"{local:%a %d %b %Y, %H:%M} {local.tzname()}"
    assert when(NOW, NOW) == f"just now ({local_stamp(NOW)})"
    assert table(["a"], [["x|y\nz"]]) == ["| a |", "|---|", "| x\\|y z |"]
    assert code("a`b") == "``a`b``" and code("`x") == "`` `x ``"
    assert code_block("```\nx") == "````text\n```\nx\n````"


def test_the_one_line_summary(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    view = build_view(plan, _states())
    assert plan_line(view) == "needs review at terms · 2/5 done · next: terms"
    assert plan_line(view, paused_at="terms").startswith("paused for review at terms")
    assert plan_line(view, aborted=True).startswith("aborted · 2/5 done")
    states = {k: v for k, v in _states().items() if k != "terms"}
    # The next run retries the failed step: the line names it, not a pending step before it.
    assert plan_line(build_view(plan, states)) == "failed at check · 2/5 done · next: check"
    done = {s.id: StepState(step_id=s.id, status="completed") for s in plan.steps}
    assert plan_line(build_view(plan, done)) == "complete · 5/5 done"
    some = {"fetch": done["fetch"]}
    assert plan_line(build_view(plan, some), result="stopped", executed=1) == (
        "stopped after 1 step · 1/5 done · next: pay"
    )


def test_marker_metadata_fits_prefect_and_names_the_copy() -> None:
    import json

    from prefect_waymark.markers.artifacts import marker_metadata

    many = [f"step-{i:03d}" for i in range(200)]
    meta = marker_metadata(
        {"run_id": "r1", "executed_steps": many, "next_start": {"step": "x", "why": "w" * 900}},
        COPY,
    )
    assert all(len(v) <= 500 for v in meta.values())  # Prefect cuts longer values
    kept = json.loads(meta["executed_steps"])
    assert kept == many[: len(kept)] and meta["executed_steps-count"] == "200"
    assert json.loads(meta["next_start"]) == {"step": "x", "why": "w" * 300}
    assert meta["waymark-copy"] == "3f9a2c1d" and meta["workdir"] == "/srv/weekly"
