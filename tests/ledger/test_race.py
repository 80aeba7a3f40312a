"""Real concurrent processes race for one branch's in_progress slot, on SQLite and PostgreSQL.

Each round, N worker processes wait at a barrier, then each tries ``step_started`` on a
different step of the same (plan, branch). Exactly one wins; every other one gets
:class:`BranchBusyError` naming the winner; the ledger then holds exactly one started event, one
in_progress step and one slot. Several rounds, some on a fresh branch, some on the branch the
previous winner just released.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from multiprocessing.synchronize import Barrier
from typing import Any

import pytest

from prefect_waymark.ledger import open_ledger

WORKERS = 4
ROUNDS = 6
PLAN = "race-plan"


def _branch(round_no: int) -> str:
    # Even rounds use a fresh branch; odd rounds reuse the one released after the round before.
    return f"b{round_no - round_no % 2}"


def _worker(url: str, index: int, barrier: Barrier, results: Any) -> None:
    """One process: open the ledger, then for each round wait for all, then try to start."""
    from prefect_waymark.errors import BranchBusyError

    try:
        led = open_ledger(url, create=False)
    except Exception:  # noqa: BLE001 - report to the parent instead of dying silently
        results.put((-1, index, "open-error", traceback.format_exc()))
        barrier.abort()
        return
    try:
        for round_no in range(ROUNDS):
            step = f"r{round_no}-w{index}"
            barrier.wait(timeout=120)
            try:
                led.record(
                    PLAN,
                    "step_started",
                    step_id=step,
                    branch=_branch(round_no),
                    run_id=f"run-w{index}",
                )
                results.put((round_no, index, "won", ""))
            except BranchBusyError as exc:
                results.put((round_no, index, "busy", f"{exc.holder_step}|{exc}"))
            except Exception:  # noqa: BLE001
                results.put((round_no, index, "error", traceback.format_exc()))
            barrier.wait(timeout=120)  # the parent checks and releases between rounds
            barrier.wait(timeout=120)
    finally:
        led.close()


@pytest.mark.timeout(300)
def test_exactly_one_process_wins_the_branch(ledger_url: str) -> None:
    with open_ledger(ledger_url) as led:  # create the tables before the race
        led.record(PLAN, "run_started", run_id="setup")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(ledger_url, i, barrier, results), daemon=True)
        for i in range(WORKERS)
    ]
    for p in procs:
        p.start()
    pids = {p.pid for p in procs}
    assert len(pids) == WORKERS
    checker = open_ledger(ledger_url, create=False)
    try:
        for round_no in range(ROUNDS):
            branch = _branch(round_no)
            barrier.wait(timeout=120)  # go
            barrier.wait(timeout=120)  # everyone has tried
            outcome = [results.get(timeout=60) for _ in range(WORKERS)]
            errors = [o for o in outcome if o[2] not in ("won", "busy")]
            assert not errors, errors
            assert {o[0] for o in outcome} == {round_no}
            winners = [o[1] for o in outcome if o[2] == "won"]
            assert len(winners) == 1, outcome
            winner_step = f"r{round_no}-w{winners[0]}"
            for _, _, _, detail in (o for o in outcome if o[2] == "busy"):
                holder, message = detail.split("|", 1)
                assert holder == winner_step
                assert f"branch {branch!r} already has step {winner_step!r} in_progress" in message
            # The ledger agrees: one started event, one in_progress step, one slot.
            started = [
                e
                for e in checker.events(PLAN, kinds=["step_started"])
                if e.step_id and e.step_id.startswith(f"r{round_no}-")
            ]
            assert [e.step_id for e in started] == [winner_step]
            states = checker.step_states(PLAN)
            assert [s for s in states if s.startswith(f"r{round_no}-")] == [winner_step]
            holds = [h for h in checker.holds(PLAN) if h.branch == branch]
            assert [(h.step_id, h.run_id) for h in holds] == [(winner_step, f"run-w{winners[0]}")]
            assert holds[0].pid in pids  # the winning process recorded itself as the holder
            if round_no % 2 == 0:
                # Free the branch: the next round races for the same, now released, slot.
                checker.record(
                    PLAN,
                    "step_completed",
                    step_id=winner_step,
                    branch=branch,
                    run_id=f"run-w{winners[0]}",
                )
                assert [h for h in checker.holds(PLAN) if h.branch == branch] == []
            barrier.wait(timeout=120)  # next round
        in_progress = [
            s for s, st in checker.step_states(PLAN).items() if st.status == "in_progress"
        ]
        assert len(in_progress) == ROUNDS // 2  # the odd rounds' winners still hold their slot
        busy_branches = sorted(h.branch for h in checker.holds(PLAN))
        assert busy_branches == sorted(_branch(r) for r in range(1, ROUNDS, 2))
    finally:
        checker.close()
        for p in procs:
            p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0] * WORKERS


def _first_event_worker(url: str, index: int, barrier: Barrier, results: Any) -> None:
    """Each round: all workers record ``step_needs_review`` on the same step's first event."""
    from prefect_waymark.errors import TransitionError

    led = open_ledger(url, create=False)
    try:
        for round_no in range(ROUNDS):
            barrier.wait(timeout=120)
            try:
                led.record(
                    PLAN,
                    "step_needs_review",
                    step_id=f"fresh-{round_no}",
                    branch="main",
                    run_id=f"run-w{index}",
                    reason=f"worker {index}",
                )
                results.put((round_no, index, "won", ""))
            except TransitionError:
                results.put((round_no, index, "refused", ""))
            except Exception:  # noqa: BLE001 - an IntegrityError here is the bug this guards
                results.put((round_no, index, "error", traceback.format_exc()))
    finally:
        led.close()


@pytest.mark.timeout(300)
def test_concurrent_first_events_of_a_step_are_serialised(ledger_url: str) -> None:
    """A step's first event, written by several processes at once: one wins, the others are
    checked against its state (TransitionError), none fails on the projection's primary key."""
    with open_ledger(ledger_url) as led:
        led.record(PLAN, "run_started", run_id="setup")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_first_event_worker, args=(ledger_url, i, barrier, results))
        for i in range(WORKERS)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=240) for _ in range(WORKERS * ROUNDS)]
    for p in procs:
        p.join(timeout=60)
    errors = [g for g in got if g[2] == "error"]
    assert not errors, errors[0][3]
    for round_no in range(ROUNDS):
        outcomes = sorted(g[2] for g in got if g[0] == round_no)
        assert outcomes == ["refused"] * (WORKERS - 1) + ["won"], outcomes
    with open_ledger(ledger_url, create=False) as led:
        states = led.step_states(PLAN)
        assert all(states[f"fresh-{r}"].status == "needs_review" for r in range(ROUNDS))
        assert led.rebuild(PLAN) == states
