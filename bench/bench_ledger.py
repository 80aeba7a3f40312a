"""Ledger benchmark: events appended per second (single writer) and ``waymark status`` wall time.

Run: ``.venv/bin/python bench/bench_ledger.py [--events N] [--runs N] [--no-postgres] [--json]``

Figures printed:

* events/s appended through :class:`SqlLedger` by one writer, on SQLite (WAL) and PostgreSQL,
  for step events (``step_started``/``step_completed`` pairs: transition check, the branch's
  in_progress slot, projection update) and for plain events; each against the naive alternative
  measured in the same run: one bare ``INSERT`` per transaction through the raw driver.
  Goals: >= 2,000 step events/s on SQLite, and >= 0.2x the bare INSERT rate.
* whole-process wall time of ``waymark status PLAN --json`` on a plan whose ledger holds 10,000
  events (Python start-up counts; median of several runs), against ``python -c pass`` and
  ``python -c "import prefect"`` measured in the same run, interleaved. Goals: <= 0.5 s, and
  <= 5x the bare ``python -c pass`` start-up.

``--json``: the last line of stdout is one JSON object: ``append_ratio_vs_bare_insert``,
``status_json_vs_bare_python`` and the figures they come from (rates per second, seconds).

The machine has 2 cores and is noisy: read the ratios, not the third digit.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from bytecode import compile_package  # beside this file

from prefect_waymark.ledger import SqlLedger, default_ledger_url
from prefect_waymark.plan.loader import load_plan

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
WAYMARK = str(Path(sys.executable).parent / "waymark")


# -- databases --------------------------------------------------------------------------------
@contextmanager
def pg_database() -> Iterator[tuple[str, str] | None]:
    """A fresh PostgreSQL database: (SQLAlchemy URL, libpq URL); ``None`` if PG is not up."""
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as conn:
            name = f"waymark_bench_{uuid.uuid4().hex[:10]}"
            conn.execute(f'CREATE DATABASE "{name}"')
    except Exception as exc:  # noqa: BLE001 - report and go on without PostgreSQL
        print(f"(PostgreSQL not available: {exc})")
        yield None
        return
    try:
        yield (
            f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}",
            f"postgresql://postgres@127.0.0.1:5432/{name}",
        )
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- appends ----------------------------------------------------------------------------------
def _rate(n: int, fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t0)


def append_step_events(url: str, n: int, plan: str) -> float:
    """``n`` step events: started/completed pairs over fresh steps of one branch."""
    led = SqlLedger(url)
    try:

        def go() -> None:
            for i in range(n // 2):
                sid = f"s{i}"
                led.record(plan, "step_started", step_id=sid, branch="main", run_id="r1")
                led.record(
                    plan, "step_completed", step_id=sid, branch="main", run_id="r1", cached=False
                )

        return _rate(n // 2 * 2, go)
    finally:
        led.close()


def append_plain_events(url: str, n: int, plan: str) -> float:
    led = SqlLedger(url)
    try:

        def go() -> None:
            for i in range(n):
                led.record(plan, "drift", run_id="r1", i=i)  # a plain event (no step)

        return _rate(n, go)
    finally:
        led.close()


_NAIVE_TABLE = "(seq {pk}, plan_id TEXT, kind TEXT, at TEXT, data TEXT)"


def naive_sqlite(path: Path, n: int) -> float:
    """The floor: one bare INSERT per transaction, WAL, synchronous=NORMAL, like the ledger."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE ev " + _NAIVE_TABLE.format(pk="INTEGER PRIMARY KEY"))

    def go() -> None:
        for i in range(n):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO ev (plan_id, kind, at, data) VALUES (?, ?, ?, ?)",
                ("bench", "note", "2026-01-01T00:00:00+00:00", json.dumps({"i": i})),
            )
            conn.execute("COMMIT")

    try:
        return _rate(n, go)
    finally:
        conn.close()


