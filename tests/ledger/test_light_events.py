"""``light_events``: the events ``ledger.events`` gives, without the step hashes of each
``run_started`` (750 KB a run of a 10,000-step plan), and of one run only when asked — on
SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.run_hashes import HEAVY_KEYS, light_events

KINDS = [EventKind.run_started, EventKind.step_started, EventKind.run_finished]


def _record_runs(url: str) -> None:
    with open_ledger(url) as led:
        for run in ("r1", "r2"):
            hashes = {f"s{i}": f"{i:064x}" for i in range(50)}
            led.record("p", EventKind.run_started, run_id=run, executor="me", step_hashes=hashes)
            step = f"s-{run}"
            led.record("p", EventKind.step_started, step_id=step, branch="main", run_id=run)
            led.record("p", EventKind.step_completed, step_id=step, branch="main", run_id=run)
            led.record("p", EventKind.run_finished, run_id=run, result="stopped")
        # Data that is not strict JSON (json.dumps writes NaN): its hashes are dropped too.
        led.record("p", EventKind.run_started, run_id="r3", score=float("nan"), step_hashes={})


def _expected(url: str, run_id: str | None = None) -> list[tuple[Any, ...]]:
    with open_ledger(url) as led:
        events = led.events("p", kinds=KINDS)
    return [
        (e.seq, e.kind, e.run_id, e.step_id, {k: v for k, v in e.data.items() if k != "score"})
        for e in events
        if run_id is None or e.run_id == run_id
    ]


def _seen(events: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for e in events:
        assert not set(HEAVY_KEYS) & set(e.data), e
        out.append(
            (e.seq, e.kind, e.run_id, e.step_id, {k: v for k, v in e.data.items() if k != "score"})
        )
    return out


def _strip(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(*r[:4], {k: v for k, v in r[4].items() if k not in HEAVY_KEYS}) for r in rows]


def test_light_events_leave_out_the_step_hashes(ledger_url: str) -> None:
    _record_runs(ledger_url)
    with open_ledger(ledger_url) as led:
        got = light_events(led, "p", KINDS)
        one = light_events(led, "p", KINDS, run_id="r2")
        after = light_events(led, "p", KINDS, after_seq=got[2].seq or 0)
    assert _seen(got) == _strip(_expected(ledger_url))
    assert len(got) == 7  # 2 x (run_started, step_started, run_finished) + r3's run_started
    assert _seen(one) == _strip(_expected(ledger_url, "r2"))
    assert [e.run_id for e in one] == ["r2"] * 3
    assert _seen(after) == _seen(got)[3:]
    assert got[0].data["executor"] == "me"  # the rest of the data is kept
