"""``waymark status PLAN`` (the table) and ``--json`` (the document) on many ledger histories:
what each shows for running, failed, in review, aborted (and lifted), receipts and open intents,
skipped and waiting, edited definitions, complete and closed plans, another workdir's ledger, a
table of more than 500 rows, brackets in titles; the options that read the same ledger another
way; a pipe, a huge file, a closed pipe and Ctrl-C.

Each history is written through the ledger API, as a run writes it; the command runs in process
(typer's ``CliRunner``) unless it needs a real process (a pipe, a signal).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prefect_waymark import load_plan
from prefect_waymark.cli import app
from prefect_waymark.cli.status_table import LARGE_TABLE_ROWS
from prefect_waymark.ledger import Ledger, open_ledger
from tests._support.helpers import WAYMARK, run_cli, write_plan
from tests.cli.test_status import NO_PREFECT, PLAN_DOC, default_url, record_history


def _status(plan: Path, *args: str) -> tuple[int, str]:
    """``waymark status PLAN ARGS`` in process: its exit code and what it printed."""
    result = CliRunner().invoke(app, ["status", str(plan), *args])
    return result.exit_code, result.output


def _document(plan: Path, *args: str) -> tuple[int, dict[str, Any]]:
    code, out = _status(plan, "--json", *args)
    return code, json.loads(out)


@pytest.fixture(autouse=True)
def _no_ledger_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAYMARK_LEDGER_URL", raising=False)


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


BUSY = {
    "fetch": "completed",
    "clean": "in_progress",
    "side-a": "failed",
    "side-b": "blocked",
    "review-me": "needs_review",
    "last": "pending",
}
Check = Callable[[dict[str, Any]], None]


def _busy(doc: dict[str, Any]) -> None:
    assert {s["id"]: s["status"] for s in doc["steps"]} == BUSY
    assert doc["needs_review"] == [
        {"step": "review-me", "reason": "the orders row changed", "ref": "o"}
    ]
    assert doc["next_step"] == "side-a" and doc["blocked"] == ["side-b"]


def _steps(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in doc["steps"]}


def _check_finished(doc: dict[str, Any]) -> None:
    _busy(doc)
    assert {k: v for k, v in doc["last_run"].items() if k != "at"} == {
        "executor": "ann",
        "result": "stopped",
    }


def _check_aborted(doc: dict[str, Any]) -> None:
    _busy(doc)
    assert doc["aborted"]["by"] == "bo" and doc["aborted"]["reason"] == "the client said stop ✋"


def _check_lifted(doc: dict[str, Any]) -> None:
    _busy(doc)
    assert "aborted" not in doc


def _check_actions(doc: dict[str, Any]) -> None:
    clean = _steps(doc)["clean"]
    assert [(r["key"], r["action"], r["external_id"]) for r in clean["receipts"]] == [
        ("k-2", "charge", "ch_9")
    ]
    assert [(a["key"], a["action"]) for a in clean["open_actions"]] == [("k-1", "send_mail")]


def _check_skipped(doc: dict[str, Any]) -> None:
    steps = _steps(doc)
    assert steps["last"]["status"] == "completed"
    assert steps["last"]["skipped"] == "not needed this week"
    assert steps["side-b"]["status"] == "blocked" and steps["side-b"]["blocked_by"] == ["side-a"]
    assert doc["counts"] == {
        "completed": 2, "in_progress": 1, "failed": 1, "blocked": 1, "needs_review": 1
    }  # fmt: skip


def _check_changed(doc: dict[str, Any]) -> None:
    steps = _steps(doc)
    assert steps["side-a"]["status"] == "completed" and steps["side-a"]["definition_changed"]
    assert not steps["fetch"]["definition_changed"]
    assert doc["next_step"] == "side-b"


def _check_done(doc: dict[str, Any]) -> None:
    assert doc["counts"] == {"completed": 5, "pending": 1}
    assert doc["current_step"] == {} and doc["next_step"] == "review-me"


def _check_closed(doc: dict[str, Any]) -> None:
    assert {k: doc["closed"][k] for k in ("by", "reason", "forced", "unmet")} == {
        "by": "ann",
        "reason": "done,\nreally",
        "forced": True,
        "unmet": ["x"],
    }
    assert doc["next_step"] is None and doc["current_step"] == {}  # nothing is next


#: name -> (how the ledger is written, exit code, the document's check, lines of the table)
HISTORIES: dict[str, tuple[Callable[[Ledger, Path], None], int, Check, list[str]]] = {
    "busy": (
        lambda led, plan: None,
        4,
        _busy,
        [
            "status-plan — Status demo",
            "current step: main: clean",
            "next step: side-a",
            "blocked: side-b",
            "needs review: review-me: the orders row changed",
            "failed: side-a: RuntimeError: boom",
        ],
    ),
    "finished": (_finished, 4, _check_finished, ["last run: stopped at ", " by ann"]),
    "aborted": (
        _aborted,
        4,
        _check_aborted,
        ["aborted by bo at ", "(the client said stop ✋): `waymark run` will not run it"],
    ),
    "abort lifted": (_abort_lifted, 4, _check_lifted, ["next step: side-a"]),
    "actions": (
        _actions,
        4,
        _check_actions,
        [
            "receipt: clean: charge None, external id ch_9",
            "action in progress: clean: send_mail (key k-1",
        ],
    ),
    "skipped and waiting": (
        _skipped_and_waiting,
        4,
        _check_skipped,
        [
            "│ last      │ skipped: not needed this week │",
            "steps: 1 blocked, 2 completed, 1 failed",
        ],
    ),
    "definition changed": (
        _definition_changed,
        4,
        _check_changed,
        ["│ side-a    │ completed (definition changed) │", "next step: side-b"],
    ),
    "all done": (
        _all_done,
        0,
        _check_done,
        ["steps: 5 completed, 1 pending", "current step: none"],
    ),
    "closed": (
        _closed,
        0,
        _check_closed,
        [
            "plan 'status-plan' was closed (forced) on ",
            " by ann: done, really — forced, with 1 thing(s) unmet",
            "next step: none — the plan is closed",
        ],
    ),
}


@pytest.mark.parametrize("name", list(HISTORIES))
def test_each_history_as_the_document_and_the_table(name: str, tmp_path: Path) -> None:
    write, code, check, lines = HISTORIES[name]
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
        try:
            write(led, plan)
        except Exception as exc:  # noqa: BLE001 - say which history the ledger refused
            pytest.fail(f"{name}: the ledger refused the history: {exc!r}")
    got, doc = _document(plan)
    assert got == code and doc["plan_id"] == "status-plan"
    check(doc)
    got, table = _status(plan)
    assert got == code
    for line in lines:
        assert line in table, f"{line!r} not in\n{table}"


def test_a_never_run_plan_and_a_workdir(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    code, doc = _document(plan)
    assert code == 0 and doc["counts"] == {"pending": 6}
    assert not (plan.parent / ".waymark").exists()  # created nothing
    work = tmp_path / "elsewhere"
    work.mkdir()
    with open_ledger(f"sqlite:///{work.resolve() / '.waymark' / 'ledger.db'}") as led:
        record_history(led, plan)
    for args in (("--workdir", str(work)), (f"--workdir={work}",)):
        code, doc = _document(plan, *args)
        assert code == 4 and doc["counts"]["failed"] == 1


def test_other_ways_to_the_same_ledger_give_the_same_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    code, plain = _document(plan)
    assert code == 4
    assert _document(plan, "--ledger", default_url(plan)) == (4, plain)
    code, rebuilt = _document(plan, "--rebuild")
    assert code == 4 and rebuilt.pop("rebuilt") == {"steps": 4, "changed": False}
    assert rebuilt == plain
    monkeypatch.setenv("WAYMARK_LEDGER_URL", default_url(plan))
    assert _document(plan) == (4, plain)
    monkeypatch.delenv("WAYMARK_LEDGER_URL")
    plan.write_text(plan.read_text() + "# edited\n")  # another text, the same plan
    assert _document(plan) == (4, plain)
    code, out = _status(plan, "--workdir", str(tmp_path / "nowhere"))
    assert code == 2 and "no such folder" in out
    for args in (("--table",), (str(plan),), ("--workdir",)):
        assert _status(plan, *args)[0] == 2, args  # a usage error


def test_a_pinned_ledger_is_read(tmp_path: Path) -> None:
    pinned = f"sqlite:///{tmp_path.resolve() / 'pinned.db'}"
    plan = write_plan(tmp_path / "proj", {**PLAN_DOC, "ledger": {"url": pinned}})
    assert _document(plan)[1]["counts"] == {"pending": 6}
    with open_ledger(pinned) as led:
        record_history(led, plan)
    code, doc = _document(plan)
    assert code == 4
    _busy(doc)


def test_a_pipe_and_a_huge_file(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    env = {**os.environ, **NO_PREFECT}
    piped = subprocess.run(  # a pipe is read once, by the loader
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
    code, out = _status(huge, "--json")
    assert code == 2 and "larger than the plan file limit" in out


def test_a_big_plan_and_a_workdir(tmp_path: Path) -> None:
    """Over :data:`LARGE_TABLE_ROWS` steps the table is drawn without rich's table (the same
    table: tests/cli/test_status_big_table.py), from another workdir's ledger too."""
    n = LARGE_TABLE_ROWS + 20
    doc = {
        "plan_id": "big",
        "title": "Ünïcode — 大きな plan",
        "steps": [
            {"id": f"s{i:04d}", "run": "true", "owner": "張偉" if i % 7 == 0 else None}
            | ({"depends_on": [f"s{i - 1:04d}"]} if i else {})
            for i in range(n)
        ],
    }
    plan = write_plan(tmp_path / "proj", doc)
    work = tmp_path / "elsewhere"
    work.mkdir()
    with open_ledger(f"sqlite:///{work.resolve() / '.waymark' / 'ledger.db'}") as led:
        for sid in ("s0000", "s0001"):
            led.record("big", "step_started", step_id=sid, branch="main", run_id="r1")
            led.record("big", "step_completed", step_id=sid, branch="main", run_id="r1")
        led.record("big", "step_started", step_id="s0002", branch="main", run_id="r1")
        led.record("big", "step_failed", step_id="s0002", branch="main", run_id="r1", error="e")
    for args in ((), ("--workdir", str(work)), (f"--workdir={work}",)):
        code, out = _status(plan, *args)
        assert code == (1 if args else 0), out  # 1: a step failed
        assert len(out.splitlines()) > n  # every step has its row
        assert out.startswith("big — Ünïcode — 大きな plan")
        assert re.search(r"│ s0007 +│ (pending|blocked) +│ 張偉 +│ main +│", out), out[:2000]
    assert "failed: s0002: e" in out  # the workdir's ledger was read
    assert re.search(r"│ s0000 +│ completed +│ 張偉 +│ main +│ \d{4}-", out)