def naive_pg(libpq_url: str, n: int, table: str) -> float:
    import psycopg

    with psycopg.connect(libpq_url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} " + _NAIVE_TABLE.format(pk="BIGSERIAL PRIMARY KEY"))

        def go() -> None:
            for i in range(n):
                with conn.transaction():
                    conn.execute(
                        f"INSERT INTO {table} (plan_id, kind, at, data) VALUES (%s, %s, %s, %s)",
                        ("bench", "note", "2026-01-01T00:00:00+00:00", json.dumps({"i": i})),
                    )

        return _rate(n, go)


def bench_appends(n: int, repeat: int, use_pg: bool) -> dict[str, float]:
    print(f"\n== appends, single writer, {n} events each, median of {repeat} (interleaved) ==")
    print(f"{'backend':<12}{'kind':<34}{'events/s':>10}{'naive/s':>10}{'ratio':>8}")
    med = statistics.median
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="waymark-bench-") as tmp:
        d = Path(tmp)
        naive, step, plain = [], [], []
        for r in range(repeat):
            naive.append(naive_sqlite(d / f"naive{r}.db", n))
            step.append(append_step_events(f"sqlite:///{d / f'step{r}.db'}", n, "bench"))
            plain.append(append_plain_events(f"sqlite:///{d / f'plain{r}.db'}", n, "bench"))
        _row("sqlite", "step events (started/completed)", med(step), med(naive))
        _row("sqlite", "plain events", med(plain), med(naive))
        out = {
            "append_ratio_vs_bare_insert": med(step) / med(naive),
            "sqlite_step_events_per_s": med(step),
            "sqlite_plain_events_per_s": med(plain),
            "sqlite_bare_insert_per_s": med(naive),
        }
        goal = "met" if med(step) >= 2000 else "NOT met"
        print(f"goal >= 2,000 step events/s on SQLite: {goal} ({med(step):,.0f}/s)")
        ratio = out["append_ratio_vs_bare_insert"]
        print(
            f"goal >= 0.2x the bare INSERT: {'met' if ratio >= 0.2 else 'NOT met'} ({ratio:.2f}x)"
        )
    if not use_pg:
        return out
    with pg_database() as pg:
        if pg is None:
            return out
        url, libpq = pg
        naive, step, plain = [], [], []
        for r in range(repeat):
            naive.append(naive_pg(libpq, n, f"ev{r}"))
            step.append(append_step_events(url, n, f"bench-{r}"))
            plain.append(append_plain_events(url, n, f"bench-plain-{r}"))
        _row("postgresql", "step events (started/completed)", med(step), med(naive))
        _row("postgresql", "plain events", med(plain), med(naive))
        out |= {
            "pg_step_events_per_s": med(step),
            "pg_plain_events_per_s": med(plain),
            "pg_bare_insert_per_s": med(naive),
        }
    return out


def _row(backend: str, kind: str, rate: float, naive: float) -> None:
    print(f"{backend:<12}{kind:<34}{rate:>10,.0f}{naive:>10,.0f}{rate / naive:>8.2f}")


# -- status -----------------------------------------------------------------------------------
def build_ledger(folder: Path, n_events: int, n_steps: int) -> Path:
    """A plan of ``n_steps`` steps whose default ledger holds exactly ``n_events`` events."""
    steps = [
        {"id": f"step-{i:03d}", "run": f"echo {i}", "owner": "bench"}
        | ({"depends_on": [f"step-{i - 1:03d}"]} if i else {})
        for i in range(n_steps)
    ]
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump({"plan_id": "bench-status", "steps": steps}, sort_keys=False))
    spec = load_plan(path)
    hashes = spec.step_hashes()
    led = SqlLedger(default_ledger_url(folder))
    written = 0
    run = 0
    try:
        # Runs of the whole plan: run_started, then started/completed per step, then run_finished,
        # then an explicit rerun of every step; repeated until the event budget is spent.
        while written < n_events:
            run += 1
            rid = f"run-{run}"
            led.record(spec.plan_id, "run_started", run_id=rid, step_hashes=hashes)
            written += 1
            for s in spec.steps:
                if written + 3 > n_events:
                    break
                common = {"step_id": s.id, "branch": s.branch, "run_id": rid}
                if run > 1:
                    led.record(spec.plan_id, "step_rerun_requested", reason="bench", **common)
                    written += 1
                led.record(spec.plan_id, "step_started", def_hash=hashes[s.id], **common)
                led.record(spec.plan_id, "step_completed", def_hash=hashes[s.id], **common)
                written += 2
            if written < n_events:
                led.record(spec.plan_id, "run_finished", run_id=rid, result="stopped")
                written += 1
        assert led.count_events(spec.plan_id) == n_events, led.count_events(spec.plan_id)
    finally:
        led.close()
    return path


