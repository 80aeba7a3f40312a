"""``waymark status PLAN --json``'s quick path (cli/quick_status.py; the table's is tested in
tests/cli/test_quick_status_table.py): for a plan status has read before, it prints the full
command's document byte for byte, with the same exit code, without loading pydantic, typer,
PyYAML or SQLAlchemy; anything it does not answer (no digest, another option or ledger, a pinned
ledger, a deployment, an edited plan, an odd ledger) it leaves to the full command, printing
nothing.

Every "full" answer is a real ``waymark`` process with the plan cache off (the full command,
always); every ledger history is written through the ledger API, as a run writes it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark import load_plan
from prefect_waymark.cli.quick_status import quick_status
from prefect_waymark.ledger import Ledger, open_ledger
from tests._support.helpers import WAYMARK, run_cli, write_plan
from tests.cli.test_status import NO_PREFECT, PLAN_DOC, default_url, record_history

FULL = {**NO_PREFECT, "WAYMARK_PLAN_CACHE": "off"}


def _full(plan: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("status", str(plan), "--json", *args, env=FULL)


def _quick(plan: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int | None, str]:
    capsys.readouterr()
    code = quick_status(["status", str(plan), "--json", *args])
    return code, capsys.readouterr().out


def _digested(plan: Path) -> Path:
    """The plan, with its status digest kept (as an earlier `waymark status` keeps it)."""
    load_plan(plan, keep_digest=True)
    return plan


# -- histories: each adds to the busy one (fetch completed, clean running, side-a failed,
# side-b blocked behind it, review-me in review) ------------------------------------------------
def _step(led: Ledger, plan: Path, kind: str, sid: str, run: str = "r2", **data: Any) -> None:
    spec = load_plan(plan)
    led.record(spec.plan_id, kind, step_id=sid, branch=spec.step(sid).branch, run_id=run, **data)


def _finished(led: Ledger, plan: Path) -> None:
    led.record("status-plan", "run_finished", run_id="run-1", result="stopped", executor="ann")


def _aborted(led: Ledger, plan: Path) -> None:
    led.record("status-plan", "plan_aborted", by="bo", reason="the client said stop ✋")


def _abort_lifted(led: Ledger, plan: Path) -> None:
    _aborted(led, plan)
    led.record("status-plan", "plan_abort_lifted", by="ann", reason="go on")


def _actions(led: Ledger, plan: Path) -> None:
    """An intent without a receipt (outcome unknown) and a settled one (a receipt)."""
    _step(led, plan, "action_intent", "clean", key="k-1", action="send_mail", at="2026-12-01")
    _step(led, plan, "action_intent", "clean", key="k-2", action="charge", at="2026-12-01")
    _step(led, plan, "action_applied", "clean", key="k-2", action="charge", external_id="ch_9")


def _skipped_and_waiting(led: Ledger, plan: Path) -> None:
    _step(led, plan, "step_skipped", "last", reason="not needed this week", by="ann")
    _step(led, plan, "step_blocked", "side-b", reason="waits for side-a", blocked_on="side-a")


def _definition_changed(led: Ledger, plan: Path) -> None:
    _step(led, plan, "step_started", "side-a", def_hash="an older definition")
    _step(led, plan, "step_completed", "side-a", def_hash="an older definition")


def _all_done(led: Ledger, plan: Path) -> None:
    led.record("status-plan", "step_review_accepted", step_id="review-me", branch="rev", by="x")
    for sid in ("clean", "side-a", "side-b", "review-me", "last"):
        spec = load_plan(plan)
        h = spec.step_hashes()[sid]
        if sid == "clean":  # run-1 started it (record_history)
            _step(led, plan, "step_completed", sid, "run-1", def_hash=h)
            continue
        if load_plan(plan).step(sid).id != "review-me":
            _step(led, plan, "step_started", sid, def_hash=h)
            _step(led, plan, "step_completed", sid, def_hash=h)


def _closed(led: Ledger, plan: Path) -> None:
    led.record(
        "status-plan", "plan_closed", by="ann", reason="done,\nreally", forced=True, unmet=["x"]
    )


HISTORIES: dict[str, Callable[[Ledger, Path], None]] = {
    "busy": lambda led, plan: None,
    "finished": _finished,
    "aborted": _aborted,
    "abort lifted": _abort_lifted,
    "actions": _actions,
    "skipped and waiting": _skipped_and_waiting,
    "definition changed": _definition_changed,
    "all done": _all_done,
    "closed": _closed,
}


@pytest.mark.parametrize("mode", [["--json"], []], ids=["json", "table"])
@pytest.mark.parametrize("name", list(HISTORIES))
def test_the_quick_answer_is_the_full_one(
    name: str, mode: list[str], tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document, and the table (tests/cli/test_quick_status_table.py has more of it)."""
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
        try:
            HISTORIES[name](led, plan)
        except Exception as exc:  # noqa: BLE001 - say which history the ledger refused
            pytest.fail(f"{name}: the ledger refused the history: {exc!r}")
    full = run_cli("status", str(plan), *mode, env=FULL)
    assert full.returncode in (0, 1, 4), full.stderr
    assert "status-plan" in full.stdout
    _digested(plan)
    capsys.readouterr()
    code = quick_status(["status", str(plan), *mode])
    assert code is not None, "the quick path did not answer"
    assert capsys.readouterr().out == full.stdout
    assert code == full.returncode