def test_what_people_wrote_is_shown_as_written(tmp_path: Path) -> None:
    """Brackets in a title, an owner, an error or a review reason are text, not rich markup:
    shown as written (they were dropped, and a stray ``[/]`` ended the command in a
    traceback)."""
    doc = {
        **PLAN_DOC,
        "title": "Démo [bold]x[/]",
        "steps": [
            {**s, "owner": "bo [red]"} if s["id"] == "fetch" else s for s in PLAN_DOC["steps"]
        ],
    }
    plan = write_plan(tmp_path / "proj", doc)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
        spec = load_plan(plan)
        branch = spec.step("clean").branch
        for kind, data in (("step_failed", {"error": "exit 1: [/] oops [x] [bold]no[/bold]"}),):
            led.record(spec.plan_id, kind, step_id="clean", branch=branch, run_id="run-1", **data)
        led.record(spec.plan_id, "plan_aborted", by="ann [i]", reason="[stop] now")
    full = run_cli("status", str(plan), env=NO_PREFECT)
    assert full.returncode == 4 and "Traceback" not in full.stderr, full.stderr
    for text in (
        "Démo [bold]x[/]",
        "bo [red]",
        "clean: exit 1: [/] oops [x] [bold]no[/bold]",
        "review-me: the orders row changed",
        "by ann [i] at",
        "([stop] now)",
    ):
        assert text in full.stdout, text


