"""``waymark status``: reads only the ledger (never Prefect), shows each step with status, owner,
branch and last event time, the current and next step, blocked steps and review reasons, as a
table or as JSON; exit codes; a never-run plan creates nothing; ``--rebuild`` gives the same view.

The ledger histories are written through the ledger API (the same events a run writes): status
must not care who wrote them, and these tests need no Prefect server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from prefect_waymark import load_plan
from prefect_waymark.ledger import SCHEMA_VERSION, Ledger, open_ledger
from prefect_waymark.ledger.run_hashes import run_step_hashes
from tests._support.helpers import run_cli, write_plan

PLAN_DOC: dict[str, Any] = {
    "plan_id": "status-plan",
    "title": "Status demo",
    "steps": [
        {"id": "fetch", "run": "echo fetch", "owner": "ana", "milestone": "m1"},
        {"id": "clean", "run": "echo clean", "depends_on": ["fetch"], "owner": "bo"},
        {"id": "side-a", "run": "echo a", "branch": "side"},
        {"id": "side-b", "run": "echo b", "branch": "side", "depends_on": ["side-a"]},
        {"id": "review-me", "run": "echo r", "branch": "rev"},
        {"id": "last", "run": "echo last", "depends_on": ["clean"], "milestone": "m2"},
    ],
}
NO_PREFECT = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


def default_url(plan: Path) -> str:
    return f"sqlite:///{plan.parent.resolve() / '.waymark' / 'ledger.db'}"


def record_history(led: Ledger, plan: Path) -> None:
    """fetch completed, clean in_progress, side-a failed (side-b blocked), review-me in review."""
    spec = load_plan(plan)
    hashes = spec.step_hashes()
    pid = spec.plan_id

    def step(kind: str, sid: str, **data: Any) -> None:
        led.record(pid, kind, step_id=sid, branch=spec.step(sid).branch, run_id="run-1", **data)

    led.record(pid, "run_started", run_id="run-1", step_hashes=hashes, plan_hash=spec.plan_hash())
    step("step_started", "fetch", def_hash=hashes["fetch"])
    step("step_completed", "fetch", def_hash=hashes["fetch"])
    step("step_started", "side-a", def_hash=hashes["side-a"])
    step("step_failed", "side-a", error="RuntimeError: boom")
    step("step_needs_review", "review-me", reason="the orders row changed", details={"ref": "o"})
    step("step_started", "clean", def_hash=hashes["clean"])


def status_json(plan: Path, *args: str, code: int | None = None) -> dict[str, Any]:
    proc = run_cli("status", str(plan), "--json", *args, env=NO_PREFECT)
    if code is not None:
        assert proc.returncode == code, proc.stdout + proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.fixture
def busy_plan(tmp_path: Path) -> Path:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    return plan


# -- never run --------------------------------------------------------------------------------
def test_never_run_plan_is_all_pending_and_creates_nothing(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    before = snapshot(tmp_path)
    proc = run_cli("status", str(plan), cwd=tmp_path, env=NO_PREFECT)
    assert proc.returncode == 0, proc.stderr
    for sid in ("fetch", "clean", "side-a", "side-b", "review-me", "last"):
        assert re.search(rf"│ {re.escape(sid)}\s+│ pending\s+│", proc.stdout), sid
    assert "steps: 6 pending" in proc.stdout
    assert "next step: fetch" in proc.stdout
    doc = status_json(plan, code=0)
    assert {s["id"]: s["status"] for s in doc["steps"]} == dict.fromkeys(
        ["fetch", "clean", "side-a", "side-b", "review-me", "last"], "pending"
    )
    assert doc["current_step"] == {} and doc["next_step"] == "fetch"
    assert doc["needs_review"] == [] and doc["blocked"] == [] and doc["complete"] is False
    status_json(plan, "--rebuild", code=0)
    assert snapshot(tmp_path) == before  # no .waymark folder, no ledger file


def test_never_run_with_explicit_ledgers_creates_nothing(tmp_path: Path, pg_url: str) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    elsewhere = tmp_path / "not-yet" / "ledger.db"
    for args, env in (
        (("--ledger", f"sqlite:///{elsewhere}"), {}),
        ((), {"WAYMARK_LEDGER_URL": f"sqlite:///{elsewhere}"}),
        (("--ledger", pg_url), {}),
        (("--ledger", pg_url, "--rebuild"), {}),
    ):
        proc = run_cli("status", str(plan), "--json", *args, env={**NO_PREFECT, **env})
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["next_step"] == "fetch"
    assert not elsewhere.parent.exists()
    assert not (plan.parent / ".waymark").exists()
    engine = sa.create_engine(pg_url)
    try:
        assert sa.inspect(engine).get_table_names() == []
    finally:
        engine.dispose()


# -- a plan with history ------------------------------------------------------------------------
def test_json_status(busy_plan: Path) -> None:
    doc = status_json(busy_plan, code=4)  # a step needs review
    assert doc["plan_id"] == "status-plan"
    steps = {s["id"]: s for s in doc["steps"]}
    assert [s["id"] for s in doc["steps"]] == [s["id"] for s in PLAN_DOC["steps"]]
    assert {k: v["status"] for k, v in steps.items()} == {
        "fetch": "completed",
        "clean": "in_progress",
        "side-a": "failed",
        "side-b": "blocked",
        "review-me": "needs_review",
        "last": "pending",
    }
    assert doc["current_step"] == {"main": "clean"}
    assert doc["next_step"] == "side-a"  # failed, its dependencies done: it runs next
    assert doc["blocked"] == ["side-b"]
    assert steps["side-b"]["blocked_by"] == ["side-a"]
    assert doc["needs_review"] == [
        {"step": "review-me", "reason": "the orders row changed", "ref": "o"}
    ]
    assert steps["fetch"]["owner"] == "ana" and steps["clean"]["owner"] == "bo"
    assert steps["side-a"]["branch"] == "side" and steps["side-a"]["error"] == "RuntimeError: boom"
    assert steps["fetch"]["last_event_at"] and steps["last"]["last_event_at"] is None
    assert steps["fetch"]["definition_changed"] is False
    assert doc["counts"] == {
        "completed": 1,
        "in_progress": 1,
        "failed": 1,
        "blocked": 1,
        "needs_review": 1,
        "pending": 1,
    }
    assert doc["complete"] is False and doc["active_milestone"] == "m2"


def test_table_status(busy_plan: Path) -> None:
    proc = run_cli("status", str(busy_plan), env=NO_PREFECT)
    assert proc.returncode == 4, proc.stderr
    out = proc.stdout
    assert "status-plan — Status demo" in out
    rows = {
        "fetch": ("completed", "ana", "main"),
        "clean": ("in_progress", "bo", "main"),
        "side-a": ("failed", "", "side"),
        "side-b": ("blocked", "", "side"),
        "review-me": ("needs_review", "", "rev"),
        "last": ("pending", "", "main"),
    }
    for sid, (st, owner, branch) in rows.items():
        pattern = rf"│ {re.escape(sid)}\s+│ {st}\s+│ {owner}\s*│ {branch}\s+│ (\S+ \S+|)\s*│"
        match = re.search(pattern, out)
        assert match, f"{sid} row not found in:\n{out}"
        if sid not in ("side-b", "last"):  # the steps with events show when the last one was
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", match.group(1)), match.group(1)
    assert "current step: main: clean" in out
    assert "next step: side-a" in out
    assert "blocked: side-b" in out
    assert "needs review: review-me: the orders row changed" in out
    assert "failed: side-a: RuntimeError: boom" in out


def test_status_through_postgresql_equals_sqlite(busy_plan: Path, pg_url: str) -> None:
    with open_ledger(pg_url) as led:
        record_history(led, busy_plan)
    on_sqlite = status_json(busy_plan, code=4)
    on_pg = status_json(busy_plan, "--ledger", pg_url, code=4)
    for doc in (on_sqlite, on_pg):
        for s in doc["steps"]:
            s.pop("last_event_at")
    assert on_pg == on_sqlite


def test_exit_codes(tmp_path: Path) -> None:
    doc = {"plan_id": "codes", "steps": [{"id": "a", "run": "x"}, {"id": "b", "run": "y"}]}
    plan = write_plan(tmp_path, doc)
    with open_ledger(default_url(plan)) as led:

        def rec(kind: str, sid: str, **data: Any) -> None:
            led.record("codes", kind, step_id=sid, branch="main", run_id="r", **data)

        rec("step_started", "a")
        assert status_json(plan, code=0)["current_step"] == {"main": "a"}  # running: fine
        rec("step_failed", "a", error="x")
        assert status_json(plan, code=1)["next_step"] == "a"  # a failed step: 1
        rec("step_started", "a")
        rec("step_completed", "a")
        rec("step_started", "b")
        rec("step_completed", "b")
        done = status_json(plan, code=0)
        assert done["complete"] is True and done["next_step"] is None
        proc = run_cli("status", str(plan), env=NO_PREFECT)
        assert "next step: none — plan complete" in proc.stdout
        led.record("codes", "run_finished", run_id="r", result="completed", executor="ana@host")
        assert status_json(plan, code=0)["last_run"]["result"] == "completed"
        rec("step_needs_review", "b", reason="receipt missing")
        assert status_json(plan, code=4)["needs_review"][0]["reason"] == "receipt missing"


def test_changed_definition_of_a_completed_step_is_reported(busy_plan: Path) -> None:
    doc = json.loads(json.dumps(PLAN_DOC))
    doc["steps"][0]["run"] = "echo fetch --v2"  # fetch completed under the old definition
    doc["steps"][1]["title"] = "Clean the data"  # not part of the definition
    write_plan(busy_plan.parent, doc)
    status = status_json(busy_plan, code=4)
    changed = {s["id"]: s["definition_changed"] for s in status["steps"]}
    assert changed == {s["id"]: s["id"] == "fetch" for s in PLAN_DOC["steps"]}
    proc = run_cli("status", str(busy_plan), env=NO_PREFECT)
    assert re.search(r"│ fetch\s+│ completed \(definition changed\)", proc.stdout), proc.stdout


def test_run_start_records_the_plan_and_step_hashes(busy_plan: Path) -> None:
    """The identity status compares against is what a run_started records (here the one the
    fixture recorded; real runs: tests/ledger/test_run_hashes.py), read back by run_hashes."""
    spec = load_plan(busy_plan)
    with open_ledger(default_url(busy_plan)) as led:
        started = led.last_event(spec.plan_id, ["run_started"])
        assert started is not None and started.run_id
        hashes = run_step_hashes(led, spec.plan_id, started.run_id)
    assert started.data["plan_hash"] == spec.plan_hash()
    assert hashes == spec.step_hashes()


# -- rebuild --------------------------------------------------------------------------------------
def test_rebuild_gives_the_same_view(busy_plan: Path) -> None:
    plain = status_json(busy_plan, code=4)
    rebuilt = status_json(busy_plan, "--rebuild", code=4)
    assert rebuilt.pop("rebuilt") == {"steps": 4, "changed": False}
    assert rebuilt == plain
    # Damage the kept view: status shows the damage, --rebuild repairs it from the events.
    engine = sa.create_engine(default_url(busy_plan))
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM waymark_steps WHERE step_id IN ('fetch', 'side-a')"))
    finally:
        engine.dispose()
    damaged = status_json(busy_plan, code=4)
    assert {s["id"]: s["status"] for s in damaged["steps"]}["fetch"] == "pending"
    repaired = status_json(busy_plan, "--rebuild", code=4)
    assert repaired.pop("rebuilt") == {"steps": 4, "changed": True}
    assert repaired == plain
    assert status_json(busy_plan, code=4) == plain


# -- bad input ------------------------------------------------------------------------------------
def test_invalid_plan_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, {"plan_id": "p", "steps": [{"id": "a", "depend_on": ["b"]}]})
    before = snapshot(tmp_path)
    proc = run_cli("status", str(plan), env=NO_PREFECT)
    assert proc.returncode == 2
    assert "steps[0].depend_on" in proc.stderr and "did you mean 'depends_on'" in proc.stderr
    assert snapshot(tmp_path) == before


def test_newer_ledger_is_refused(busy_plan: Path) -> None:
    engine = sa.create_engine(default_url(busy_plan))
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE waymark_meta SET value = :v WHERE key = 'schema_version'"),
                {"v": str(SCHEMA_VERSION + 5)},
            )
    finally:
        engine.dispose()
    for extra in ((), ("--rebuild",)):
        proc = run_cli("status", str(busy_plan), *extra, env=NO_PREFECT)
        assert proc.returncode == 2
        assert f"schema version {SCHEMA_VERSION + 5}" in proc.stderr
        assert "upgrade prefect-waymark" in proc.stderr
        assert proc.stdout == ""


def test_a_file_that_is_not_a_ledger_says_so(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN_DOC)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"definitely not sqlite" * 50)
    proc = run_cli("status", str(plan), "--ledger", f"sqlite:///{junk}", env=NO_PREFECT)
    assert proc.returncode == 2
    assert str(junk) in proc.stderr
    assert "Traceback" not in proc.stderr


# -- no Prefect -----------------------------------------------------------------------------------
_PROBE = """
import json, sys
from prefect_waymark.cli import main
sys.argv = ["waymark", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in sys.modules if m == "prefect" or m.startswith("prefect."))
heavy = sorted(m for m in ("sqlalchemy", "sqlmodel", "prefect_waymark.flows",
                           "prefect_waymark.tasks") if m in sys.modules)