def test_a_never_run_plan_and_a_workdir(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _digested(write_plan(tmp_path / "proj", PLAN_DOC))
    code, out = _quick(plan, capsys)
    full = _full(plan)
    assert (code, out) == (full.returncode, full.stdout) and code == 0
    assert json.loads(out)["counts"] == {"pending": 6}
    assert not (plan.parent / ".waymark").exists()  # created nothing
    work = tmp_path / "elsewhere"
    work.mkdir()
    with open_ledger(f"sqlite:///{work.resolve() / '.waymark' / 'ledger.db'}") as led:
        record_history(led, plan)
    for args in (("--workdir", str(work)), (f"--workdir={work}",)):
        code, out = _quick(plan, capsys, *args)
        full = _full(plan, *args)
        assert (code, out) == (full.returncode, full.stdout) and code == 4
    assert json.loads(out)["counts"]["failed"] == 1


def test_the_whole_process_loads_none_of_the_heavy_modules(tmp_path: Path, cache: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    first = run_cli("status", str(plan), "--json", env=NO_PREFECT)  # the full path keeps it
    assert list(cache.glob("*.status.json")), "status kept no digest"
    probe = (
        "import atexit, sys\n"
        "heavy = ('pydantic', 'typer', 'yaml', 'sqlalchemy', 'rich', 'prefect')\n"
        "atexit.register(lambda: print('LOADED', sorted({m.split('.')[0] for m in sys.modules}"
        " & set(heavy)), file=sys.stderr))\n"
        "from prefect_waymark.cli import main\n"
        "sys.argv = ['waymark', *sys.argv[1:]]\n"
        "main()\n"
    )
    env = {**os.environ, **NO_PREFECT}
    proc = subprocess.run(
        [sys.executable, "-c", probe, "status", str(plan), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "LOADED []" in proc.stderr, proc.stderr
    assert proc.stdout == first.stdout and proc.returncode == first.returncode == 4


def test_what_it_leaves_to_the_full_command(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    assert _quick(plan, capsys) == (None, "")  # no digest yet
    _digested(plan)
    assert _quick(plan, capsys)[0] == 4
    for args in (("--ledger", default_url(plan)), ("--rebuild",), ("--workdir", "nowhere")):
        assert _quick(plan, capsys, *args) == (None, ""), args
    assert quick_status(["status", str(plan)]) == 4  # the table too: test_quick_status_table.py
    capsys.readouterr()
    assert quick_status(["status", str(plan), str(plan), "--json"]) is None
    monkeypatch.setenv("WAYMARK_LEDGER_URL", default_url(plan))
    assert _quick(plan, capsys) == (None, "")
    monkeypatch.delenv("WAYMARK_LEDGER_URL")
    monkeypatch.setenv("WAYMARK_PLAN_CACHE", "off")
    assert _quick(plan, capsys) == (None, "")
    monkeypatch.setenv("WAYMARK_PLAN_CACHE", str(cache))
    plan.write_text(plan.read_text() + "# edited\n")  # another text: its digest is not kept yet
    assert _quick(plan, capsys) == (None, "")


def test_a_pinned_ledger_keeps_no_digest(tmp_path: Path, cache: Path) -> None:
    pinned = {**PLAN_DOC, "ledger": {"url": f"sqlite:///{tmp_path.resolve() / 'pinned.db'}"}}
    plan = _digested(write_plan(tmp_path / "proj", pinned))
    assert not list(cache.glob("*.status.json"))
    assert quick_status(["status", str(plan), "--json"]) is None


def test_a_deployment_is_left_to_the_full_command(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _digested(write_plan(tmp_path / "proj", PLAN_DOC))
    with open_ledger(default_url(plan)) as led:
        led.record("status-plan", "run_started", run_id="run-9", deployment_id="d-1")
    assert _quick(plan, capsys) == (None, "")  # the schedule is read from the Prefect server


def test_a_newer_ledger_is_reported_by_the_full_command(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _digested(write_plan(tmp_path / "proj", PLAN_DOC))
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    db = plan.parent / ".waymark" / "ledger.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE waymark_meta SET value = '99' WHERE key = 'schema_version'")
    assert _quick(plan, capsys) == (None, "")
    proc = run_cli("status", str(plan), "--json", env=NO_PREFECT)
    assert proc.returncode == 2 and "schema version 99" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_torn_digest_is_replaced(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _digested(write_plan(tmp_path / "proj", PLAN_DOC))
    (entry,) = cache.glob("*.status.json")
    entry.write_text('{"version": 1, "plan_id": ')
    assert _quick(plan, capsys) == (None, "")
    assert not entry.exists()
    assert [p.name for p in cache.glob("*.status.json")] == []
    _digested(plan)
    assert _quick(plan, capsys)[0] == 0


def test_a_pipe_and_a_huge_file_are_read_by_the_full_command(tmp_path: Path, cache: Path) -> None:
    plan = _digested(write_plan(tmp_path / "proj", PLAN_DOC))
    env = {**os.environ, **NO_PREFECT}
    # A pipe is read once, by the loader: the quick path does not open it.
    piped = subprocess.run(
        [WAYMARK, "status", "/dev/stdin", "--json"],
        input=plan.read_text(),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["plan_id"] == "status-plan"
    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as fh:  # sparse: 5 MiB of nothing, over the plan file limit
        fh.truncate(5 * 1024 * 1024)
    assert quick_status(["status", str(huge), "--json"]) is None
    proc = run_cli("status", str(huge), "--json", env=NO_PREFECT)
    assert proc.returncode == 2 and "larger than the plan file limit" in proc.stderr


def test_a_row_the_model_refuses_and_an_odd_digest_go_to_the_full_command(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _digested(write_plan(tmp_path / "proj", PLAN_DOC))
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
        assert _quick(plan, capsys)[0] == 4
        # The ledger's appends keep a payload as given: an error that is not text.
        _step(led, plan, "step_started", "side-b", def_hash="h")
        _step(led, plan, "step_failed", "side-b", error=500)
    assert _quick(plan, capsys) == (None, "")
    plan2 = _digested(write_plan(tmp_path / "other", PLAN_DOC))
    assert _quick(plan2, capsys)[0] == 0
    (entry,) = [e for e in cache.glob("*.status.json") if "other" in e.read_text()]
    doc = json.loads(entry.read_text())
    doc["order"] = doc["order"][:-1]  # a step left out: not a whole digest
    entry.write_text(json.dumps(doc))
    assert _quick(plan2, capsys) == (None, "")


def test_a_distribution_installed_or_removed_is_another_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resolver plug-in changes what a plan's state refs must hold: a digest (kept for plans
    of any size, read without looking plug-ins up) must not outlive one's install."""
    from prefect_waymark.plan import cache_files

    before = cache_files.code_fingerprint()
    site = tmp_path / "site"
    (site / "waymark_plugin-1.0.dist-info").mkdir(parents=True)
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setattr(cache_files, "_FINGERPRINT", None)
    installed = cache_files.code_fingerprint()
    assert installed is not None and installed != before
    monkeypatch.setattr(cache_files, "_FINGERPRINT", None)
    (site / "waymark_plugin-1.0.dist-info").rename(site / "waymark_plugin-1.1.dist-info")
    assert cache_files.code_fingerprint() not in (installed, None)


@pytest.mark.parametrize(("args", "first"), [(["--json"], b'{\n  "plan_'), ([], b"wide")])
def test_a_closed_pipe_ends_it_quietly(
    tmp_path: Path, cache: Path, args: list[str], first: bytes
) -> None:
    """The document, and the table (tests/cli/test_quick_status_table.py): exit 1, quietly."""
    doc = {
        "plan_id": "wide",
        "steps": [{"id": f"s{i:04d}", "run": "true", "title": "x" * 60} for i in range(2000)],
    }
    plan = write_plan(tmp_path / "proj", doc)
    env = {**os.environ, **NO_PREFECT}
    for cache_env in ("off", str(cache), str(cache)):  # the full command, then the quick path
        proc = subprocess.Popen(
            [WAYMARK, "status", str(plan), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**env, "WAYMARK_PLAN_CACHE": cache_env},
        )
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(len(first)) == first
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 1, err
        assert "Traceback" not in err and "Error" not in err, err
