"""A ``run_plan`` flow run's name, tags and final state say which plan it ran and where that plan
stands: Stopped, NeedsReview, Aborted, Failed and Completed, each with the plan's line as its
message, as the Prefect server records them (real flow runs against the session's server)."""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import UUID

from tests._support.helpers import run_cli, write_plan


def _recorded(flow_run_id: str) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(flow_run_id))


def _check(state: Any, kind: str, name: str, *parts: str) -> Any:
    """The state returned and the one the server holds agree; its message names ``parts``."""
    assert (state.type.value, state.name) == (kind, name), state
    for part in parts:
        assert part in (state.message or ""), (part, state.message)
    run = _recorded(str(state.state_details.flow_run_id))
    assert (run.state.type.value, run.state.name, run.state.message) == (
        kind,
        name,
        state.message,
    )
    assert re.fullmatch(r"states · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d · tester", run.name), run.name
    assert {"waymark", "plan:states"} <= set(run.tags), run.tags
    return run


def test_each_outcome_ends_in_its_own_state(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import PlanRunFailed, PlanRunStopped, run_plan
    from prefect_waymark.run.summary import RunSummary, summary_from_state

    (tmp_path / "terms.md").write_text("v1")
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "states",
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [
                {"id": "a", "run": "echo a >> a.count"},
                {"id": "b", "depends_on": ["a"], "reads": ["terms"], "run": "echo b >> b.count"},
                {"id": "c", "depends_on": ["b"], "run": "test -f go || exit 3"},
            ],
        },
    )
    args: dict[str, Any] = {"plan": str(plan), "executor": "tester"}

    # Stopped by its budget: neither failed nor done (grey in the runs list).
    state = run_plan(**args, max_steps=1, return_state=True)
    _check(state, "CANCELLED", "Stopped", "stopped after 1 step", "1/3 done", "next: b")
    err = state.result(raise_on_failure=False)  # state.result() raises it: it holds the summary
    assert isinstance(err, PlanRunStopped) and err.summary.result == "stopped"
    found = summary_from_state(state)  # what `waymark run` reads: exit code 3
    assert isinstance(found, RunSummary) and found.exit_code == 3

    (tmp_path / "terms.md").write_text("v2")  # a ref changed: b stops for review
    # Called as a function — here a copy made by with_options, which keeps run_plan's class
    # (PlanFlow): still the summary dict (the automation test below calls run_plan itself).
    out = run_plan.with_options(log_prints=True)(**args)
    assert out["result"] == "needs_review" and out["executed_steps"] == []
    run = _recorded(out["flow_run_id"])  # a person must act: never COMPLETED
    assert (run.state.type.value, run.state.name) == ("FAILED", "NeedsReview")
    assert "needs review at b" in run.state.message and "1/3 done" in run.state.message

    assert run_cli("review", str(plan), "--abort", "--reason", "called off").returncode == 0
    state = run_plan(**args, return_state=True)
    _check(state, "CANCELLED", "Aborted", "aborted", "1/3 done")
    found = summary_from_state(state)  # the summary (and exit code 4) as before
    assert isinstance(found, RunSummary) and found.result == "needs_review"
    assert found.exit_code == 4

    assert run_cli("review", str(plan), "--accept").returncode == 0  # lifts the abort
    state = run_plan(**args, return_state=True)
    _check(state, "FAILED", "Failed", "failed at c", "2/3 done", "next: c")
    err = state.result(raise_on_failure=False)
    assert isinstance(err, PlanRunFailed) and err.summary.failed_steps == ["c"]
    found = summary_from_state(state)  # what `waymark run` reads: exit code 1
    assert isinstance(found, RunSummary) and found.exit_code == 1

    (tmp_path / "go").write_text("")
    state = run_plan(**args, return_state=True)
    _check(state, "COMPLETED", "Completed", "3/3 done")
    assert state.result()["executed_steps"] == ["c"]
    assert [(tmp_path / f"{s}.count").read_text() for s in "ab"] == ["a\n", "b\n"]


class _Receiver:
    """A webhook receiver on 127.0.0.1: the bodies it was sent, in order."""

    def __init__(self) -> None:
        self.bodies: list[str] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received.append(self.rfile.read(length).decode())
                self.send_response(200)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_an_automation_on_the_flow_run_state_alerts_on_a_review_stop(
    prefect_server: str, tmp_path: Path
) -> None:
    """The automation in docs/guides/prefect-ui.md: the state names of one plan's runs (by
    their run name)."""
    from prefect.automations import Automation
    from prefect.blocks.webhook import Webhook
    from prefect.events.actions import CallWebhook
    from prefect.events.schemas.automations import EventTrigger, Posture

    from prefect_waymark.flows import run_plan

    receiver = _Receiver()
    hook = Webhook(url=receiver.url, method="POST")
    hook.save("waymark-test-alerts", overwrite=True)
    automation = Automation(
        name="waymark: a plan waits for a person",
        trigger=EventTrigger(
            expect={"prefect.flow-run.NeedsReview", "prefect.flow-run.Aborted"},
            # The run's name is current in its state events; its tags, set when the run starts
            # (not when a deployment creates it), are not among their related resources.
            match={
                "prefect.resource.id": "prefect.flow-run.*",
                "prefect.resource.name": "alerting · *",
            },
            match_related={
                "prefect.resource.role": "flow",
                "prefect.resource.name": "waymark-run-plan",
            },
            posture=Posture.Reactive,
            threshold=1,
        ),
        actions=[
            CallWebhook(
                block_document_id=hook._block_document_id,
                payload="{{ flow_run.name }}: {{ flow_run.state.name }}: "
                "{{ flow_run.state.message }}",
            )
        ],
    ).create()
    try:
        (tmp_path / "terms.md").write_text("v1")
        plan = write_plan(
            tmp_path,
            {
                "plan_id": "alerting",
                "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
                "steps": [
                    {"id": "a", "run": "true"},
                    {"id": "b", "depends_on": ["a"], "reads": ["terms"], "run": "true"},
                ],
            },
        )
        assert run_plan(plan=str(plan), max_steps=1)["result"] == "stopped"  # no alert
        (tmp_path / "terms.md").write_text("v2")
        assert run_plan(plan=str(plan), executor="tester")["result"] == "needs_review"
        deadline = time.monotonic() + 120  # the server's trigger service works asynchronously
        while not receiver.bodies and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)  # a second (wrong) alert would arrive by now
    finally:
        automation.delete()
        receiver.server.shutdown()
    assert len(receiver.bodies) == 1, receiver.bodies
    assert re.match(r"alerting · [-\d]+ [:\d]+ · tester: ", receiver.bodies[0]), receiver.bodies
    assert ": NeedsReview: needs review at b · 1/2 done" in receiver.bodies[0]
