"""Irreversible actions in real in-process flow runs against a real HTTP service on 127.0.0.1.

The service counts every call per idempotency key: a count above 1 is a duplicate side effect.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.action_plans import PY, prepare_workdir
from tests._support.helpers import run_cli, write_plan
from tests._support.http_counter import CounterService
from tests._support.inprocess import run_inprocess


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[CounterService]:
    with CounterService() as svc:
        monkeypatch.setenv("WAYMARK_TEST_SERVICE", svc.url)
        monkeypatch.delenv("WAYMARK_TEST_KILL_AT", raising=False)
        monkeypatch.delenv("WAYMARK_TEST_NO_PROBES", raising=False)
        yield svc


def _module(folder: Path, body: str) -> str:
    """Write a step module with a unique name (in-process imports are cached by name)."""
    name = f"steps_{uuid.uuid4().hex[:10]}"
    prepare_workdir(folder)
    head = "import os\nfrom pathlib import Path\nfrom paysteps import applied, charge\n\n"
    (folder / f"{name}.py").write_text(head + textwrap.dedent(body))
    return name


def _ledger(folder: Path) -> Any:
    from prefect_waymark.ledger import SqlLedger

    return SqlLedger(f"sqlite:///{folder / '.waymark' / 'ledger.db'}", create=False)


def _kinds(folder: Path, plan_id: str, step_id: str) -> list[str]:
    with _ledger(folder) as led:
        return [e.kind for e in led.events(plan_id) if e.step_id == step_id]


def test_each_action_runs_once_and_a_rerun_skips_it(
    prefect_server: str, tmp_path: Path, service: CounterService
) -> None:
    prepare_workdir(tmp_path)
    (tmp_path / "published.count").write_text("")
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "three-actions",
            "steps": [
                {"id": "card", "call": "paysteps:charge_card"},
                {
                    "id": "pub",
                    "depends_on": ["card"],
                    "action": "publish",
                    "run": f"echo x >> published.count && {PY} paysteps.py publish "
                    '&& test -n "$WAYMARK_IDEMPOTENCY_KEY"',
                    "probe": f"{PY} paysteps.py probe",
                },
                {"id": "invoice", "depends_on": ["pub"], "call": "paysteps:send_invoice"},
            ],
        },
    )
    first = run_inprocess(plan, executor="agent-payments")
    assert first.result == "completed"
    keys = {
        "three-actions/card/charge-card": 1,
        "three-actions/pub/publish": 1,
        "three-actions/invoice/send-invoice": 1,
    }
    assert service.counts() == keys
    with _ledger(tmp_path) as led:
        states = led.step_states("three-actions")
        rows = led.receipts("three-actions")
    assert [r.state for r in rows] == ["applied"] * 3
    for sid in ("card", "pub", "invoice"):
        (receipt,) = states[sid].receipts
        assert receipt["outcome"] == "applied" and receipt["external_id"].startswith("ch-")
        assert receipt["response_hash"] and receipt["by"] == "agent-payments"
        assert states[sid].open_actions == {}
    # The receipt file of the run: step carried the external id.
    assert states["pub"].receipts[0]["external_id"] == rows[1].external_id

    # The run's execution marker lists the receipts of the steps it executed.
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    marked = marker["execution_history"][-1]["receipts"]
    assert sorted(r["key"] for r in marked) == sorted(keys)
    assert {r["step"] for r in marked} == {"card", "pub", "invoice"}

    status = run_cli("status", str(plan), "--json")
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    shown = {s["id"]: s["receipts"] for s in doc["steps"]}
    assert [r["key"] for r in shown["card"]] == ["three-actions/card/charge-card"]
    table = run_cli("status", str(plan))
    assert "receipt: pub: publish applied, external id ch-" in table.stdout

    # Re-running every step: the bodies run again, the actions do not.
    for sid in ("card", "pub", "invoice"):
        proc = run_cli("rerun", str(plan), sid)
        assert proc.returncode == 0
        assert "has a committed receipt" in proc.stdout and "not done again" in proc.stdout
    second = run_inprocess(plan)
    assert second.result == "completed"
    assert sorted(second.executed_steps) == ["card", "invoice", "pub"]
    assert service.counts() == keys
    assert (tmp_path / "published.count").read_text() == "x\n"  # the command never ran again
    with _ledger(tmp_path) as led:
        states = led.step_states("three-actions")
    assert [len(states[s].receipts) for s in ("card", "pub", "invoice")] == [1, 1, 1]


def test_retry_after_the_receipt_never_calls_again(
    prefect_server: str, tmp_path: Path, service: CounterService
) -> None:
    mod = _module(
        tmp_path,
        """
        def pay_then_fail(ctx):
            with ctx.action("pay") as act:
                if act.needed:
                    resp = charge(act.key)
                    act.record(external_id=resp["id"])
            flag = Path(ctx.workdir) / f"{ctx.step_id}.failed-once"
            if not flag.exists():
                flag.write_text("")
                raise RuntimeError("the step fails after its action committed")
            return act.how
        """,
    )
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "retry-after-receipt",
            "steps": [
                # A Prefect retry of the same task run...
                {"id": "retried", "call": f"{mod}:pay_then_fail", "retries": 2},
                # ... and a step that failed after its receipt, resumed by the next run.
                {"id": "resumed", "depends_on": ["retried"], "call": f"{mod}:pay_then_fail"},
            ],
        },
    )
    first = run_inprocess(plan)
    assert first.result == "failed" and first.failed_steps == ["resumed"]
    assert service.counts() == {
        "retry-after-receipt/retried/pay": 1,
        "retry-after-receipt/resumed/pay": 1,
    }
    second = run_inprocess(plan)
    assert second.result == "completed" and second.executed_steps == ["resumed"]
    assert service.duplicates() == {}
    assert sum(service.counts().values()) == 2
    with _ledger(tmp_path) as led:
        states = led.step_states("retry-after-receipt")
    assert states["retried"].attempts == 2
    kinds = _kinds(tmp_path, "retry-after-receipt", "retried")
    assert kinds.count("action_intent") == 1 and kinds.count("action_applied") == 1


def test_unknown_outcome_without_probe_stops_for_review_until_a_person_records_it(
    prefect_server: str, tmp_path: Path, service: CounterService
) -> None:
    mod = _module(
        tmp_path,
        """
        def crash_after_call(ctx):
            with ctx.action("wire") as act:
                if act.needed:
                    charge(act.key)
                    if not (Path(ctx.workdir) / "healthy").exists():
                        raise ConnectionResetError("the response was lost")
            return act.how
        """,
    )
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "unknown",
            "steps": [
                {"id": "wire", "call": f"{mod}:crash_after_call", "retries": 3},
                {"id": "after", "depends_on": ["wire"], "run": "echo x >> after.count"},
            ],
        },
    )
    first = run_inprocess(plan)
    assert first.result == "needs_review" and first.exit_code == 4
    assert service.counts() == {"unknown/wire/wire": 1}  # the retry did not call again
    status = run_cli("status", str(plan), "--json")
    assert status.returncode == 4
    (item,) = json.loads(status.stdout)["needs_review"]
    assert item["step"] == "wire" and item["reason"].startswith("outcome unknown")
    assert item["key"] == "unknown/wire/wire"
    table = run_cli("status", str(plan)).stdout
    assert "outcome unknown: wire: wire (key unknown/wire/wire" in table
    # Retries stopped at the second attempt: the first failed, the second found the open intent.
    kinds = _kinds(tmp_path, "unknown", "wire")
    assert kinds.count("step_attempt_failed") == 1 and kinds[-1] == "step_needs_review"

    again = run_inprocess(plan)  # still unknown: never re-executed blindly
    assert again.result == "needs_review"
    assert service.counts() == {"unknown/wire/wire": 1}

    listed = run_cli("receipt", str(plan), "wire")
    assert "wire intent (outcome unknown)" in listed.stdout
    bad = run_cli("receipt", str(plan), "wire", "--applied", "--not-applied")
    assert bad.returncode == 2 and "exclude each other" in bad.stderr
    rec = run_cli("receipt", str(plan), "wire", "--applied", "--external-id", "bank-42")
    assert rec.returncode == 0, rec.stderr
    assert "pending again" in rec.stdout
    (tmp_path / "healthy").write_text("")
    done = run_inprocess(plan)
    assert done.result == "completed" and done.executed_steps == ["wire", "after"]
    assert service.counts() == {"unknown/wire/wire": 1}
    with _ledger(tmp_path) as led:
        row = led.receipt("unknown/wire/wire")
    assert row is not None and row.source == "person" and row.external_id == "bank-42"
    again_rec = run_cli("receipt", str(plan), "wire", "--applied", "--key", "unknown/wire/wire")
    assert again_rec.returncode == 2 and "never changed" in again_rec.stderr


def test_probe_reconciles_both_ways_and_not_applied_errors_release_the_key(
    prefect_server: str, tmp_path: Path, service: CounterService
) -> None:
    mod = _module(
        tmp_path,
        """
        def _once(ctx, what):
            flag = Path(ctx.workdir) / f"{ctx.step_id}.{what}"
            if flag.exists():
                return False
            flag.write_text("")
            return True

        def lost_response(ctx):
            with ctx.action("a", probe=applied) as act:
                if act.needed:
                    charge(act.key)
                    if _once(ctx, "lost"):
                        raise TimeoutError("no answer")
            return act.how

        def died_before_call(ctx):
            with ctx.action("b", probe=applied) as act:
                if act.needed:
                    if _once(ctx, "early"):
                        raise RuntimeError("crashed before the call")
                    charge(act.key)
            return act.how

        def refused(ctx):
            with ctx.action("c", not_applied_on=(ConnectionRefusedError,)) as act:
                if act.needed:
                    if _once(ctx, "refused"):
                        raise ConnectionRefusedError("service down")
                    charge(act.key)
            return act.how
        """,
    )
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "probes",
            "steps": [
                {"id": "lost", "call": f"{mod}:lost_response", "retries": 1},
                {"id": "early", "call": f"{mod}:died_before_call", "retries": 1},
                {"id": "refused", "call": f"{mod}:refused", "retries": 1},
            ],
        },
    )
    out = run_inprocess(plan)
    assert out.result == "completed", out
    assert service.counts() == {"probes/lost/a": 1, "probes/early/b": 1, "probes/refused/c": 1}
    with _ledger(tmp_path) as led:
        rows = {r.step_id: r for r in led.receipts("probes")}
        values = {sid: st.outputs for sid, st in led.step_states("probes").items()}
    assert values  # every step has a projection
    assert rows["lost"].source == "probe" and rows["lost"].claims == 1
    assert rows["early"].source == "run" and rows["early"].claims == 2
    assert rows["refused"].source == "run" and rows["refused"].claims == 2
    assert "action_not_applied" in _kinds(tmp_path, "probes", "refused")
    early = _kinds(tmp_path, "probes", "early")
    assert early.count("action_intent") == 2 and early.count("action_not_applied") == 1


def test_forbidden_action_is_refused_before_its_intent(
    prefect_server: str, tmp_path: Path, service: CounterService
) -> None:
    mod = _module(
        tmp_path,
        """
        def deploy(ctx):
            with ctx.action("deploy-prod") as act:
                if act.needed:
                    charge(act.key)
        """,
    )
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "forbidden",
            "contract": {
                "goal_id": "g",
                "objective": "ship safely",
                "forbidden": ["action:deploy-*"],
            },
            "steps": [{"id": "ship", "call": f"{mod}:deploy", "retries": 2}],
        },
    )
    out = run_inprocess(plan)
    assert out.result == "failed" and out.failed_steps == ["ship"]
    assert service.counts() == {}
    with _ledger(tmp_path) as led:
        assert led.receipts("forbidden") == []
        st = led.step_states("forbidden")["ship"]
    assert "forbidden by the goal contract" in (st.error or "")
    assert st.open_actions == {}
    # Not retried: the contract says no every time.
    assert _kinds(tmp_path, "forbidden", "ship").count("step_attempt_failed") == 1


def test_probe_without_action_is_bad_input(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        {"plan_id": "bad", "steps": [{"id": "a", "run": "true", "probe": "true"}]},
    )
    proc = run_cli("validate", str(plan))
    assert proc.returncode == 2
    assert "steps[0].probe" in proc.stderr and "needs 'action'" in proc.stderr


def test_review_accept_with_receipt_settles_the_unknown_outcome(
    prefect_server: str, tmp_path: Path, service: CounterService, ledger_url: str
) -> None:
    mod = _module(
        tmp_path,
        """
        def lost(ctx):
            with ctx.action("transfer") as act:
                if act.needed:
                    charge(act.key)
                    if not (Path(ctx.workdir) / "healthy").exists():
                        raise TimeoutError("the response was lost")
            return act.how
        """,
    )
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "review-receipt",
            "steps": [
                {"id": "pay", "call": f"{mod}:lost", "retries": 1},
                {"id": "after", "depends_on": ["pay"], "run": "echo x >> after.count"},
            ],
        },
    )
    first = run_inprocess(plan, ledger_url=ledger_url)
    assert first.result == "needs_review"
    assert service.counts() == {"review-receipt/pay/transfer": 1}
    led_opt = ("--ledger", ledger_url)
    bad = run_cli("review", str(plan), *led_opt, "--accept", "--receipt", "maybe")
    assert bad.returncode == 2 and "expected 'applied' or 'not-applied'" in bad.stderr
    bad = run_cli("review", str(plan), *led_opt, "--abort", "--receipt", "applied")
    assert bad.returncode == 2 and "--accept or --rerun" in bad.stderr
    status = json.loads(run_cli("status", str(plan), *led_opt, "--json").stdout)
    assert status["steps"][0]["status"] == "needs_review"  # nothing was written
    assert status["steps"][0]["open_actions"][0]["key"] == "review-receipt/pay/transfer"

    ok = run_cli(
        "review", str(plan), *led_opt, "--accept", "--receipt", "applied", "--external-id", "T-7"
    )
    assert ok.returncode == 0, ok.stderr
    status = json.loads(run_cli("status", str(plan), *led_opt, "--json").stdout)
    step = status["steps"][0]
    assert step["status"] == "pending" and step["open_actions"] == []
    assert step["receipts"][0]["external_id"] == "T-7" and step["receipts"][0]["source"] == "person"
    (tmp_path / "healthy").write_text("")
    done = run_inprocess(plan, ledger_url=ledger_url)
    assert done.result == "completed" and done.executed_steps == ["pay", "after"]
    assert service.counts() == {"review-receipt/pay/transfer": 1}
