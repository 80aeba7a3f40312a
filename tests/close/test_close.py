"""`waymark close`: close a plan for good, or say everything that is unmet.

Refusals list every unmet thing with the command that resolves it and record nothing; a close
with the evidence (given, or recorded by the completed steps that serve each item) records
``plan_closed`` and archives the views; then runs — the CLI's and the flow's own — refuse the plan
with exit 2 and record nothing, and check-ins say it is closed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.events import EVENT_PAYLOADS
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess
from tests._support.resume_helpers import runs_of

from ._plans import close_plan_doc, events, ledger_of, start


def _json(proc: Any) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(proc.stdout + proc.stderr) from exc
    return doc


def _fits_payload(event: Any) -> bool:
    payload = EVENT_PAYLOADS[event.kind]
    keys = set(event.data)
    return (
        payload.__required_keys__ <= keys <= payload.__required_keys__ | payload.__optional_keys__
    )


def test_close_refuses_listing_every_unmet_thing_then_force_closes(
    tmp_path: Path, ledger_url: str
) -> None:
    doc = close_plan_doc()
    doc["steps"] += [{"id": "check", "run": "true"}, {"id": "pay", "run": "true", "action": "pay"}]
    plan = write_plan(tmp_path, doc)
    p, led_opt = str(plan), ("--ledger", ledger_url)
    start(ledger_url, "closing", "draft")
    with open_ledger(ledger_url) as led:
        led.record("closing", EventKind.step_completed, step_id="draft", branch="main",
                   run_id="run-1", def_hash="h", outputs={"draft.md": "ab" * 32})  # fmt: skip
        led.record("closing", EventKind.step_needs_review, step_id="check",
                   reason="the figures moved", details={})  # fmt: skip
        led.record("closing", EventKind.action_intent, step_id="pay", key="closing/pay/pay",
                   action="pay", by="run-1")  # fmt: skip
    count = len(events(ledger_url, "closing"))

    refused = run_cli("close", p, *led_opt, "--json")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    found = _json(refused)
    assert found["closed"] is False and found["record"] is None
    unmet = {u["what"]: u["fix"] for u in found["unmet"]}
    assert unmet == {
        "step check needs review (the figures moved)":
            f"answer it: `waymark review {p} --step check --accept|--rerun|--abort`",
        "step publish is pending":
            f'do it (`waymark run {p}`) or leave it out: `waymark skip {p} publish --reason "..."`',
        "step pay is pending":
            f'do it (`waymark run {p}`) or leave it out: `waymark skip {p} pay --reason "..."`',
        "step pay: action 'pay' has an intent without a receipt (key closing/pay/pay)":
            f"record what happened: `waymark receipt {p} pay --applied|--not-applied`",
        "acceptance item A2 (It is published.) has no evidence; steps that serve it: publish "
        "(pending)": f'give it: `waymark close {p} --evidence "A2: ..."`',
        "exit condition E1 (The report is announced.) has no evidence":
            f'give it: `waymark close {p} --evidence "E1: ..."`',
    }  # fmt: skip
    assert found["acceptance"] == {"A1": f"step draft completed with draft.md {'ab' * 6}"}
    text = run_cli("close", p, *led_opt, "--evidence", "E1: announced")
    assert text.returncode == 3 and "closing: not closed: 5 thing(s) unmet:" in text.stdout
    assert "--force --reason" in text.stdout

    bad = {
        ("--evidence", "E7: x"): "the goal contract has no item with that id",
        ("--evidence", "e1: lower case"): "the goal contract has no item with that id",
        ("--evidence", "A1"): 'expected "ID: text"',
        ("--evidence", "A1:  "): "say what shows it is met",
        ("--force",): "--force needs --reason",
    }
    for args, words in bad.items():
        proc = run_cli("close", p, *led_opt, *args)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)
    assert len(events(ledger_url, "closing")) == count  # nothing recorded by any of them

    forced = run_cli("close", p, *led_opt, "--force", "--reason", "the quarter ended",
                     "--by", "ann", "--evidence", "E1: announced")  # fmt: skip
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert (
        "was closed (forced) on" in forced.stdout and "by ann: the quarter ended" in forced.stdout
    )
    closes = [e for e in events(ledger_url, "closing") if e.kind == EventKind.plan_closed]
    assert len(closes) == 1 and _fits_payload(closes[0])
    data = closes[0].data
    assert (data["forced"], data["by"], data["reason"]) == (True, "ann", "the quarter ended")
    assert data["evidence"] == {"E1": "announced"} and list(data["acceptance"]) == ["A1"]
    assert len(data["unmet"]) == 5 and data["contract"]["goal_id"] == "q4"

    count = len(events(ledger_url, "closing"))
    again = run_cli("close", p, *led_opt, "--force", "--reason", "twice")
    assert again.returncode == 2 and "already closed" in again.stderr, again.stderr
    for args in (("skip", p, "publish", "--reason", "x"), ("rerun", p, "draft"),
                 ("start", p, "publish", "--executor", "bob")):  # fmt: skip
        proc = run_cli(*args, *led_opt)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "'closing' was closed (forced) on" in proc.stderr and "Traceback" not in proc.stderr
    assert len(events(ledger_url, "closing")) == count

    status = run_cli("status", p, *led_opt, "--json")
    assert status.returncode == 0, status.stderr
    st = _json(status)
    assert st["closed"]["by"] == "ann" and st["closed"]["forced"] is True
    assert st["next_step"] is None and st["complete"] is False
    assert {s["id"]: s["status"] for s in st["steps"]}["check"] == "needs_review"


def test_a_closed_plan_is_archived_and_no_run_or_check_in_takes_it(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, close_plan_doc())
    p, url = str(plan), ledger_of(tmp_path)
    assert run_inprocess(plan).result == "completed"

    missing = run_cli("close", p, "--json")
    assert missing.returncode == 3, missing.stdout + missing.stderr
    assert [u["what"] for u in _json(missing)["unmet"]] == [
        "exit condition E1 (The report is announced.) has no evidence"
    ]
    closed = run_cli("close", p, "--evidence", "E1: announced on the intranet", "--reason",
                     "Q4 is out", "--by", "ann")  # fmt: skip
    assert closed.returncode == 0, closed.stdout + closed.stderr
    assert "by ann: Q4 is out" in closed.stdout
    [ev] = [e for e in events(url, "closing") if e.kind == EventKind.plan_closed]
    assert _fits_payload(ev) and "unmet" not in ev.data
    assert (ev.data["forced"], ev.data["evidence"]) == (False, {"E1": "announced on the intranet"})
    assert ev.data["acceptance"]["A2"] == "step publish completed"
    assert ev.data["acceptance"]["A1"].startswith("step draft completed with draft.md ")

    # The active view is cleared: the views say closed, nothing is next; the history stays.
    state_md = (tmp_path / "STATE.md").read_text()
    assert "- phase: closed on " in state_md and "by ann: Q4 is out" in state_md
    assert "- next step: none — the plan is closed" in state_md
    assert "- evidence E1: announced on the intranet" in state_md
    assert "The plan is closed on " in (tmp_path / "TASKS.md").read_text()
    rebuilt = run_cli("marker", p, "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    assert marker["closed"]["by"] == "ann" and marker["next_start"]["step"] is None
    assert len(marker["execution_history"]) == 1  # the run's record is kept
    table = run_cli("status", p)
    assert table.returncode == 0 and "'closing' was closed on" in table.stdout, table.stdout
    assert "next step: none — the plan is closed" in table.stdout

    count = len(events(url, "closing"))
    run = run_cli("run", p)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "was closed on" in run.stderr and "by ann: Q4 is out" in run.stderr
    assert f"`waymark status {p}`" in run.stderr and "Traceback" not in run.stderr
    from prefect_waymark.flows import run_plan

    state = run_plan(plan=p, return_state=True)  # the flow itself (a deployment's run) refuses
    assert state.is_failed() and "was closed on" in str(state.message)
    assert len(events(url, "closing")) == count and runs_of(tmp_path / "publish.count") == 1

    nxt = run_cli("next", p, "--executor", "bob", "--json")
    assert nxt.returncode == 2, nxt.stdout + nxt.stderr
    doc = _json(nxt)
    assert doc["step"] is None and doc["closed"]["by"] == "ann" and "was closed" in doc["reason"]
    assert len(events(url, "closing")) == count


def test_close_reads_the_contract_from_its_block_or_lists_it_unreadable(
    prefect_server: str, tmp_path: Path
) -> None:
    import uuid

    from prefect_waymark.blocks.goal_contract import GoalContractBlock

    name = f"gc-close-{uuid.uuid4().hex[:8]}"
    GoalContractBlock(
        goal_id="q4-block",
        objective="Publish the Q4 report",
        acceptance=["The draft has every figure.", "It is published."],
        exit_conditions=["The report is announced.", "The budget is closed."],
    ).save(name)
    doc = close_plan_doc()
    doc["contract"] = {"block": name}
    plan = write_plan(tmp_path / "kept", doc)
    p, url = str(plan), ledger_of(tmp_path / "kept")
    for step in ("draft", "publish"):
        start(url, "closing", step)
        with open_ledger(url) as led:
            led.record("closing", EventKind.step_completed, step_id=step, branch="main",
                       run_id="run-1", def_hash="h", outputs={})  # fmt: skip

    refused = run_cli("close", p, "--json", "--evidence", "E1: announced")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert [u["what"] for u in _json(refused)["unmet"]] == [
        "exit condition E2 (The budget is closed.) has no evidence"  # the block's, not the file's
    ]
    closed = run_cli("close", p, "--evidence", "E1: announced", "--evidence", "E2: booked")
    assert closed.returncode == 0, closed.stdout + closed.stderr
    [ev] = [e for e in events(url, "closing") if e.kind == EventKind.plan_closed]
    assert ev.data["contract"]["source"] == f"block:{name}"
    assert ev.data["contract"]["goal_id"] == "q4-block"
    assert ev.data["evidence"] == {"E1": "announced", "E2": "booked"}

    doc["contract"] = {"block": f"no-such-{uuid.uuid4().hex[:8]}"}
    lost = write_plan(tmp_path / "lost", doc)
    gone = run_cli("close", str(lost), "--json")
    assert gone.returncode == 3, gone.stdout + gone.stderr
    first = _json(gone)["unmet"][0]
    assert (
        "the goal contract (block 'no-such-" in first["what"] and "cannot be read" in first["what"]
    )
    assert not (tmp_path / "lost" / ".waymark").exists()  # a refusal creates no ledger