def test_ctrl_c_ends_it_quietly(tmp_path: Path) -> None:
    """Ctrl-C while the table is printed: exit 130 and nothing on stderr (typer ends the command
    so). The interrupt is raised in the table's printing, after its first line, by the probe
    below (a real SIGINT lands wherever the process happens to be)."""
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    probe = (
        "import sys\n"
        "from prefect_waymark.cli import status_output\n"
        "def interrupted(view, extra, console=None):\n"
        "    print('first line', flush=True)\n"
        "    raise KeyboardInterrupt\n"
        "status_output.print_table = interrupted\n"
        "from prefect_waymark.cli import main\n"
        "sys.argv = ['waymark', *sys.argv[1:]]\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, "status", str(plan)],
        capture_output=True,
        text=True,
        env={**os.environ, **NO_PREFECT},
        timeout=120,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "first line\n", "")


@pytest.mark.parametrize(("args", "first"), [(["--json"], b'{\n  "plan_'), ([], b"wide")])
def test_a_closed_pipe_ends_it_quietly(tmp_path: Path, args: list[str], first: bytes) -> None:
    """The document, and the table: exit 1, quietly."""
    doc = {
        "plan_id": "wide",
        "steps": [{"id": f"s{i:04d}", "run": "true", "title": "x" * 60} for i in range(2000)],
    }
    plan = write_plan(tmp_path / "proj", doc)
    proc = subprocess.Popen(
        [WAYMARK, "status", str(plan), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **NO_PREFECT},
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(len(first)) == first
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1, err
    assert "Traceback" not in err and "Error" not in err, err
