"""Editing the plan is a change of state: ``waymark diff`` says what changed since the ledger
last saw the plan file and what each change does to progress; a run carries a rename with the
same definition (the step is not run again); ``waymark rename-step`` carries a rename
explicitly; an open intent inherited through a rename is settled under the new id. Real
``waymark run`` processes on the SQLite and the PostgreSQL ledger, side effects counted (files,
and HTTP calls to a real service on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.action_plans import PY, prepare_workdir
from tests._support.helpers import run_cli, write_plan
from tests._support.http_counter import CounterService

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[CounterService]:
    with CounterService() as svc:
        monkeypatch.setenv("WAYMARK_TEST_SERVICE", svc.url)
        monkeypatch.delenv("WAYMARK_TEST_KILL_AT", raising=False)
        yield svc


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _step(sid: str, deps: list[str], cmd: str | None = None) -> dict[str, Any]:
    return {"id": sid, "depends_on": deps, "run": cmd or f"echo x >> {sid}.count"}


def _plan(folder: Path, steps: list[dict[str, Any]], url: str) -> Path:
    return write_plan(folder, {"plan_id": "report", "ledger": url, "steps": steps})


def test_diff_then_run_after_add_remove_rename_change(tmp_path: Path, ledger_url: str) -> None:
    plan = _plan(
        tmp_path,
        [
            _step("draft", []),
            _step("derive", ["draft"]),
            _step("report", ["derive"]),
            _step("check", ["draft"]),
        ],
        ledger_url,
    )
    assert run_cli("run", str(plan)).returncode == 0
    # draft → write (same definition: its command writes draft.count), check removed, derive's
    # command changed, publish added.
    _plan(
        tmp_path,
        [
            _step("write", [], "echo x >> draft.count"),
            _step("derive", ["write"], "echo y >> derive.count"),
            _step("report", ["derive"]),
            _step("publish", ["report"]),
        ],
        ledger_url,
    )
    shown = run_cli("diff", str(plan))
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "renamed draft → write (same definition): completion kept" in out
    assert "changed derive (definition changed): the next run stops it for review" in out
    assert "added publish: new: not run yet" in out
    assert "removed check: completed " in out and "ago, kept in history" in out.replace(
        "just now", "ago"
    )
    doc = json.loads(run_cli("diff", str(plan), "--json").stdout)
    changes = {(c["change"], c["step"]): c for c in doc["changes"]}
    assert changes[("renamed", "write")]["was"] == "draft"
    assert set(changes) == {
        ("renamed", "write"),
        ("changed", "derive"),
        ("added", "publish"),
        ("removed", "check"),
    }
    assert _lines(tmp_path / "draft.count") == 1  # diff ran nothing

    stopped = run_cli("run", str(plan))  # derive's new definition: review first
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    assert "renamed draft → write (same definition): completion kept" in stopped.stderr
    assert _lines(tmp_path / "draft.count") == 1  # write kept draft's completion
    status = json.loads(run_cli("status", str(plan), "--json").stdout)
    by_id = {s["id"]: s for s in status["steps"]}
    assert by_id["write"]["status"] == "completed"
    with open_ledger(ledger_url) as led:
        kept = led.step_states("report")["check"]  # the removed step's history stays
        assert kept.status == "completed" and kept.completed_at is not None
    assert run_cli("diff", str(plan)).stdout.strip().endswith("no change since the plan the "
                                                              "ledger saw last")  # fmt: skip


def test_diff_of_a_bad_plan_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "plan.yaml"
    bad.write_text("plan_id: x\nsteps: [{id: a, depends_on: [nope], run: 'true'}]\n")
    shown = run_cli("diff", str(bad))
    assert shown.returncode == 2 and "Traceback" not in shown.stderr
    assert "nope" in shown.stderr


def _action_plan(folder: Path, publish_id: str, url: str) -> Path:
    steps: list[dict[str, Any]] = [
        {"id": "draft", "run": "echo d >> draft.count"},
        {
            "id": publish_id,
            "depends_on": ["draft"],
            "action": "publish-post",
            "run": f"echo p >> publish.count && {PY} paysteps.py publish",
        },
    ]
    return write_plan(folder, {"plan_id": "blog", "ledger": url, "steps": steps})


def test_rename_step_carries_completion_and_receipts(
    tmp_path: Path, service: CounterService, ledger_url: str
) -> None:
    prepare_workdir(tmp_path)
    plan = _action_plan(tmp_path, "publish", ledger_url)
    assert run_cli("run", str(plan)).returncode == 0
    assert service.calls == {"blog/publish/publish-post": 1}
    _action_plan(tmp_path, "post", ledger_url)
    renamed = run_cli("rename-step", str(plan), "--from", "publish", "--to", "post")
    assert renamed.returncode == 0, renamed.stderr
    assert "publish → post: history, completion and action receipts carried over" in (
        renamed.stdout
    )
    receipts = json.loads(run_cli("receipt", str(plan), "post", "--json").stdout)
    assert [r["key"] for r in receipts] == ["blog/publish/publish-post"]
    again = run_cli("rename-step", str(plan), "--from", "publish", "--to", "post")
    assert again.returncode == 2 and "post already has a history" in again.stderr
    ran = run_cli("run", str(plan))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert service.calls == {"blog/publish/publish-post": 1}  # not applied again
    assert _lines(tmp_path / "publish.count") == 1  # the step did not run again


def test_open_intent_inherited_through_a_rename_is_settled_under_the_new_id(
    tmp_path: Path, service: CounterService, ledger_url: str
) -> None:
    prepare_workdir(tmp_path)
    plan = _action_plan(tmp_path, "publish", ledger_url)
    assert run_cli("run", str(plan), "--until", "draft").returncode == 3  # stopped: publish left
    with open_ledger(ledger_url) as led:  # a run killed between the intent and the effect
        led.claim_action(
            plan_id="blog",
            step_id="publish",
            action="publish-post",
            key="blog/publish/publish-post",
            run_id="killed-run",
        )
    _action_plan(tmp_path, "post", ledger_url)
    settled = run_cli("receipt", str(plan), "post", "--applied")
    assert settled.returncode == 0, settled.stderr
    assert "key blog/publish/publish-post" in settled.stdout
    ran = run_cli("run", str(plan))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert service.calls == {}  # a person said it was applied: never applied by the run
    assert _lines(tmp_path / "publish.count") == 0
