"""Staleness is state: a rerun makes the completed steps after it stale, the next run runs them
again in dependency order (or stops a step whose action was applied for review), and
``waymark rerun --only`` keeps them on purpose. Real ``waymark run`` processes on SQLite and
PostgreSQL ledgers; each step appends a line to a file, the action calls a counting HTTP service.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.events import EVENT_PAYLOADS
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


def _plan(folder: Path, *, publish: bool = False) -> Path:
    steps: list[dict[str, Any]] = [
        {"id": "fetch", "run": "echo fetch >> order.log"},
        {"id": "derive", "depends_on": ["fetch"], "run": "echo derive >> order.log"},
        {"id": "report", "depends_on": ["derive"], "run": "echo report >> order.log"},
    ]
    if publish:
        steps.append(
            {
                "id": "publish",
                "depends_on": ["report"],
                "action": "publish-post",
                "run": f"echo publish >> order.log && {PY} paysteps.py publish",
            }
        )
    return write_plan(folder, {"plan_id": "data", "steps": steps})


def _order(folder: Path) -> list[str]:
    path = folder / "order.log"
    return path.read_text().split() if path.exists() else []


def _cli(ledger_url: str, *args: str) -> Any:
    return run_cli(*args, "--ledger", ledger_url)


def _steps(ledger_url: str, plan: Path) -> dict[str, dict[str, Any]]:
    out = _cli(ledger_url, "status", str(plan), "--json")
    assert out.returncode in (0, 4), out.stdout + out.stderr  # 4: a step needs review
    return {s["id"]: s for s in json.loads(out.stdout)["steps"]}


def test_a_rerun_cascades_to_the_steps_after_it_in_order(tmp_path: Path, ledger_url: str) -> None:
    plan = _plan(tmp_path)
    first = _cli(ledger_url, "run", str(plan))
    assert first.returncode == 0, first.stdout + first.stderr
    assert _order(tmp_path) == ["fetch", "derive", "report"]

    rerun = _cli(ledger_url, "rerun", str(plan), "fetch")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "stale now: derive, report" in rerun.stdout
    steps = _steps(ledger_url, plan)
    assert steps["derive"]["status"] == "completed"
    assert steps["derive"]["stale"]["because"] == "fetch"
    assert steps["report"]["stale"]["why"] == "rerun requested"
    table = _cli(ledger_url, "status", str(plan))
    assert "completed, stale: upstream `fetch` changed (rerun requested)" in table.stdout
    nxt = _cli(ledger_url, "next", str(plan), "--json")
    doc = json.loads(nxt.stdout)
    assert [s["step"] for s in doc["stale"]] == ["derive", "report"], nxt.stdout

    second = _cli(ledger_url, "run", str(plan))
    assert second.returncode == 0, second.stdout + second.stderr
    # fetch, then each stale step once, in dependency order, in the same run
    assert _order(tmp_path) == ["fetch", "derive", "report"] * 2
    steps = _steps(ledger_url, plan)
    assert all(s["status"] == "completed" and not s["stale"] for s in steps.values())
    third = _cli(ledger_url, "run", str(plan))
    assert third.returncode == 0 and len(_order(tmp_path)) == 6  # nothing ran again
    with open_ledger(ledger_url, create=False) as led:
        marks = led.events("data", kinds=[EventKind.step_stale])
    assert [(e.step_id, e.data["because"]) for e in marks] == [
        ("derive", "fetch"),
        ("report", "fetch"),
    ]
    payload = EVENT_PAYLOADS[EventKind.step_stale]
    for e in marks:  # each fits its kind's payload
        assert (
            payload.__required_keys__
            <= set(e.data)
            <= (payload.__required_keys__ | payload.__optional_keys__)
        )


def test_rerun_only_keeps_the_steps_after_it(tmp_path: Path, ledger_url: str) -> None:
    plan = _plan(tmp_path)
    assert _cli(ledger_url, "run", str(plan)).returncode == 0
    only = _cli(ledger_url, "rerun", str(plan), "fetch", "--only", "--by", "ann")
    assert only.returncode == 0, only.stdout + only.stderr
    assert "kept as they are, on purpose (--only, by ann): derive, report" in only.stdout
    steps = _steps(ledger_url, plan)
    assert steps["derive"]["stale"] is None and steps["report"]["stale"] is None
    second = _cli(ledger_url, "run", str(plan))
    assert second.returncode == 0, second.stdout + second.stderr
    assert _order(tmp_path) == ["fetch", "derive", "report", "fetch"]
    assert all(s["status"] == "completed" for s in _steps(ledger_url, plan).values())
    history = _cli(ledger_url, "audit", str(plan), "--json")
    if history.returncode == 0:  # the record says who kept which steps
        assert '"kept"' in history.stdout


@pytest.mark.parametrize("answer", ["accept", "rerun"])
def test_an_applied_action_after_a_rerun_stops_for_review(
    tmp_path: Path, ledger_url: str, service: CounterService, answer: str
) -> None:
    prepare_workdir(tmp_path)
    plan = _plan(tmp_path, publish=True)
    assert _cli(ledger_url, "run", str(plan)).returncode == 0
    assert service.calls == {"data/publish/publish-post": 1}
    assert _cli(ledger_url, "rerun", str(plan), "fetch").returncode == 0
    assert _steps(ledger_url, plan)["publish"]["stale"]["because"] == "fetch"

    stopped = _cli(ledger_url, "run", str(plan))
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    assert _order(tmp_path)[4:] == ["fetch", "derive", "report"]  # not publish
    assert service.calls == {"data/publish/publish-post": 1}
    steps = _steps(ledger_url, plan)
    assert steps["publish"]["status"] == "needs_review"
    assert steps["publish"]["review_reason"] == (
        "upstream `fetch` changed after `publish` was applied: accept keeps it, rerun applies "
        "it again with a new key"
    )

    answered = _cli(ledger_url, "review", str(plan), "--step", "publish", f"--{answer}")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    after = _cli(ledger_url, "run", str(plan))
    assert after.returncode == 0, after.stdout + after.stderr
    again = _cli(ledger_url, "run", str(plan))
    assert again.returncode == 0, again.stdout + again.stderr
    steps = _steps(ledger_url, plan)
    assert steps["publish"]["status"] == "completed" and not steps["publish"]["stale"]
    if answer == "accept":
        assert service.calls == {"data/publish/publish-post": 1}
        assert _order(tmp_path).count("publish") == 1
    else:  # applied exactly once more, under a new key
        assert service.calls == {
            "data/publish/publish-post": 1,
            "data/publish/publish-post/again-1": 1,
        }
        assert _order(tmp_path).count("publish") == 2
