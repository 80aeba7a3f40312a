"""Every event a real run writes fits its kind's payload (``EVENT_PAYLOADS`` in ledger/events.py).

Two real ``run_plan`` flow runs of a small plan, with a person's decisions in between, write
every common kind: a step that fails once and is retried, an irreversible action with its
receipt, a forbidden action refused before it runs, a review stop, an abort and its lifting, an
accepted review, a rerun, a dead run's step interrupted, re-anchors of a goal contract and a state
ref, markers. Then each event's ``data`` keys must be keys of its kind's TypedDict, and hold every
key it requires.
"""

from __future__ import annotations

from pathlib import Path

from prefect_waymark import Plan
from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.base import this_host
from prefect_waymark.ledger.events import EVENT_PAYLOADS
from prefect_waymark.plan.loader import load_plan
from prefect_waymark.review.decisions import apply_decision
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import flow_outcome

BODIES = """
from pathlib import Path

from prefect_waymark import NeedsReview


def pay(ctx):
    with ctx.action("pay-vendor") as act:
        if act.needed:
            act.record(external_id="tx-1", response=b"ok", result={"id": "tx-1"})
    return {"external_id": act.receipt.external_id}


def check(ctx):
    marker = Path(ctx.workdir) / "checked"
    if not marker.exists():
        marker.write_text("once")
        raise NeedsReview("look at the payment first", details={"tx": "tx-1"})
    return "checked"
"""

# A step that dies on its run's first attempt: `waymark rerun` makes it run (and fail once) again.
FLAKY = "test -f tried.$WAYMARK_RUN_ID || { touch tried.$WAYMARK_RUN_ID; exit 1; }"


def _plan(folder: Path) -> Path:
    (folder / "bodies.py").write_text(BODIES)
    (folder / "terms.md").write_text("v1")
    plan = (
        Plan(
            "payloads",
            contract={
                "goal_id": "pay-the-vendor",
                "objective": "Pay the vendor once",
                "forbidden": ["action:wire-*"],
            },
            state_refs=[{"name": "terms", "kind": "file", "path": "terms.md"}],
        )
        .add_step(id="flaky", run=FLAKY, retries=1, reads=["terms"])
        .add_step(id="pay", call="bodies:pay", depends_on=["flaky"])
        .add_step(id="check", call="bodies:check", depends_on=["pay"])
        .add_step(id="wire", action="wire-money", run="echo never")
    )
    return write_plan(folder, plan)


def test_every_event_of_a_real_run_fits_its_kinds_payload(
    prefect_server: str, tmp_path: Path
) -> None:
    plan_path = _plan(tmp_path)
    spec = load_plan(plan_path)
    url = f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}"

    ended, summary = flow_outcome(plan_path)
    assert ended == "Failed" and summary.failed_steps == ["wire"]
    assert [r["step"] for r in summary.needs_review] == ["check"]
    with open_ledger(url, create=False) as led:
        # A person decides: abort, then accept the reviewed step (which lifts the abort); the
        # step stopped while in_progress, so it runs again.
        apply_decision(led, spec, "abort", step_id=None, by="ana", reason="wait")
        apply_decision(led, spec, "accept", step_id="check", by="ana", reason="go on")
        # A run that died while holding "wire": the next run interrupts its step.
        led.record(
            spec.plan_id,
            EventKind.step_started,
            step_id="wire",
            branch="main",
            run_id="dead-run",
            host=this_host(),
            pid=999_999_999,
            def_hash="h",
            result_key="k",
        )
    # --only: `pay` (its action applied) is kept as it is, not stale (tests/run/test_stale_steps.py)
    proc = run_cli("rerun", str(plan_path), "flaky", "--only", "--reason", "again", "--by", "ana")
    assert proc.returncode == 0, proc.stderr
    ended, summary = flow_outcome(plan_path, publish_artifacts=False)
    assert ended == "Failed" and summary.failed_steps == ["wire"]
    assert "check" in summary.executed_steps and summary.interrupted_steps == ["wire"]

    with open_ledger(url, create=False) as led:
        events = led.events(spec.plan_id)
    seen = {e.kind for e in events}
    assert {
        EventKind.run_started,
        EventKind.run_finished,
        EventKind.marker_written,
        EventKind.step_started,
        EventKind.step_attempt_failed,
        EventKind.step_completed,
        EventKind.step_interrupted,
        EventKind.step_needs_review,
        EventKind.step_rerun_requested,
        EventKind.step_review_accepted,
        EventKind.step_refused,
        EventKind.action_intent,
        EventKind.action_applied,
        EventKind.reanchor,
        EventKind.accepted_versions,
        EventKind.drift,
        EventKind.plan_aborted,
        EventKind.plan_abort_lifted,
    } <= seen
    problems = []
    for ev in events:
        payload = EVENT_PAYLOADS[ev.kind]
        allowed = payload.__required_keys__ | payload.__optional_keys__
        if extra := set(ev.data) - allowed:
            problems.append(f"seq {ev.seq} {ev.kind}: keys not in {payload.__name__}: {extra}")
        if missing := payload.__required_keys__ - set(ev.data):
            problems.append(f"seq {ev.seq} {ev.kind}: {payload.__name__} keys missing: {missing}")
    assert problems == []
