"""`waymark skip`: a step left out on purpose, with a reason.

A real plan: a failing step is skipped after its run failed and an action step is skipped before
any run; the next real flow run goes past both (their dependent gets None for each), no guard
stops a skipped step for review (its definition changed, its action has no receipt), and every
view says "skipped" with the reason. Refusals record nothing."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.events import EVENT_PAYLOADS
from prefect_waymark.ledger.progress_view import build_view
from prefect_waymark.markers import marker_history
from prefect_waymark.markers.plan_copy import PlanCopy
from prefect_waymark.markers.plan_page.render import steps_section
from prefect_waymark.markers.run_marker_page import render_run_marker
from prefect_waymark.plan.loader import load_plan
from tests._support.helpers import run_cli
from tests._support.inprocess import run_inprocess
from tests._support.resume_helpers import runs_of

from ._plans import events, ledger_of, skip_plan, start


def _started(url: str, step: str) -> int:
    return sum(1 for e in events(url, "skips") if e.kind == "step_started" and e.step_id == step)


def test_a_run_goes_past_skipped_steps_and_every_view_says_so(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = skip_plan(tmp_path)
    p, url = str(plan), ledger_of(tmp_path)
    before = run_cli("skip", p, "notify", "--reason", "mail goes out by hand this quarter")
    assert before.returncode == 0, before.stdout + before.stderr
    assert "the steps after it go on: report" in before.stdout

    first = run_inprocess(plan)
    assert first.result == "failed" and first.failed_steps == ["check"]
    assert first.executed_steps == ["collect"]

    skipped = run_cli("skip", p, "check", "--reason", "checked by hand", "--by", "ann")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    # The skipped step's definition changes afterwards: no "definition changed" review.
    skip_plan(tmp_path, flaky_run="exit 2")

    second = run_inprocess(plan)
    assert second.result == "completed", second
    assert second.executed_steps == ["report"] and second.needs_review == []
    assert json.loads((tmp_path / "report.json").read_text()) == {"check": None, "notify": None}
    assert [runs_of(tmp_path / f"{s}.count") for s in ("collect", "check", "notify")] == [1, 1, 0]
    assert (_started(url, "check"), _started(url, "notify")) == (1, 0)

    skips = [e for e in events(url, "skips") if e.kind == EventKind.step_skipped]
    assert [(e.step_id, e.data) for e in skips] == [
        ("notify", {"reason": "mail goes out by hand this quarter", "by": skips[0].data["by"]}),
        ("check", {"reason": "checked by hand", "by": "ann"}),
    ]
    payload = EVENT_PAYLOADS[EventKind.step_skipped]
    assert all(set(e.data) == payload.__required_keys__ for e in skips)

    status = run_cli("status", p, "--json")
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["complete"] is True
    assert {s["id"]: (s["status"], s["skipped"]) for s in doc["steps"]} == {
        "collect": ("completed", None),
        "check": ("completed", "checked by hand"),
        "notify": ("completed", "mail goes out by hand this quarter"),
        "report": ("completed", None),
    }
    table = run_cli("status", p)
    assert "skipped: checked by hand" in table.stdout, table.stdout
    state_md = (tmp_path / "STATE.md").read_text()
    assert "- check (skipped: checked by hand)" in state_md and "- collect\n" in state_md
    tasks_md = (tmp_path / "TASKS.md").read_text()
    assert "- [s] `check` — **skipped** (checked by hand)" in tasks_md
    assert "- [x] `report` — **completed**" in tasks_md

    spec = load_plan(plan)
    with open_ledger(url) as led:
        states = led.step_states("skips")
        marker = marker_history(led, "skips")[-1]
    view = build_view(spec, states)
    now = datetime.now(timezone.utc)
    page = "\n".join(steps_section(view, states, now))
    assert "skipped: checked by hand" in page and "skipped: mail goes out" in page
    copy = PlanCopy("skips", "c0ffee00", str(tmp_path), url)
    run_page = render_run_marker(marker, view, states, copy=copy, now=now)
    assert "Left out on purpose (`waymark skip`):" in run_page
    assert "- `check` — checked by hand" in run_page
    assert "Skipped as completed by earlier runs: `collect`." in run_page


def test_skip_refuses_what_it_cannot_skip_and_records_nothing(tmp_path: Path) -> None:
    plan = skip_plan(tmp_path)
    p, url = str(plan), ledger_of(tmp_path)
    blank = run_cli("skip", p, "check", "--reason", "  ")
    assert blank.returncode == 2 and "--reason" in blank.stderr
    unknown = run_cli("skip", p, "nope", "--reason", "x")
    assert unknown.returncode == 2 and "unknown step 'nope'" in unknown.stderr
    assert not (tmp_path / ".waymark").exists()  # bad input created no ledger

    start(url, "skips", "collect")
    with open_ledger(url) as led:
        led.record("skips", EventKind.step_completed, step_id="collect", branch="main",
                   run_id="run-1", def_hash="h", outputs={})  # fmt: skip
        led.record("skips", EventKind.step_needs_review, step_id="notify",
                   reason="look at the mail first", details={})  # fmt: skip
        led.record("skips", EventKind.action_intent, step_id="report", key="skips/report/x",
                   action="x", by="run-1")  # fmt: skip
    start(url, "skips", "check")
    count = len(events(url, "skips"))
    cases = {
        "collect": "is completed; there is nothing to skip",
        "check": "is in progress (run run-1",
        "notify": "`waymark review " + p + " --step notify --accept|--rerun|--abort`",
        "report": "`waymark receipt " + p + " report --applied|--not-applied`",
    }
    for step, words in cases.items():
        proc = run_cli("skip", p, step, "--reason", "not needed")
        assert proc.returncode == 2, (step, proc.stdout, proc.stderr)
        assert words in proc.stderr and "Traceback" not in proc.stderr, (step, proc.stderr)
    assert len(events(url, "skips")) == count
