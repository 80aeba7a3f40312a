"""Two runners resume the same plan at the same moment, 20 times, on SQLite and on PostgreSQL.

Each repetition is a fresh plan with two branches and three irreversible actions (one per kind);
two real processes (tests/_support/race_worker.py) start it together and keep coming back until
it is done. Every fifth repetition first has a ``waymark run`` killed (SIGKILL, whole process group)
inside an action, so the two runners also race to take over its step and reconcile its intent.
The HTTP service counts calls per idempotency key: any count above 1 is a duplicate side effect.
The ledger's events show whether a branch ever had two steps in_progress at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.action_plans import PY, branch_overlaps, prepare_workdir
from tests._support.helpers import WAYMARK, write_plan
from tests._support.http_counter import CounterService

REPS = 20
CRASH_EVERY = 5
CRASH_POINTS = [
    "a2:after-call",
    "b2:after-call",
    "join:before-call",
    "a2:before-call",
    "b2:before-call",
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def service() -> Iterator[CounterService]:
    with CounterService() as svc:
        yield svc


def _race_plan(folder: Path, plan_id: str) -> Path:
    prepare_workdir(folder)
    steps: list[dict[str, Any]] = [
        {"id": "a1", "branch": "a", "call": "paysteps:work"},
        {"id": "a2", "branch": "a", "depends_on": ["a1"], "call": "paysteps:charge_card"},
        {"id": "b1", "branch": "b", "call": "paysteps:work"},
        {
            "id": "b2",
            "branch": "b",
            "depends_on": ["b1"],
            "action": "publish",
            "run": f"{PY} paysteps.py publish",
            "probe": f"{PY} paysteps.py probe",
        },
        {"id": "join", "depends_on": ["a2", "b2"], "call": "paysteps:send_invoice"},
    ]
    return write_plan(folder, {"plan_id": plan_id, "steps": steps})


def test_two_runners_at_once_never_repeat_an_action(
    prefect_server: str, tmp_path: Path, ledger_url: str, service: CounterService
) -> None:
    from prefect_waymark.ledger import SqlLedger

    backend = "sqlite" if ledger_url.startswith("sqlite") else "postgresql"
    url = ledger_url
    for i in range(REPS):
        _race_plan(tmp_path / f"rep{i:02d}", f"race-{i:02d}")
    SqlLedger(url).close()  # create the tables once, before the race
    env = dict(os.environ, WAYMARK_TEST_SERVICE=service.url, PYTHONPATH=str(ROOT))
    env.pop("WAYMARK_TEST_KILL_AT", None)
    env.pop("WAYMARK_TEST_NO_PROBES", None)
    # Every CRASH_EVERY-th repetition starts from a runner killed inside an action, so the two
    # runners race to take over its in_progress step and reconcile its open intent.
    crashed = 0
    for i in range(0, REPS, CRASH_EVERY):
        rep = tmp_path / f"rep{i:02d}"
        point = CRASH_POINTS[(i // CRASH_EVERY) % len(CRASH_POINTS)]
        kill_env = dict(env, WAYMARK_TEST_KILL_AT=point, WAYMARK_TEST_KILL_LOG=str(rep / "k.log"))
        proc = subprocess.run(
            [WAYMARK, "run", str(rep / "plan.yaml"), "--ledger", url],
            cwd=rep,
            env=kill_env,
            capture_output=True,
            start_new_session=True,
            timeout=300,
        )
        assert proc.returncode == -signal.SIGKILL, proc.stdout[-3000:]
        assert (rep / "k.log").read_text().split() == [point]
        crashed += 1
    logs = {who: open(tmp_path / f"{who}.log", "w") for who in ("r1", "r2")}
    procs = {
        who: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests._support.race_worker",
                str(tmp_path),
                url,
                who,
                str(REPS),
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for who, log in logs.items()
    }
    for who, proc in procs.items():
        rc = proc.wait(timeout=900)
        logs[who].close()
        assert rc == 0, (tmp_path / f"{who}.log").read_text()[-4000:]
    codes = {who: json.loads((tmp_path / f"codes-{who}.json").read_text()) for who in procs}

    overlaps: list[str] = []
    completed = shared_reps = taken_over = 0
    with SqlLedger(url, create=False) as led:
        for i in range(REPS):
            plan_id = f"race-{i:02d}"
            events = led.events(plan_id)
            overlaps += [f"{plan_id}: {p}" for p in branch_overlaps(events)]
            states = led.step_states(plan_id)
            if len(states) == 5 and all(st.status == "completed" for st in states.values()):
                completed += 1
            starters = {e.run_id for e in events if e.kind == "step_started"}
            shared_reps += len(starters) >= 2 + (i % CRASH_EVERY == 0)
            taken_over += sum(e.kind == "step_interrupted" for e in events)
            assert [r.state for r in led.receipts(plan_id)] == ["applied"] * 3
            assert all(not st.open_actions for st in states.values())
    dups = service.duplicates()
    calls = sum(service.counts().values())
    finals = [c["code"] for who in codes for c in codes[who]]
    runs = sum(c["runs"] for who in codes for c in codes[who])
    print(
        f"\nconcurrency ({backend}): {REPS} repetitions x 2 runners ({crashed} starting from a "
        f"runner killed inside an action; {taken_over} steps taken over), flow runs {runs}, "
        f"calls {calls}, duplicate calls {len(dups)}, branch overlaps {len(overlaps)}, plans "
        f"completed {completed}/{REPS}, repetitions where both runners ran steps "
        f"{shared_reps}/{REPS}, final exit codes {sorted(set(finals))}"
    )
    assert dups == {}
    assert overlaps == []
    assert calls == 3 * REPS
    assert completed == REPS
    assert finals == [0] * (2 * REPS)
    assert taken_over >= crashed  # a kill can leave both branches in_progress
