"""The receipts store on the real SQLite and PostgreSQL ledgers: intent before effect, one row per
idempotency key, receipts never changed, and exactly one winner when processes race for a key."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import pytest

from prefect_waymark.errors import LedgerError, ReceiptConflictError
from prefect_waymark.ledger import SqlLedger
from prefect_waymark.ledger.receipts import default_action_key


def _claim(led: SqlLedger, key: str = "p/s/pay", run: str = "r1", **kw: Any) -> Any:
    return led.claim_action(
        plan_id="p", step_id="s", action="pay", key=key, run_id=run, by="tester", **kw
    )


def test_intent_then_receipt_then_skip(ledger_url: str) -> None:
    with SqlLedger(ledger_url) as led:
        first = _claim(led)
        assert first.status == "claimed" and first.record.state == "intent"
        # The intent is in the database before any effect: a second claimer sees it open.
        assert _claim(led, run="r2").status == "open"
        assert led.step_states("p")["s"].open_actions["p/s/pay"]["run_id"] == "r1"
        rec = led.settle_action(
            "p/s/pay",
            outcome="applied",
            token=first.record.token,
            by="tester",
            external_id="ext-1",
            response_hash="abc",
            result={"id": "ext-1"},
        )
        assert rec.state == "applied" and rec.settled_by == "tester"
        again = _claim(led, run="r3")
        assert again.status == "applied" and again.record.external_id == "ext-1"
        assert again.record.result == {"id": "ext-1"}
        st = led.step_states("p")["s"]
        assert st.open_actions == {}
        (receipt,) = st.receipts
        assert receipt["key"] == "p/s/pay" and receipt["external_id"] == "ext-1"
        assert receipt["response_hash"] == "abc" and receipt["run_id"] == "r1"
        kinds = [e.kind for e in led.events("p")]
        assert kinds == ["action_intent", "action_applied"]
        # The projection is what the events fold to.
        assert led.rebuild("p") == led.step_states("p")
        assert [r.key for r in led.receipts("p")] == ["p/s/pay"]
        assert led.receipt("p/s/pay") == again.record


def test_receipts_are_never_changed_and_tokens_are_checked(ledger_url: str) -> None:
    with SqlLedger(ledger_url) as led:
        first = _claim(led)
        with pytest.raises(ReceiptConflictError, match="no longer claimed"):
            led.settle_action("p/s/pay", outcome="applied", token="someone-else")
        led.settle_action("p/s/pay", outcome="applied", token=first.record.token)
        with pytest.raises(ReceiptConflictError, match="never changed"):
            led.settle_action("p/s/pay", outcome="not_applied", token=None, by="a person")
        with pytest.raises(ReceiptConflictError, match="no intent recorded"):
            led.settle_action("p/s/none", outcome="applied", token="t")
        # One key, one action: reusing a key for another action is refused.
        with pytest.raises(ReceiptConflictError, match="already belongs to action"):
            led.claim_action(plan_id="p", step_id="s", action="refund", key="p/s/pay", run_id="r")
        assert isinstance(ReceiptConflictError("x"), LedgerError)


def test_not_applied_releases_and_probe_takeover_needs_the_token(ledger_url: str) -> None:
    with SqlLedger(ledger_url) as led:
        first = _claim(led)
        led.settle_action("p/s/pay", outcome="not_applied", token=first.record.token, note="503")
        second = _claim(led, run="r2")
        assert second.status == "claimed" and second.record.claims == 2
        # An intent left open (the runner died): only the holder of its token may take it over.
        stale = _claim(led, run="r3", replace_token="not-the-token")
        assert stale.status == "open"
        taken = _claim(led, run="r3", replace_token=second.record.token)
        assert taken.status == "claimed" and taken.record.run_id == "r3"
        assert taken.record.claims == 3
        # The old token is dead now.
        with pytest.raises(ReceiptConflictError):
            led.settle_action("p/s/pay", outcome="applied", token=second.record.token)
        kinds = [e.kind for e in led.events("p")]
        assert kinds == [
            "action_intent",
            "action_not_applied",
            "action_intent",
            "action_not_applied",
            "action_intent",
        ]
        assert list(led.step_states("p")["s"].open_actions) == ["p/s/pay"]


def test_a_person_records_a_receipt_for_an_unknown_or_unseen_action(ledger_url: str) -> None:
    with SqlLedger(ledger_url) as led:
        _claim(led)
        rec = led.settle_action(
            "p/s/pay", outcome="applied", token=None, by="alice", source="person", note="bank"
        )
        assert rec.source == "person" and rec.settled_by == "alice" and rec.run_id == "r1"
        key = default_action_key("p", "t", "mail")
        assert key == "p/t/mail"
        seen = led.settle_action(
            key,
            outcome="applied",
            token=None,
            by="bob",
            source="person",
            step=("p", "t", "mail"),
            external_id="msg-9",
        )
        assert seen.step_id == "t" and seen.external_id == "msg-9"
        with pytest.raises(ReceiptConflictError):  # the key is step t's "mail", not s's "pay"
            _claim(led, key=key)
        assert led.step_states("p")["t"].receipts[0]["by"] == "bob"


def _race(url: str, keys: list[str], who: str, barrier: Any, out: Any) -> None:
    led = SqlLedger(url, create=False)
    barrier.wait()
    won = []
    for key in keys:
        claim = led.claim_action(
            plan_id="race", step_id=key, action="pay", key=key, run_id=who, by=who
        )
        if claim.status == "claimed":
            won.append(key)
            led.settle_action(key, outcome="applied", token=claim.record.token, by=who)
    led.close()
    out.put((who, won))


def test_processes_racing_for_the_same_keys_each_key_has_one_winner(ledger_url: str) -> None:
    keys = [f"k{i:03d}" for i in range(40)]
    SqlLedger(ledger_url).close()
    ctx = mp.get_context("spawn")
    workers = 4
    barrier = ctx.Barrier(workers)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_race, args=(ledger_url, keys, f"w{i}", barrier, out))
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    winners: dict[str, list[str]] = {}
    for who, won in results.items():
        for key in won:
            winners.setdefault(key, []).append(who)
    duplicates = {k: w for k, w in winners.items() if len(w) > 1}
    print(f"receipt race: {workers} processes x {len(keys)} keys, duplicates {len(duplicates)}")
    assert duplicates == {}
    assert sorted(winners) == keys
    with SqlLedger(ledger_url) as led:
        rows = led.receipts("race")
        assert len(rows) == len(keys) and {r.state for r in rows} == {"applied"}
        intents = led.events("race", kinds=["action_intent"])
        assert len(intents) == len(keys)


def test_a_persons_receipt_never_overwrites_an_intent_claimed_meanwhile(pg_url: str) -> None:
    """PostgreSQL, READ COMMITTED: a person records a receipt for a key with no row yet while a
    run's claim of that key is being committed. The person's insert loses; the run's fresh
    intent must stay as it is (overwritten with ``not_applied``, the run would act, fail to
    settle, and a later run would claim the key again: the action twice). Refused instead."""
    import threading
    import time

    import psycopg

    with SqlLedger(pg_url) as led:
        _claim(led, key="p/s/seed")  # a real row to copy the run's claim from
        raw_url = pg_url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(raw_url) as raw:  # the run's claim, not committed yet
            cols = [
                r[0]
                for r in raw.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_name = 'waymark_receipts' ORDER BY ordinal_position"
                )
            ]
            names = ", ".join(cols)
            picks = ", ".join({"key": "'p/s/pay'", "run_id": "'r-run'"}.get(c, c) for c in cols)
            raw.execute(
                f"INSERT INTO waymark_receipts ({names}) "  # noqa: S608 - test-only, fixed names
                f"SELECT {picks} FROM waymark_receipts WHERE key = 'p/s/seed'"
            )
            outcome: list[BaseException | None] = []

            def person() -> None:
                try:
                    led.settle_action(
                        "p/s/pay",
                        outcome="not_applied",
                        token=None,
                        by="ann",
                        step=("p", "s", "pay"),
                    )
                    outcome.append(None)
                except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
                    outcome.append(exc)

            t = threading.Thread(target=person)
            t.start()
            # Wait until the person's insert waits on the run's uncommitted row (a lock wait).
            with psycopg.connect(raw_url, autocommit=True) as watch:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    (waiting,) = watch.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock'"
                    ).fetchone() or (0,)
                    if waiting:
                        break
                    time.sleep(0.05)
            assert outcome == [] and t.is_alive() and waiting
            raw.commit()
            t.join(30)
        assert len(outcome) == 1 and isinstance(outcome[0], ReceiptConflictError), outcome
        assert "claimed by a run" in str(outcome[0])
        row = led.receipt("p/s/pay")
        assert row is not None
        assert (row.state, row.run_id, row.settled_by) == ("intent", "r-run", None)
