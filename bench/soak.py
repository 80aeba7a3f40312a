"""Soak: a plan's six weeks in minutes — three executors, one PostgreSQL ledger, random kills.

Run: ``.venv/bin/python bench/soak.py [--runs 100] [--seed 11] [--own-pg [--pg-restart]]
[--keep] [--json]``

Three folders hold copies of one plan file whose ledger and result storage are pinned
(``ledger: {env: SOAK_LEDGER_URL}``, ``results: {env: SOAK_RESULTS}``): folder A is a flow run's
(``waymark run``), folders B and C are two agents' (``waymark next``/``start``/``done``). The plan
has code steps, two agent steps, an irreversible ``action:`` (``publish``) with a probe, and a file
state ref. A seeded random driver does ``--runs`` operations, each one of:

- a flow run in A (``--max-steps`` 1-3 or all), SIGKILLed at a step boundary (step begun, output
  written, before the action's effect, after the effect before its receipt) or at a random time;
- an agent's turn in B or C (``next``, ``start``, ``done``), SIGKILLed at a random time;
- ``waymark rerun`` of a completed step; an output edited in a folder; the state ref changed;
- a plan edit in all three copies: a step added, one renamed (``waymark rename-step``, the
  definition changed with it) or one removed;
- with ``--own-pg --pg-restart``: a flow run during which the private PostgreSQL cluster (initdb
  and pg_ctl in a temporary folder) is restarted.

Every stop for review is answered (``waymark review --accept`` or ``--rerun``; an action whose
outcome is unknown by ``--receipt``, from the business system's truth). After every operation the
invariants are checked (:func:`check_invariants`):

1. no action applied twice: each idempotency key's effect (``effects.log``) at most once, and no
   more effects than 1 + the reviews that asked to apply it again (its ``action_round``);
2. no completed step stale without saying so: a completed step older than a change of a step it
   depends on (a completion, an edited output accepted) is ``stale`` or in review, or a review
   accepted it since;
3. no step redone without a recorded reason: between two completions of a step, a
   ``step_rerun_requested`` with a reason;
4. a marker for every run: every run that ended has its ``marker_written``; the runs without one
   are no more than the runners killed;
5. ``status`` equals a rebuild from events (the active view against a fold of every event; every
   tenth operation and at the end also ``waymark status --json`` against it).

It prints its counts and the invariants held (``--json``: one JSON object on the last line);
exit 1 if one was broken. ``tests/run/test_soak.py`` runs it with smaller numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
STEPS = Path(__file__).resolve().with_name("soak_steps.py")
WAYMARK = str(Path(sys.executable).with_name("waymark"))
PLAN_ID = "soak"
AGENTS = {"B": "agent-b", "C": "agent-c"}
KILL_POINTS = ("begin", "after-output")
ACTION_KILL_POINTS = ("before-call", "after-call")


@dataclass
class Counts:
    """What the soak did; ``broken`` lists every invariant that failed (empty: all held)."""

    runs: int = 0  # operations of the driver
    flow_runs: int = 0
    checkins: int = 0  # agent turns that recorded a step done
    kills: int = 0  # runners and check-ins SIGKILLed
    kill_points: Counter[str] = field(default_factory=Counter)
    reruns: int = 0
    handoffs: int = 0  # work done in another folder than the last work
    reviews: int = 0  # stops for review answered
    review_reasons: Counter[str] = field(default_factory=Counter)
    unexplained_reviews: list[str] = field(default_factory=list)
    edits: int = 0  # plan edits, outputs edited, refs changed
    plan_edits: Counter[str] = field(default_factory=Counter)
    pg_restarts: int = 0
    effects: int = 0
    completions: int = 0
    checks: int = 0
    broken: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # commands that failed unexpectedly

    def summary(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["kill_points"] = dict(self.kill_points)
        doc["review_reasons"] = dict(self.review_reasons)
        doc["plan_edits"] = dict(self.plan_edits)
        doc["invariants_held"] = not self.broken
        return doc


def _step(sid: str, deps: list[str], **extra: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"id": sid}
    if deps:
        step["depends_on"] = deps
    step.update(extra)
    return step


def _work(sid: str, deps: list[str], out: str | None = None, **extra: Any) -> dict[str, Any]:
    out = out or f"out/{sid}.txt"
    run = f"{sys.executable} {STEPS} work {out}"
    return _step(sid, deps, run=run, outputs=[out], **extra)


def initial_steps() -> list[dict[str, Any]]:
    """fetch -> derive -> publish (the action) -> report -> check (agent); notes (agent) after
    fetch, before publish."""
    py = sys.executable
    return [
        _work("fetch", [], reads=["source"]),
        _work("derive", ["fetch"]),
        _step("notes", ["fetch"], kind="agent", instructions="notes", outputs=["out/notes.txt"]),
        _step(
            "publish",
            ["derive", "notes"],
            action="publish",
            run=f"{py} {STEPS} effect",
            probe=f"{py} {STEPS} probe",
        ),
        _work("report", ["publish"]),
        _step("check", ["report"], kind="agent", instructions="check", outputs=["out/check.txt"]),
    ]  # fmt: skip


class Soak:
    """The driver: the folders, the plan's current steps, the counts; one method per operation."""

    def __init__(
        self,
        base: Path,
        ledger_url: str,
        *,
        seed: int,
        restart_pg: Callable[[], None] | None = None,
        log: Callable[[str], None] = lambda s: None,
    ) -> None:
        self.base = base
        self.ledger_url = ledger_url
        self.rng = random.Random(seed)
        self.restart_pg = restart_pg
        self.log = log
        self.soak_dir = base / "soak"
        self.results = base / "results"
        self.folders = {name: base / name for name in ("A", "B", "C")}
        self.steps = initial_steps()
        self.counts = Counts()
        self.added = 0
        self.last_worker: str | None = None
        self.edited: set[tuple[str, str]] = set()  # (folder, step) outputs the soak edited
        self.review_reruns_of_action = 0
        self.dead_runs = 0  # runners that ended without their marker (killed, PG restarted)
        self.ended_runs: set[str] = set()
        for folder in (self.soak_dir, self.results, *self.folders.values()):
            folder.mkdir(parents=True, exist_ok=True)
        (self.soak_dir / "source.txt").write_text("v0\n")
        self.env = {
            **os.environ,
            "SOAK_DIR": str(self.soak_dir),
            "SOAK_LEDGER_URL": ledger_url,
            "SOAK_RESULTS": str(self.results),
            "WAYMARK_LEDGER_URL": "",
        }
        self.write_plan()
        from prefect_waymark.ledger import open_ledger

        open_ledger(ledger_url, create=True).close()

    # -- the plan file -------------------------------------------------------------------------

    def plan_doc(self) -> dict[str, Any]:
        return {
            "plan_id": PLAN_ID,
            "ledger": {"env": "SOAK_LEDGER_URL"},
            "results": {"env": "SOAK_RESULTS"},
            "state_refs": [
                {"name": "source", "kind": "file", "path": str(self.soak_dir / "source.txt")}
            ],
            "steps": self.steps,
        }

    def write_plan(self) -> None:
        text = yaml.safe_dump(self.plan_doc(), sort_keys=False)
        for folder in self.folders.values():
            (folder / "plan.yaml").write_text(text)

    def plan(self, folder: str) -> str:
        return str(self.folders[folder] / "plan.yaml")

    def step_ids(self) -> list[str]:
        return [s["id"] for s in self.steps]

    def code_steps(self) -> list[dict[str, Any]]:
        return [s for s in self.steps if s.get("kind") != "agent"]

    def to_run(self) -> list[dict[str, Any]]:
        """The code steps a run would start now: not completed (or stale), their needs done."""
        states = self.states()

        def done(sid: str) -> bool:
            st = states.get(sid)
            return st is not None and st.status == "completed" and not st.stale

        return [
            s
            for s in self.code_steps()
            if not done(s["id"]) and all(done(d) for d in s.get("depends_on", []))
        ]

    # -- processes -----------------------------------------------------------------------------

    def cli(
        self, *args: str, folder: str = "A", timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [WAYMARK, *args], cwd=self.folders[folder], env=self.env,
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip

    def spawn(
        self, args: list[str], folder: str, kill_after: float | None, env: dict[str, str]
    ) -> tuple[int, bool, str]:
        """Start ``waymark ARGS`` in its own process group; SIGKILL the group after
        ``kill_after`` seconds if it still runs. Returns (exit code, killed by us, output)."""
        log = self.soak_dir / "last.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [WAYMARK, *args], cwd=self.folders[folder], env=env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        killed = False
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            proc.wait(timeout=60)
        try:  # the step commands it started are in its group: none outlives it
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.returncode, killed, log.read_text(errors="replace")

    def kills_logged(self) -> list[str]:
        path = self.soak_dir / "kills.log"
        return path.read_text().splitlines() if path.exists() else []

    # -- operations ------------------------------------------------------------------------------

    def op_flow_run(self, *, restart_pg: bool = False) -> None:
        """A flow run in folder A: maybe SIGKILLed at a step boundary or a random time."""
        c = self.counts
        env = dict(self.env)
        args = ["run", self.plan("A")]
        if self.rng.random() < 0.5:
            args += ["--max-steps", str(self.rng.randint(1, 3))]
        kill_after = None
        roll = self.rng.random()
        if roll < 0.35:
            step = self.rng.choice(self.to_run() or self.code_steps())
            points = ACTION_KILL_POINTS if step.get("action") else KILL_POINTS
            env["SOAK_KILL_AT"] = f"{step['id']}:{self.rng.choice(points)}"
        elif roll < 0.5 or restart_pg:
            kill_after = self.rng.uniform(0.5, 5.0)
        before = len(self.kills_logged())
        started = self.run_ids()
        if restart_pg:
            assert self.restart_pg is not None
            rc, out = self._run_with_pg_restart(args, env)
            killed = False
        else:
            rc, killed, out = self.spawn(args, "A", kill_after, env)
        c.flow_runs += 1
        new_kills = self.kills_logged()[before:]
        if new_kills or killed:
            c.kills += 1
            c.kill_points.update(new_kills or ["random time"])
        died = rc == -signal.SIGKILL or killed or restart_pg
        new_runs = self.run_ids() - started
        if died:
            self.dead_runs += len(new_runs)
        else:
            self.ended_runs |= new_runs
            if rc not in (0, 1, 2, 3, 4) or "Traceback" in out:
                c.failures.append(f"run exit {rc}: {out[-1500:]}")
        if rc in (0, 1, 3, 4) and "steps run: 0" not in out:
            self._worked("A")
        at = env.get("SOAK_KILL_AT", "")
        self.log(f"run {' '.join(args[2:])} {at} -> {rc}{' killed' if died else ''}")

    def _run_with_pg_restart(self, args: list[str], env: dict[str, str]) -> tuple[int, str]:
        log = self.soak_dir / "last.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [WAYMARK, *args], cwd=self.folders["A"], env=env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        time.sleep(self.rng.uniform(1.0, 3.0))
        assert self.restart_pg is not None
        self.restart_pg()
        self.counts.pg_restarts += 1
        try:
            proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.returncode, log.read_text(errors="replace")

    def op_agent(self) -> None:
        """An agent's turn in B or C: the step ``next`` offers, started and done."""
        c = self.counts
        folder = self.rng.choice(sorted(AGENTS))
        who = AGENTS[folder]
        nxt = self.cli("next", self.plan(folder), "--executor", who, "--json", folder=folder)
        if nxt.returncode not in (0, 3, 4):
            c.failures.append(f"next in {folder} exit {nxt.returncode}: {nxt.stderr[-1500:]}")
            return
        step = json.loads(nxt.stdout).get("step") if nxt.stdout.strip() else None
        if not step:
            self.log(f"next {folder} -> {nxt.returncode} nothing")
            return
        sid = step["id"]
        kill = self.rng.random() < 0.15
        if step.get("status") != "in_progress":
            rc, killed, out = self.spawn(
                ["start", self.plan(folder), sid, "--executor", who], folder,
                self.rng.uniform(0.2, 1.5) if kill and self.rng.random() < 0.5 else None, self.env,
            )  # fmt: skip
            if killed:
                c.kills += 1
                c.kill_points["start"] += 1
                self.log(f"start {folder} {sid} killed")
                return
            if rc != 0:
                self.log(f"start {folder} {sid} -> {rc}: {out[-300:]}")
                if rc not in (2, 3, 4) or "Traceback" in out:
                    c.failures.append(f"start in {folder} exit {rc}: {out[-1500:]}")
                return
        out_rel = (step.get("outputs") or [f"out/{sid}.txt"])[0]
        path = self.folders[folder] / out_rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{sid} by {who} {uuid.uuid4().hex}\n")
        done_args = ["done", self.plan(folder), sid, "--executor", who, "--output", out_rel]
        if step.get("action"):
            key = f"{who}-{sid}-{uuid.uuid4().hex[:8]}"
            done_args += ["--receipt", f"external_id={key}"]
        kill_done = kill and not self.rng.random() < 0.5
        rc, killed, out = self.spawn(
            done_args, folder, self.rng.uniform(0.2, 1.5) if kill_done else None, self.env
        )
        if killed:
            c.kills += 1
            c.kill_points["done"] += 1
            self.log(f"done {folder} {sid} killed")
            return
        if rc != 0:
            self.log(f"done {folder} {sid} -> {rc}: {out[-300:]}")
            if rc not in (2, 3, 4) or "Traceback" in out:
                c.failures.append(f"done in {folder} exit {rc}: {out[-1500:]}")
            return
        c.checkins += 1
        self._worked(folder)
        self.log(f"agent {folder} did {sid}")

    def _worked(self, folder: str) -> None:
        if self.last_worker is not None and self.last_worker != folder:
            self.counts.handoffs += 1
        self.last_worker = folder

    def op_rerun(self) -> None:
        states = self.states()
        done = [s for s in self.step_ids() if states.get(s) and states[s].status == "completed"]
        if not done:
            return
        sid = self.rng.choice(done)
        proc = self.cli("rerun", self.plan("A"), sid, "--reason", "soak: inputs changed")
        if proc.returncode == 0:
            self.counts.reruns += 1
        elif "Traceback" in proc.stderr or proc.returncode != 2:
            self.counts.failures.append(
                f"rerun {sid} exit {proc.returncode}: {proc.stderr[-1500:]}"
            )
        self.log(f"rerun {sid} -> {proc.returncode}")

    def op_edit_output(self) -> None:
        """Someone edits a completed step's output in one folder."""
        folder = self.rng.choice(sorted(self.folders))
        states = self.states()
        cands = [
            (sid, rel)
            for sid in self.step_ids()
            if (st := states.get(sid)) is not None and st.status == "completed"
            for rel in st.outputs
            if (self.folders[folder] / rel).exists()
        ]
        if not cands:
            return
        sid, rel = self.rng.choice(cands)
        with open(self.folders[folder] / rel, "a") as fh:
            fh.write("edited by hand\n")
        self.edited.add((folder, sid))
        self.counts.edits += 1
        self.counts.plan_edits["output edited"] += 1
        self.log(f"edit {folder}/{rel}")

    def op_ref_change(self) -> None:
        src = self.soak_dir / "source.txt"
        src.write_text(f"v{self.rng.randint(1, 10**6)}\n")
        self.counts.edits += 1
        self.counts.plan_edits["ref changed"] += 1
        self.log("ref changed")

    def op_plan_edit(self) -> None:
        kind = self.rng.choice(["add", "add", "rename", "remove"])
        extras = [s for s in self.steps if s["id"].startswith("x")]
        if kind == "add" or not extras:
            self.added += 1
            dep = self.rng.choice(self.code_steps())["id"]
            self.steps.append(_work(f"x{self.added}", [dep]))
            self.write_plan()
            self.counts.plan_edits["step added"] += 1
        elif kind == "remove":
            leaves = [
                s for s in extras if not any(s["id"] in t.get("depends_on", []) for t in self.steps)
            ]
            if not leaves:
                return
            victim = self.rng.choice(leaves)
            self.steps.remove(victim)
            self.write_plan()
            self.counts.plan_edits["step removed"] += 1
        else:
            step = self.rng.choice(extras)
            old = step["id"]
            self.added += 1
            new = f"x{self.added}"
            # renamed and its command changed: the case `waymark rename-step` is for
            renamed = _work(new, step.get("depends_on", []), out=step["outputs"][0])
            renamed["retries"] = 1
            self.steps[self.steps.index(step)] = renamed
            for t in self.steps:
                t["depends_on"] = [new if d == old else d for d in t.get("depends_on", [])] or None
                if t["depends_on"] is None:
                    del t["depends_on"]
            self.write_plan()
            proc = self.cli(
                "rename-step", self.plan("A"), "--from", old, "--to", new, "--by", "soak"
            )
            if proc.returncode not in (0, 2) or "Traceback" in proc.stderr:
                self.counts.failures.append(
                    f"rename-step exit {proc.returncode}: {proc.stderr[-1500:]}"
                )
            self.counts.plan_edits[
                "step renamed" if proc.returncode == 0 else "renamed, no history"
            ] += 1
            self.log(f"rename {old} -> {new}: {proc.returncode}")
        self.counts.edits += 1

    def answer_reviews(self) -> None:
        """Answer every stop for review, as a person would."""
        for _ in range(10):
            states = self.states()
            waiting = [
                s for s in self.step_ids() if states.get(s) and states[s].status == "needs_review"
            ]
            if not waiting:
                return
            sid = waiting[0]
            st = states[sid]
            reason = st.review_reason or ""
            self.counts.reviews += 1
            self.counts.review_reasons[_reason_kind(reason)] += 1
            if "output changed" in reason and not any(s == sid for _, s in self.edited):
                self.counts.unexplained_reviews.append(f"{sid}: {reason}")
            args = ["review", self.plan("A"), "--step", sid, "--by", "soak"]
            if st.open_actions:
                key = next(iter(st.open_actions))
                applied = key in self.effects()
                args += ["--receipt", "applied" if applied else "not-applied"]
                if applied:
                    args += ["--external-id", key]
            elif self.rng.random() < 0.5:
                args.append("--accept")
            else:
                args.append("--rerun")
                if sid == "publish" and st.receipts:
                    self.review_reruns_of_action += 1
            proc = self.cli(*args)
            self.log(f"review {sid} ({reason[:60]}) {args[-1]} -> {proc.returncode}")
            if proc.returncode != 0:
                self.counts.failures.append(
                    f"review {sid} exit {proc.returncode}: {proc.stderr[-1500:]}"
                )
                return
            self.edited = {(f, s) for f, s in self.edited if s != sid}

    def op_pg_restart(self) -> None:
        self.op_flow_run(restart_pg=True)

    # -- the ledger ------------------------------------------------------------------------------

    @contextmanager
    def ledger(self) -> Iterator[Any]:
        from prefect_waymark.errors import LedgerNotFound
        from prefect_waymark.ledger import open_ledger

        for attempt in range(30):  # a PostgreSQL cluster restarting answers again within seconds
            try:
                led = open_ledger(self.ledger_url, create=False)
                break
            except LedgerNotFound:
                raise
            except Exception:
                if attempt == 29:
                    raise
                time.sleep(1)
        try:
            yield led
        finally:
            led.close()

    def states(self) -> dict[str, Any]:
        with self.ledger() as led:
            return dict(led.step_states(PLAN_ID))

    def run_ids(self) -> set[str]:
        with self.ledger() as led:
            return {e.run_id for e in led.events(PLAN_ID, kinds=["run_started"]) if e.run_id}

    def effects(self) -> list[str]:
        path = self.soak_dir / "effects.log"
        return path.read_text().splitlines() if path.exists() else []

    # -- the soak --------------------------------------------------------------------------------

    def one(self, i: int, pg_restart_at: int | None) -> None:
        ops: list[tuple[float, Callable[[], None]]] = [
            (36, self.op_flow_run), (26, self.op_agent), (9, self.op_rerun),
            (6, self.op_edit_output), (5, self.op_ref_change), (8, self.op_plan_edit),
        ]  # fmt: skip
        if i == pg_restart_at:
            op: Callable[[], None] = self.op_pg_restart
        else:
            op = self.rng.choices([o for _, o in ops], weights=[w for w, _ in ops])[0]
        op()
        self.counts.runs += 1
        self.answer_reviews()
        self.counts.broken += [
            f"after op {i} ({op.__name__}): {b}" for b in check_invariants(self, full=i % 10 == 9)
        ]

    def run(self, runs: int, *, pg_restart_at: int | None = None) -> Counts:
        for i in range(runs):
            self.one(i, pg_restart_at)
            if self.counts.broken:
                break
        if not self.counts.broken:  # the end: every step done, and one last full check
            for _ in range(12):
                if self._complete():
                    break
                self.op_agent() if self._agent_ready() else self.op_flow_run()
                self.answer_reviews()
            self.counts.broken += check_invariants(self, full=True)
        self.counts.effects = len(self.effects())
        with self.ledger() as led:
            self.counts.completions = len(led.events(PLAN_ID, kinds=["step_completed"]))
        return self.counts

    def _complete(self) -> bool:
        states = self.states()
        return all(
            (st := states.get(s)) is not None and st.status == "completed" and not st.stale
            for s in self.step_ids()
        )

    def _agent_ready(self) -> bool:
        states = self.states()
        for s in self.steps:
            st = states.get(s["id"])
            if s.get("kind") == "agent" and (st is None or st.status != "completed" or st.stale):
                if all((d := states.get(x)) is not None and d.status == "completed" and not d.stale
                       for x in s.get("depends_on", [])):  # fmt: skip
                    return True
        return False


def _reason_kind(reason: str) -> str:
    low = reason.lower()
    for word, kind in (
        ("output changed", "output edited"), ("applied", "applied action upstream changed"),
        ("definition", "definition changed"), ("ref", "ref changed"),
        ("changed", "upstream changed"),
        ("result", "result lost"), ("intent", "action outcome unknown"),
    ):  # fmt: skip
        if word in low:
            return kind
    return reason[:40] or "?"


# -- the invariants ------------------------------------------------------------------------------


def check_invariants(soak: Soak, *, full: bool = False) -> list[str]:
    """Every invariant the soak promises, on the ledger and the side-effect files: the broken
    ones, each said in a line (empty: all held). ``full``: ``waymark status --json`` too."""
    soak.counts.checks += 1
    with soak.ledger() as led:
        events = led.events(PLAN_ID)
        states = dict(led.step_states(PLAN_ID))
        rebuilt = dict(led.rebuild(PLAN_ID))
    history = _History(events)
    return [
        *_applied_twice(soak, states),
        *_stale_unsaid(soak, states, history),
        *history.redone,
        *_runs_without_marker(soak, events),
        *_view_not_rebuilt(states, rebuilt),
        *(_status_not_rebuilt(soak, rebuilt) if full else []),
    ]


def _applied_twice(soak: Soak, states: dict[str, Any]) -> list[str]:
    """1. No action applied twice: a key's effect at most once; no more effects than 1 + the
    reviews that asked for the action again."""
    broken = []
    effects = soak.effects()
    twice = [k for k, n in Counter(effects).items() if n > 1]
    if twice:
        broken.append(f"action applied twice under one key: {twice}")
    publish = states.get("publish")
    rounds = publish.action_round if publish is not None else 0
    if len(effects) > 1 + rounds:
        broken.append(f"{len(effects)} effects, allowed 1 + {rounds} review reruns: {effects}")
    if rounds > soak.review_reruns_of_action:
        broken.append(f"action_round {rounds} > {soak.review_reruns_of_action} reviews asked it")
    return broken


class _History:
    """The step events read in order, each under the id its step has now (renames followed):
    when each step last changed and settled, and the completions with no rerun before them."""

    def __init__(self, events: list[Any]) -> None:
        self.now: dict[str, str] = {}  # old id -> new id
        self.changed: dict[str, int] = {}  # step -> seq of its last completion, edit accepted
        self.settled: dict[str, int] = {}  # step -> seq of its last completion, accepted review
        self.redone: list[str] = []  # 3. steps completed again with no recorded reason
        completed: dict[str, bool] = {}  # completed, and no rerun recorded since
        for ev in events:
            if ev.step_id is None:
                continue
            if ev.kind == "step_renamed" and ev.data.get("to_step"):
                self.now[ev.step_id] = ev.data["to_step"]
                continue
            sid, seq = self.current(ev.step_id), ev.seq or 0
            if ev.kind == "step_completed":
                if completed.get(sid):
                    self.redone.append(f"{sid} completed again (seq {seq}), no rerun recorded")
                completed[sid] = True
                self.changed[sid] = self.settled[sid] = seq
            elif ev.kind == "step_rerun_requested":
                if not (ev.data.get("reason") or ev.data.get("review_reason")):
                    self.redone.append(f"rerun of {sid} (seq {seq}) without a reason")
                completed[sid] = False
            elif ev.kind == "step_review_accepted":
                self.settled[sid] = seq
                if ev.data.get("outputs"):  # an edited output accepted: the step changed
                    self.changed[sid] = seq

    def current(self, sid: str) -> str:
        while sid in self.now:
            sid = self.now[sid]
        return sid


def _stale_unsaid(soak: Soak, states: dict[str, Any], history: _History) -> list[str]:
    """2. No completed step stale without saying so: a completed step older than a change of a
    step it needs is stale, in review, or a review accepted it since."""
    broken = []
    for spec in soak.steps:
        sid = spec["id"]
        st = states.get(sid)
        if st is None or st.status != "completed" or st.stale or st.skipped:
            continue
        mine = history.settled.get(sid, 0)
        for dep in spec.get("depends_on", []):
            if history.changed.get(dep, 0) > mine:
                broken.append(
                    f"{sid} completed, not stale, but {dep} changed after it "
                    f"(seq {history.changed[dep]} > {mine})"
                )
    return broken


def _runs_without_marker(soak: Soak, events: list[Any]) -> list[str]:
    """4. A marker for every run that ended; runs without one no more than the runs that died
    (SIGKILLed, or their PostgreSQL restarted under them)."""
    broken = []
    started = {e.run_id for e in events if e.kind == "run_started"}
    finished = {e.run_id for e in events if e.kind == "run_finished"}
    marked = {e.run_id for e in events if e.kind == "marker_written"}
    if finished - marked:
        broken.append(f"runs finished without a marker: {sorted(finished - marked)}")
    if soak.ended_runs - marked:
        broken.append(f"runs that ended without a marker: {sorted(soak.ended_runs - marked)}")
    if len(started - marked) > soak.dead_runs:
        broken.append(f"{len(started - marked)} runs without a marker, {soak.dead_runs} died")
    return broken


def _view_not_rebuilt(states: dict[str, Any], rebuilt: dict[str, Any]) -> list[str]:
    """5. The active view (what ``status`` reads) equals a fold of every event."""
    if states == rebuilt:
        return []
    diff = sorted(k for k in set(states) | set(rebuilt) if states.get(k) != rebuilt.get(k))
    return [f"active view differs from a rebuild from events: {diff}"]


def _status_not_rebuilt(soak: Soak, rebuilt: dict[str, Any]) -> list[str]:
    """5. ``waymark status --json`` says what a rebuild from events says, step by step."""
    proc = soak.cli("status", soak.plan("A"), "--json")
    if proc.returncode != 0:
        return [f"status exit {proc.returncode}: {proc.stderr[-800:]}"]
    steps = json.loads(proc.stdout)["steps"]
    shown = {s["id"]: (s["status"], bool(s.get("stale"))) for s in steps}
    want = {}
    for sid in soak.step_ids():
        st = rebuilt.get(sid)
        want[sid] = (st.status.value, bool(st.stale)) if st is not None else ("pending", False)
    return [] if shown == want else [f"status {shown} != rebuild {want}"]


# -- main ----------------------------------------------------------------------------------------


def _own_cluster() -> Any:
    sys.path.insert(0, str(ROOT))
    from tests._support import postgres as pg

    bindir = pg.find_bindir()
    if bindir is None:
        raise SystemExit("--own-pg: no initdb/pg_ctl found")
    return pg.ThrowawayCluster(bindir)


def _create_db(admin_url: str) -> str:
    import psycopg

    name = f"waymark_soak_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def _drop_db(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--own-pg", action="store_true", help="a private PostgreSQL cluster")
    ap.add_argument("--pg-restart", action="store_true", help="restart it once, during a run")
    ap.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--keep", action="store_true", help="keep the folders (printed)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.pg_restart and not args.own_pg:
        ap.error("--pg-restart needs --own-pg (the shared server is not ours to restart)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_resume import _server

    stop_server = _server()
    cluster = _own_cluster() if args.own_pg else None
    base = Path(tempfile.mkdtemp(prefix="waymark-soak-"))
    dbs: list[str] = []
    started = time.perf_counter()
    try:
        if cluster is not None:
            server = cluster.start()
            admin, server_url = server.admin_url, server.server_url
        else:
            admin, server_url = (
                args.pg_url,
                "postgresql+psycopg://" + args.pg_url.split("://", 1)[1].rsplit("/", 1)[0],
            )
        db = _create_db(admin)
        dbs.append(db)
        soak = Soak(
            base, f"{server_url}/{db}", seed=args.seed,
            restart_pg=cluster.restart if cluster is not None else None,
            log=print if args.verbose else (lambda s: None),
        )  # fmt: skip
        restart_at = args.runs // 2 if args.pg_restart else None
        counts = soak.run(args.runs, pg_restart_at=restart_at)
    finally:
        if cluster is None and dbs:
            _drop_db(admin, dbs[0])
        if cluster is not None:
            cluster.stop()
        stop_server()
        if args.keep:
            print(f"folders kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    doc = counts.summary()
    doc["seconds"] = round(time.perf_counter() - started, 1)
    doc["seed"] = args.seed
    print(
        f"soak seed {args.seed}: {counts.runs} runs ({counts.flow_runs} flow runs, "
        f"{counts.checkins} check-ins), {counts.kills} kills, {counts.reruns} reruns, "
        f"{counts.handoffs} hand-offs, {counts.reviews} reviews, {counts.edits} edits, "
        f"{counts.pg_restarts} PostgreSQL restarts; {counts.effects} action effects, "
        f"{counts.completions} completions, {counts.checks} checks, {doc['seconds']} s"
    )
    print(f"kill points: {dict(counts.kill_points)}")
    print(f"reviews: {dict(counts.review_reasons)}; edits: {dict(counts.plan_edits)}")
    if counts.unexplained_reviews:
        print(f"reviews nobody caused: {counts.unexplained_reviews}")
    for f in counts.failures:
        print(f"FAILED COMMAND: {f}")
    print("invariants: " + ("all held" if not counts.broken else "BROKEN"))
    for b in counts.broken:
        print(f"  {b}")
    if args.json:
        print(json.dumps(doc))
    return 1 if counts.broken else 0


if __name__ == "__main__":
    sys.exit(main())