def _once(cmd: list[str]) -> float:
    env = dict(os.environ, PREFECT_API_URL="http://127.0.0.1:9/api")  # nothing listens there
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 4):
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr}")
    return took


def bench_status(n_events: int, n_steps: int, runs: int) -> dict[str, float]:
    print(f"\n== waymark status --json, {n_events} events, {n_steps} steps, median of {runs} ==")
    with tempfile.TemporaryDirectory(prefix="waymark-bench-") as tmp:
        plan = build_ledger(Path(tmp), n_events, n_steps)
        doc = json.loads(
            subprocess.run(
                [WAYMARK, "status", str(plan), "--json"], capture_output=True, text=True
            ).stdout
        )
        assert len(doc["steps"]) == n_steps
        url = default_ledger_url(plan.parent.resolve())
        py = sys.executable
        rows = [
            ("python -c pass", [py, "-c", "pass"]),
            ('python -c "import prefect"', [py, "-c", "import prefect"]),
            ("waymark status --json", [WAYMARK, "status", str(plan), "--json"]),
            (  # --ledger: the same command, the ledger opened through SQLAlchemy
                "waymark status --json --ledger URL",
                [WAYMARK, "status", str(plan), "--json", "--ledger", url],
            ),
            ("waymark status (table)", [WAYMARK, "status", str(plan)]),
            (
                "waymark status --rebuild --json",
                [WAYMARK, "status", str(plan), "--rebuild", "--json"],
            ),
        ]
        times: dict[str, list[float]] = {label: [] for label, _ in rows}
        for _ in range(runs):  # interleaved: load from elsewhere hits every command alike
            for label, cmd in rows:
                times[label].append(_once(cmd))
        results = {label: statistics.median(ts) for label, ts in times.items()}
        print(f"{'command':<36}{'median s':>10}   runs")
        for label, _ in rows:
            line = " ".join(f"{t:.3f}" for t in times[label])
            print(f"{label:<36}{results[label]:>10.3f}   {line}")
        status = results["waymark status --json"]
        bare = results["python -c pass"]
        prefect = results['python -c "import prefect"']
        print(
            f"status / bare python start-up: {status / bare:.1f}x (goal <= 5x: "
            f"{'met' if status / bare <= 5 else 'NOT met'}); "
            f"status / import prefect: {status / prefect:.2f}x"
        )
        goal = "met" if status <= 0.5 else "NOT met"
        print(f"goal <= 0.5 s for status --json: {goal} ({status:.3f} s)")
        return {
            "status_json_vs_bare_python": status / bare,
            "status_json_seconds": status,
            "status_json_full_seconds": results["waymark status --json --ledger URL"],
            "status_table_seconds": results["waymark status (table)"],
            "status_rebuild_json_seconds": results["waymark status --rebuild --json"],
            "bare_python_seconds": bare,
            "import_prefect_seconds": prefect,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--events", type=int, default=5000, help="events per append measurement")
    ap.add_argument("--status-events", type=int, default=10_000)
    ap.add_argument("--status-steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="repeats of each append measurement")
    ap.add_argument("--runs", type=int, default=7, help="runs of each status command")
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--json", action="store_true", help="last line: the figures as one JSON object")
    args = ap.parse_args()
    compile_package()  # whole processes load cached bytecode, as Prefect's do
    figures = bench_appends(args.events, args.repeat, not args.no_postgres)
    figures |= bench_status(args.status_events, args.status_steps, args.runs)
    if args.json:
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