import gc
print("\\nPROBE " + json.dumps({"code": code, "prefect": loaded, "heavy": heavy,
                                 "gc": gc.isenabled()}))
"""


def probe(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **NO_PREFECT, **(env or {})},
        timeout=120,
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("PROBE ")]
    assert line, proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(line[-1].removeprefix("PROBE "))
    return result


def test_status_validate_and_schema_never_import_prefect(busy_plan: Path, pg_url: str) -> None:
    for args, code in (
        (("status", str(busy_plan)), 4),
        (("status", str(busy_plan), "--json"), 4),
        (("status", str(busy_plan), "--rebuild", "--json"), 4),
        (("status", str(busy_plan), "--json", "--ledger", pg_url), 0),
        (("validate", str(busy_plan)), 0),
        (("schema",), 0),
    ):
        result = probe(*args)
        assert result["code"] == code, (args, result)
        assert result["prefect"] == [], (args, result["prefect"])
        assert "prefect_waymark.flows" not in result["heavy"]
        assert "prefect_waymark.tasks" not in result["heavy"]
        assert result["gc"] is True, args  # no command turns the garbage collector off
    # Plain status reads the ledger on its driver: no SQL toolkit, nothing heavier.
    assert probe("status", str(busy_plan), "--json")["heavy"] == []
    assert probe("validate", str(busy_plan))["heavy"] == []


def test_other_commands_keep_the_garbage_collector(busy_plan: Path) -> None:
    """A run, a receipt lookup or a replay (which may run long) keep the collector on too,
    whatever their options look like."""
    for args in (
        ("replay", str(busy_plan), "--json"),
        ("receipt", str(busy_plan), "--help"),
        ("--help",),
    ):
        assert probe(*args)["gc"] is True, args


def test_status_does_not_need_a_prefect_server(busy_plan: Path) -> None:
    """PREFECT_API_URL points at a closed port: status still answers from the ledger alone."""
    proc = run_cli("status", str(busy_plan), "--json", env=NO_PREFECT, timeout=60)
    assert proc.returncode == 4
    assert json.loads(proc.stdout)["current_step"] == {"main": "clean"}
    assert "prefect" not in proc.stderr.lower()


def test_folder_names_that_look_like_url_escapes(tmp_path: Path) -> None:
    """The default ledger URL is quoted: a folder named ``a%20b c`` keeps its ledger inside."""
    from prefect_waymark.ledger import default_ledger_url

    folder = tmp_path / "a%20b c"
    plan = write_plan(folder, {"plan_id": "odd", "steps": [{"id": "a", "run": "x"}]})
    with open_ledger(default_ledger_url(plan.parent)) as led:
        led.record("odd", "step_started", step_id="a", branch="main", run_id="r")
        led.record("odd", "step_completed", step_id="a", branch="main", run_id="r")
    assert (folder / ".waymark" / "ledger.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a%20b c"]
    assert status_json(plan, code=0)["complete"] is True
    assert status_json(plan, "--rebuild", code=0)["rebuilt"] == {"steps": 1, "changed": False}


class _HtmlServer:
    """A real HTTP server on 127.0.0.1 that answers every request with an HTML page (a proxy's
    login page, say) and counts the requests."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        counter = self
        self.requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _page(self) -> None:
                counter.requests.append(self.path)
                body = b"<html>please log in</html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = _page
            do_POST = _page

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/api"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _record_run(url: str, plan_id: str, workdir: Path, **extra: Any) -> None:
    from prefect_waymark.ledger.events import EventKind

    with open_ledger(url) as led:
        led.record(
            plan_id,
            EventKind.run_started,
            run_id="run-1",
            flow_run_id=None,
            executor="worker-a/run",
            workdir=str(workdir),
            host="h",
            pid=1,
            plan_hash="",
            step_hashes={},
            started_from="fetch",
            max_steps=None,
            until=None,
            **extra,
        )


