"""The edges of suspending (review/suspend.py) that need no deployment.

- Prefect refuses to suspend a flow run that no deployment created. Here that refusal stands in
  for any failed suspend (an API error, a run that cannot be suspended): the test makes
  ``run_plan`` believe it runs under a deployment, which is the one mock, because a real
  deployment's suspend succeeds (tests/team/test_review_suspend.py). The run then ends stopped
  for review as a plain run would, and the ledger says the suspension did not happen.
- ``waymark review`` on a plan whose flow run is suspended, where no Prefect server is known:
  it records the answer, says to resume the run in the UI, starts no server, and never offers
  that run again once its stop is answered.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prefect_waymark.ledger import open_ledger
from prefect_waymark.ledger.events import EventKind
from prefect_waymark.models import utcnow
from prefect_waymark.review.suspend import SUSPENSION_EVENT_KINDS, open_suspensions, suspend_key
from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain

FAKE_DEPLOYMENT = "7a1d6f43-0c52-4a7e-8f0e-2b9c1d0e5a11"


def test_a_suspend_prefect_refuses_ends_the_run_stopped_for_review(
    prefect_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_waymark.flows import run_plan

    (tmp_path / "terms.md").write_text("v1")
    terms = [{"name": "terms", "kind": "file", "path": "terms.md"}]
    plan = write_plan(
        tmp_path, counting_chain("refused-suspend", "ab", reads=["terms"], state_refs=terms)
    )
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["a"]
    (tmp_path / "terms.md").write_text("v2")
    import importlib

    import prefect_waymark.review.schedules as lifecycle

    # The module, not the flow that prefect_waymark.flows exports under the same name.
    run_plan_module = importlib.import_module("prefect_waymark.flows.run_plan")

    monkeypatch.setattr(lifecycle, "own_deployment_id", lambda: FAKE_DEPLOYMENT)
    monkeypatch.setattr(run_plan_module, "own_deployment_id", lambda: FAKE_DEPLOYMENT)
    out = run_plan(plan=str(plan), review_wait_seconds=60)
    assert out["result"] == "needs_review" and out["executed_steps"] == []
    assert not (tmp_path / "b.count").exists()
    url = f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}"
    with open_ledger(url) as led:
        (waiting,) = led.events("refused-suspend", kinds=[EventKind.review_waiting])
        (closed,) = led.events("refused-suspend", kinds=[EventKind.review_resumed])
        events = led.events("refused-suspend", kinds=list(SUSPENSION_EVENT_KINDS))
        (stop,) = led.events("refused-suspend", kinds=[EventKind.step_needs_review])
    assert waiting.data["suspended"] is True and waiting.data["pause_key"] == suspend_key(stop.seq)
    assert closed.data["error"].startswith("not suspended: "), closed.data
    assert closed.data["flow_run_id"] == waiting.data["flow_run_id"]
    assert open_suspensions(events, now=utcnow()) == []  # nothing left to resume


def _suspended_plan(tmp_path: Path) -> tuple[Path, str]:
    """A plan whose steps b and c stopped for review, b's flow run suspended for its answer
    (the events a deployment's run writes, through the ledger API)."""
    plan = write_plan(tmp_path, counting_chain("cli-suspended", "abc"))
    url = f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}"
    flow_run = "3c9e4a1b-7f20-4d6e-9b8a-5e0f1c2d3a4b"
    with open_ledger(url) as led:
        for sid in ("b", "c"):
            stored = led.record(
                "cli-suspended",
                EventKind.step_needs_review,
                step_id=sid,
                branch="main",
                run_id=flow_run,
                reason="state ref changed",
                details={},
            )
        assert stored.seq is not None
        led.record(
            "cli-suspended",
            EventKind.review_waiting,
            step_id="b",
            run_id=flow_run,
            flow_run_id=flow_run,
            timeout_seconds=3600,
            suspended=True,
            pause_key=suspend_key(stored.seq),
        )
    return plan, flow_run


def test_waymark_review_without_a_known_server_says_how_to_resume_and_starts_none(
    tmp_path: Path,
) -> None:
    plan, flow_run = _suspended_plan(tmp_path)
    home = tmp_path / "prefect-home"  # no profile URL, no local server waymark started
    env = {"PREFECT_API_URL": "", "PREFECT_HOME": str(home)}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}, **env}
    proc = run_cli("review", str(plan), "--step", "c", "--accept", env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert flow_run not in proc.stdout  # c's answer does not close b's suspension
    proc = run_cli("review", str(plan), "--step", "b", "--accept", env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"flow run {flow_run} stays suspended: no Prefect server is known here" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (home / "waymark-server.json").exists()  # no server was started
    # Answered once: a later answer (b stopped again, answered again) does not offer it again.
    url = f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}"
    with open_ledger(url) as led:
        led.record(
            "cli-suspended",
            EventKind.step_needs_review,
            step_id="b",
            branch="main",
            run_id="another-run",
            reason="again",
            details={},
        )
    proc = run_cli("review", str(plan), "--step", "b", "--rerun", env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert flow_run not in proc.stdout
