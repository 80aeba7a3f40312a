"""A close is final in the ledger: one ``plan_closed`` per plan, with its ``closed:`` meta row in
the same transaction; no new work is recorded after it (step starts, skips, rerun requests,
action intents), releases still are; a live run stops starting steps; an agent can still end the
step it holds."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.closing.close import close_plan
from prefect_waymark.errors import LedgerError, PlanClosedError
from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.plan import load_plan
from tests._support.helpers import run_cli, write_plan
from tests._support.resume_helpers import kill_group, start_cli

from ._plans import close_plan_doc, events, ledger_of, start


def _data(by: str = "ann") -> dict[str, Any]:
    return {"reason": "done", "by": by, "forced": False, "evidence": {}, "acceptance": {}}


def test_the_ledger_takes_no_new_work_after_a_close_but_lets_running_steps_end(
    ledger_url: str,
) -> None:
    start(ledger_url, "p", "a")  # in progress when the plan closes
    with open_ledger(ledger_url) as led:
        led.record("p", EventKind.step_skipped, step_id="z", reason="not needed", by="ann")
        seen: list[dict[str, Any]] = []
        ev = led.close_plan("p", lambda states: seen.append(dict(states)) or _data())
        assert ev is not None and ev.kind == EventKind.plan_closed
        assert seen[0]["a"].status == "in_progress"  # the states were read in the transaction
        count = led.count_events("p")
        refused = [
            (EventKind.step_started, {"step_id": "b", "branch": "other", "run_id": "r2"}),
            (EventKind.step_skipped, {"step_id": "b", "reason": "x", "by": "bob"}),
            (EventKind.step_rerun_requested, {"step_id": "z", "by": "bob", "reason": ""}),
        ]
        for kind, data in refused:
            with pytest.raises(PlanClosedError, match="was closed on .* by ann"):
                led.record("p", kind, **data)
        with pytest.raises(PlanClosedError, match=r"action_intent refused"):
            led.claim_action(plan_id="p", step_id="a", action="pay", key="p/a/pay", run_id="run-1")
        with pytest.raises(PlanClosedError, match="already closed"):
            led.close_plan("p", lambda states: _data("bob"))
        assert led.count_events("p") == count and led.holds("p") != []
        assert isinstance(PlanClosedError("x"), LedgerError)  # callers that catch ledger errors
        # The running step still ends on record, and frees its branch.
        led.record("p", EventKind.step_completed, step_id="a", branch="main", run_id="run-1",
                   def_hash="h")  # fmt: skip
        assert led.step_states("p")["a"].status == "completed" and led.holds("p") == []
        assert [e.kind for e in led.events("p")].count(EventKind.plan_closed) == 1


def test_two_closes_at_the_same_time_record_one(ledger_url: str) -> None:
    with open_ledger(ledger_url) as led:
        led.record("p", EventKind.step_skipped, step_id="a", reason="not needed", by="ann")
    outcomes: list[str] = []

    def close(by: str) -> None:
        def slow(states: Any) -> dict[str, Any]:
            time.sleep(0.4)  # both would have passed a check made before the transaction
            return _data(by)

        with open_ledger(ledger_url) as led:
            try:
                led.close_plan("p", slow)
                outcomes.append("closed")
            except PlanClosedError as exc:
                outcomes.append(str(exc))

    threads = [threading.Thread(target=close, args=(who,)) for who in ("ann", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes)[0] == "closed" and "already closed" in sorted(outcomes)[1], outcomes
    closes = [e for e in events(ledger_url, "p") if e.kind == EventKind.plan_closed]
    assert len(closes) == 1


def test_a_skip_or_a_start_during_a_close_waits_for_it_and_is_refused(ledger_url: str) -> None:
    with open_ledger(ledger_url) as led:
        led.record("p", EventKind.step_skipped, step_id="a", reason="not needed", by="ann")
    inside = threading.Event()
    outcomes: dict[str, str] = {}

    def close() -> None:
        def slow(states: Any) -> dict[str, Any]:
            inside.set()  # the close holds its locks now
            time.sleep(0.6)
            return {**_data(), "forced": True}

        with open_ledger(ledger_url) as led:
            led.close_plan("p", slow)

    def other(name: str, kind: EventKind, data: dict[str, Any]) -> None:
        inside.wait(30)
        with open_ledger(ledger_url) as led:
            try:
                led.record("p", kind, **data)
                outcomes[name] = "recorded"
            except PlanClosedError:
                outcomes[name] = "refused"

    threads = [
        threading.Thread(target=close),
        threading.Thread(
            target=other,
            args=("skip", EventKind.step_skipped, {"step_id": "b", "reason": "x", "by": "bob"}),
        ),  # fmt: skip
        threading.Thread(
            target=other,
            args=(
                "start",
                EventKind.step_started,
                {
                    "step_id": "c",
                    "branch": "other",
                    "run_id": "r9",
                    "def_hash": "h",
                    "result_key": None,
                    "host": "h",
                    "pid": 0,
                },
            ),
        ),  # fmt: skip
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcomes == {"skip": "refused", "start": "refused"}
    evs = events(ledger_url, "p")
    assert [e.kind for e in evs] == [EventKind.step_skipped, EventKind.plan_closed]


class _Stale:
    """A ledger whose first look at the steps is from before a step started."""

    def __init__(self, led: Any, states: dict[str, Any]) -> None:
        self._led, self._states = led, states

    def step_states(self, plan_id: str) -> dict[str, Any]:
        return self._states

    def __getattr__(self, name: str) -> Any:
        return getattr(self._led, name)


def test_close_checks_the_steps_again_inside_its_transaction(
    tmp_path: Path, ledger_url: str
) -> None:
    doc = close_plan_doc(acceptance=[], exit_conditions=[])
    doc["steps"] = [{"id": "draft", "run": "true"}]
    plan = load_plan(write_plan(tmp_path, doc))
    with open_ledger(ledger_url) as led:
        led.record("closing", EventKind.step_skipped, step_id="draft", reason="no", by="ann")
        looked = led.step_states("closing")  # all done: the first look passes
        led.record("closing", EventKind.step_rerun_requested, step_id="draft", by="b", reason="")
        count = led.count_events("closing")
        kw: dict[str, Any] = {"contract": None, "contract_source": None, "given": {}}
        done = close_plan(plan, _Stale(led, looked), tmp_path, by="ann", reason="", force=False,
                          **kw)  # fmt: skip
        assert done.closed is None and led.count_events("closing") == count
        assert [u.what for u in done.check.unmet] == ["step draft is pending"]
        # --force with nothing unmet is an ordinary close: forced only when something was unmet
        led.record("closing", EventKind.step_skipped, step_id="draft", reason="no", by="ann")
        done = close_plan(plan, led, tmp_path, by="ann", reason="all done", force=True, **kw)
        assert done.closed is not None and done.closed["forced"] is False


def _wait_for(what: Any, proc: Any, log: Path, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not what():
        if proc.poll() is not None or time.monotonic() > deadline:
            kill_group(proc)
            raise AssertionError(log.read_text(errors="replace")[-4000:])
        time.sleep(0.1)


def test_a_live_run_starts_no_step_after_the_plan_is_closed(
    prefect_server: str, tmp_path: Path
) -> None:
    wait = "for i in $(seq 1800); do [ -f go ] && break; sleep 0.1; done"  # up to 3 min
    doc = {
        "plan_id": "live",
        "steps": [
            {"id": "s1", "run": f"touch s1.started; {wait}; echo x >> s1.count"},
            {"id": "s2", "depends_on": ["s1"], "run": "echo x >> s2.count"},
            {"id": "s3", "depends_on": ["s2"], "run": "echo x >> s3.count"},
            {"id": "x1", "branch": "other", "run": f"{wait}; echo x >> x1.count"},
        ],
    }
    plan = write_plan(tmp_path, doc)
    log = tmp_path / "run.log"
    proc = start_cli("run", str(plan), cwd=tmp_path, log=log)
    _wait_for(lambda: (tmp_path / "s1.started").exists(), proc, log)
    closed = run_cli("close", str(plan), "--force", "--reason", "not needed", "--by", "ann")
    assert closed.returncode == 0, closed.stdout + closed.stderr
    (tmp_path / "go").touch()  # s1 and x1 end only now, after the close
    assert proc.wait(timeout=120) == 3, log.read_text()
    out = log.read_text()
    assert "the plan was closed by ann while this run went on; 2 running step(s) finished" in out
    assert (tmp_path / "s1.count").exists() and (tmp_path / "x1.count").exists()
    assert not (tmp_path / "s2.count").exists() and not (tmp_path / "s3.count").exists()
    evs = events(ledger_of(tmp_path), "live")
    at = next(i for i, e in enumerate(evs) if e.kind == EventKind.plan_closed)
    after = [(e.kind, e.step_id) for e in evs[at:] if e.step_id]
    assert (EventKind.step_started, "s2") not in after
    assert {(EventKind.step_completed, "s1"), (EventKind.step_completed, "x1")} <= set(after)
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    assert marker["execution_history"][-1]["result"] == "stopped"


def test_after_a_forced_close_an_agent_can_still_end_the_step_it_holds(tmp_path: Path) -> None:
    doc = {
        "plan_id": "agents",
        "steps": [
            {"id": "write", "kind": "agent", "instructions": "write it"},
            {"id": "other", "kind": "agent", "branch": "b", "instructions": "other"},
        ],
    }
    p = str(write_plan(tmp_path, doc))
    url = ledger_of(tmp_path)
    for step, who in (("write", "bot"), ("other", "cat")):
        began = run_cli("start", p, step, "--executor", who, cwd=tmp_path)
        assert began.returncode == 0, began.stdout + began.stderr
    closed = run_cli("close", p, "--force", "--reason", "stop", cwd=tmp_path)
    assert closed.returncode == 0, closed.stdout + closed.stderr
    count = len(events(url, "agents"))
    for args in (("next", p, "--executor", "bot"), ("start", p, "write", "--executor", "bot"),
                 ("done", p, "write", "--executor", "eve"), ("tick", p, "write")):  # fmt: skip
        refused = run_cli(*args, cwd=tmp_path)
        assert refused.returncode == 2 and "was closed" in refused.stderr + refused.stdout, args
    assert len(events(url, "agents")) == count
    tick = run_cli("tick", p, "write", "--executor", "bot", cwd=tmp_path)
    assert tick.returncode == 0, tick.stdout + tick.stderr
    done = run_cli("done", p, "write", "--executor", "bot", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    failed = run_cli("fail", p, "other", "--executor", "cat", "--reason", "closed", cwd=tmp_path)
    assert failed.returncode == 0, failed.stdout + failed.stderr
    kinds = [(e.kind, e.step_id) for e in events(url, "agents")[count:]]
    assert (EventKind.step_completed, "write") in kinds
    assert (EventKind.step_failed, "other") in kinds
    again = run_cli("done", p, "write", "--executor", "bot", cwd=tmp_path)
    assert again.returncode == 2  # no longer in progress: refused as closed
