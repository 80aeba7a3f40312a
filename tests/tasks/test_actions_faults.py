"""Fault injection: SIGKILL the ``waymark run`` runner (its whole process group) at every step
boundary and inside every irreversible action, then resume; count calls per idempotency key on a
real HTTP service on 127.0.0.1.

A 20-step chain with three actions: s05 (``ctx.action`` with-form), s11 (a ``run:`` step with
``action:``/``probe:``) and s16 (``ctx.action`` decorator form). Kill points live in the step code
(tests/_support/action_steps.py): ``sNN:begin`` at the start of each step body (just after the step
was claimed: the boundary), and inside each action ``before-call`` (intent written, no call yet),
``after-call`` (called, no receipt yet) and, for the ``call:`` actions, ``after-receipt``. Each
kill is followed by a resume that must get past it; the kills are chained, so the runner resumed
after one kill point is the one killed at the next.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.action_plans import ACTION_STEPS, action_keys, branch_overlaps, twenty_step_plan
from tests._support.helpers import WAYMARK, run_cli
from tests._support.http_counter import CounterService

KILLED = -signal.SIGKILL


@pytest.fixture
def service() -> Iterator[CounterService]:
    with CounterService() as svc:
        yield svc


def _run(plan: Path, service: CounterService, *, kill_at: str | None, probes: bool) -> int:
    """One ``waymark run`` in its own process group; returns its exit status (-9 if killed)."""
    env = dict(os.environ)
    env.update(
        WAYMARK_TEST_SERVICE=service.url,
        WAYMARK_TEST_KILL_LOG=str(plan.parent / "kills.log"),
    )
    env.pop("WAYMARK_TEST_KILL_AT", None)
    env.pop("WAYMARK_TEST_NO_PROBES", None)
    if kill_at:
        env["WAYMARK_TEST_KILL_AT"] = kill_at
    if not probes:
        env["WAYMARK_TEST_NO_PROBES"] = "1"
    log = plan.parent / "runs.log"
    with open(log, "a") as out:
        out.write(f"\n=== waymark run (kill at {kill_at}) ===\n")
        out.flush()
        proc = subprocess.Popen(
            [WAYMARK, "run", str(plan)],
            cwd=plan.parent,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError("runner hung:\n" + log.read_text()[-4000:]) from None


def _last_kill(plan: Path) -> str | None:
    path = plan.parent / "kills.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return lines[-1] if lines else None


def _status(plan: Path) -> dict[str, Any]:
    proc = run_cli("status", str(plan), "--json")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _events(plan: Path, plan_id: str) -> list[Any]:
    from prefect_waymark.ledger import SqlLedger

    with SqlLedger(f"sqlite:///{plan.parent / '.waymark' / 'ledger.db'}", create=False) as led:
        return led.events(plan_id)


def _kill_points() -> list[str]:
    points = []
    for i in range(1, 21):
        sid = f"s{i:02d}"
        kind = ACTION_STEPS.get(sid)
        if kind == "publish":  # a run: step: its command is the action (claimed first)
            points += [f"{sid}:before-call", f"{sid}:after-call"]
        elif kind:
            points += [
                f"{sid}:{p}" for p in ("begin", "before-call", "after-call", "after-receipt")
            ]
        else:
            points.append(f"{sid}:begin")
    return points


def test_sigkill_everywhere_with_probes_completes_without_duplicates(
    prefect_server: str, tmp_path: Path, service: CounterService
) -> None:
    plan = twenty_step_plan(tmp_path, "faults-probes", probes=True)
    keys = action_keys("faults-probes")
    points = _kill_points()
    tried = resumed = 0
    duplicates_seen: dict[str, int] = {}
    for n, point in enumerate(points):
        rc = _run(plan, service, kill_at=point, probes=True)
        assert rc == KILLED, f"kill point {point}: runner exited {rc}, not killed"
        assert _last_kill(plan) == point
        tried += 1
        if n > 0:
            resumed += 1  # the resume after the previous kill got past it, up to this point
        duplicates_seen.update(service.duplicates())
        assert duplicates_seen == {}, f"duplicate calls after kill at {point}"
    rc = _run(plan, service, kill_at=None, probes=True)
    assert rc == 0, (tmp_path / "runs.log").read_text()[-4000:]
    resumed += 1
    duplicates_seen.update(service.duplicates())
    print(
        f"\nfault injection (probes): kill points tried {tried}, duplicates found "
        f"{len(duplicates_seen)}, resumes succeeded {resumed}/{tried}"
    )
    assert duplicates_seen == {}
    assert service.counts() == dict.fromkeys(keys.values(), 1)
    doc = _status(plan)
    assert doc["complete"] is True
    receipts = {s["id"]: s["receipts"] for s in doc["steps"] if s["receipts"]}
    assert sorted(receipts) == sorted(keys)
    for sid, key in keys.items():
        (r,) = receipts[sid]
        assert r["key"] == key and r["outcome"] == "applied" and r["by"]
        # The after-call kill left an intent without a receipt: the probe asked the service.
        assert r["source"] == "probe"
    events = _events(plan, "faults-probes")
    assert branch_overlaps(events) == []
    interrupted = [e for e in events if e.kind == "step_interrupted"]
    assert len(interrupted) == tried  # every kill left a step in_progress; each was taken over


def test_sigkill_inside_actions_without_probes_stops_for_review_never_repeats(
    prefect_server: str, tmp_path: Path, service: CounterService
) -> None:
    plan = twenty_step_plan(tmp_path, "faults-review", probes=False)
    keys = action_keys("faults-review")
    points = [p for p in _kill_points() if p.endswith(("before-call", "after-call"))]
    assert len(points) == 6
    tried = resumed = reviews = 0
    for point in points:
        sid = point.split(":")[0]
        rc = _run(plan, service, kill_at=point, probes=False)
        assert rc == KILLED and _last_kill(plan) == point
        tried += 1
        before = service.counts()
        rc = _run(plan, service, kill_at=None, probes=False)
        assert rc == 4, f"after kill at {point}: exit {rc}"
        assert service.counts() == before, f"{point}: the resume called the service again"
        (item,) = _status(plan)["needs_review"]
        assert item["step"] == sid and item["reason"].startswith("outcome unknown")
        resumed += 1
        reviews += 1
        # A person checks the business system and records what happened.
        outcome = "--applied" if before.get(keys[sid], 0) == 1 else "--not-applied"
        rec = run_cli("receipt", str(plan), sid, outcome, "--note", "checked the service")
        assert rec.returncode == 0, rec.stderr
        assert service.duplicates() == {}
    rc = _run(plan, service, kill_at=None, probes=False)
    assert rc == 0, (tmp_path / "runs.log").read_text()[-4000:]
    print(
        f"\nfault injection (no probes): kill points tried {tried}, duplicates found "
        f"{len(service.duplicates())}, resumes ended at needs_review 'outcome unknown' "
        f"{reviews}/{tried}, completed after a person's receipt: yes"
    )
    assert resumed == tried
    assert service.counts() == dict.fromkeys(keys.values(), 1)
    doc = _status(plan)
    assert doc["complete"] is True
    sources = {s["id"]: s["receipts"][0]["source"] for s in doc["steps"] if s["receipts"]}
    # after-call kills were recorded by a person; the released before-call ones re-ran later.
    assert sources == dict.fromkeys(keys, "person")
    assert branch_overlaps(_events(plan, "faults-review")) == []