def test_status_names_the_deployment_and_says_when_its_server_cannot_be_read(
    tmp_path: Path,
) -> None:
    """A plan a deployment runs: status shows the deployment (schedule and next run come from
    the Prefect server: tests/team/test_team_server.py); a server that does not answer, or
    answers with something else than the API, is said in one line, and the ledger's view and
    exit code stand. A plan whose runs came from no deployment makes no request at all."""
    dep = "5f0e7c1e-3b55-4b8e-9a49-0c1b2d3e4f50"
    plan = write_plan(tmp_path, PLAN_DOC)
    _record_run(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}", "status-plan", tmp_path,
                deployment_id=dep)  # fmt: skip
    dead = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}
    proc = run_cli("status", str(plan), env=dead, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"deployment: {dep} (not read: http://127.0.0.1:9/api: ConnectError" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    proc = run_cli("status", str(plan), "--json", env=dead, timeout=60)
    shown = json.loads(proc.stdout)["deployment"]
    assert shown["id"] == dep and shown["unreachable"].startswith("http://127.0.0.1:9/api:")

    html = _HtmlServer()
    try:
        proc = run_cli("status", str(plan), env={"PREFECT_API_URL": html.url}, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"deployment: {dep} (not read: {html.url}: JSONDecodeError" in proc.stdout
        assert "Traceback" not in proc.stdout + proc.stderr
        assert html.requests == [f"/api/deployments/{dep}"]
        # Runs from no deployment (e.g. `waymark run`): no deployment key, no request.
        other = tmp_path / "other"
        plain = write_plan(other, {**PLAN_DOC, "plan_id": "never-deployed"})
        _record_run(f"sqlite:///{other / '.waymark' / 'ledger.db'}", "never-deployed", other)
        proc = run_cli("status", str(plain), "--json", env={"PREFECT_API_URL": html.url})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "deployment" not in json.loads(proc.stdout)
        assert html.requests == [f"/api/deployments/{dep}"]
    finally:
        html.close()
