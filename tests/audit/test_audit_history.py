"""Audit export, replay and restore on a plan driven through real runs.

One plan history, built once for the module with real ``run_plan`` flow runs and the real
``waymark review``: a ``--max-steps`` stop, a failed step, a stop for review (an edited output)
answered with ``waymark review --accept``, an action with its receipt, and the completing run.
After each run the test keeps what ``waymark status --json`` printed and the ledger's last seq;
``waymark replay --at`` must print exactly that later, and a ledger restored from the export
(SQLite and PostgreSQL) must give the same status, receipts and export.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess

PLAN_ID = "audit-demo"
PLAN_DOC: dict[str, Any] = {
    "plan_id": PLAN_ID,
    "title": "Audit demo",
    "steps": [
        {"id": "draft", "run": "echo draft > draft.txt", "outputs": ["draft.txt"]},
        {
            "id": "publish",
            "depends_on": ["draft"],
            "action": "publish",
            "run": "echo x >> published.count && "
            'printf \'{"external_id": "pub-1"}\' > "$WAYMARK_RECEIPT_FILE"',
        },
        {"id": "check", "depends_on": ["publish"], "run": "test -f go.flag"},
        {"id": "final", "depends_on": ["check"], "run": "echo done > final.txt"},
    ],
}


@dataclass(frozen=True)
class Moment:
    """What ``waymark status --json`` printed after one run, and where the ledger stood."""

    what: str
    seq: int
    at: datetime
    status: dict[str, Any]
    code: int
    text: str  # the very bytes status printed


@dataclass(frozen=True)
class History:
    plan: Path
    url: str
    moments: list[Moment]


def status(plan: Path, *args: str) -> tuple[dict[str, Any], int]:
    doc, code, _ = status_text(plan, *args)
    return doc, code


def status_text(plan: Path, *args: str) -> tuple[dict[str, Any], int, str]:
    proc = run_cli("status", str(plan), "--json", *args)
    assert proc.returncode in (0, 1, 3, 4), proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc, proc.returncode, proc.stdout


def replay(plan: Path, at: str, *args: str) -> tuple[dict[str, Any], int, str]:
    doc, code, err, _ = replay_text(plan, at, *args)
    return doc, code, err


def replay_text(plan: Path, at: str, *args: str) -> tuple[dict[str, Any], int, str, str]:
    proc = run_cli("replay", str(plan), "--at", at, "--json", *args)
    assert proc.returncode in (0, 1, 3, 4), proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc, proc.returncode, proc.stderr, proc.stdout


@pytest.fixture(scope="module")
def history(prefect_server: str, tmp_path_factory: pytest.TempPathFactory) -> History:
    folder = tmp_path_factory.mktemp("audit")
    plan = write_plan(folder, PLAN_DOC)
    url = f"sqlite:///{folder / '.waymark' / 'ledger.db'}"
    moments: list[Moment] = []

    def keep(what: str) -> None:
        with open_ledger(url, create=False) as led:
            last = led.events(PLAN_ID)[-1]
        doc, code, text = status_text(plan)
        assert last.seq is not None
        moments.append(Moment(what, last.seq, last.at, doc, code, text))

    assert run_inprocess(plan, max_steps=1).result == "stopped"
    keep("max-steps stop")
    assert run_inprocess(plan).result == "failed"  # publish (its receipt), then check fails
    keep("check failed")
    (folder / "draft.txt").write_text("edited by a person\n")
    (folder / "go.flag").write_text("")
    assert run_inprocess(plan).result == "needs_review"  # draft's output was edited
    keep("review stop")
    answered = run_cli("review", str(plan), "--step", "draft", "--accept", "--reason", "ok")
    assert answered.returncode == 0, answered.stderr
    keep("review answered")
    # publish was applied on the draft before the edit: an applied action does not run again
    # on its own; a person says whether it stands
    assert run_inprocess(plan).result == "needs_review"
    keep("stale action stop")
    kept = run_cli("review", str(plan), "--step", "publish", "--accept", "--reason", "stands")
    assert kept.returncode == 0, kept.stderr
    assert run_inprocess(plan).result == "completed"
    keep("completed")
    assert (folder / "published.count").read_text() == "x\n"  # the action ran once
    return History(plan, url, moments)


def test_the_history_moves_through_every_kind_of_stop(history: History) -> None:
    by_what = {m.what: m for m in history.moments}
    assert by_what["max-steps stop"].status["counts"] == {"completed": 1, "pending": 3}
    assert by_what["check failed"].code == 1
    assert by_what["review stop"].code == 4
    assert by_what["review stop"].status["needs_review"][0]["step"] == "draft"
    assert by_what["review answered"].status["needs_review"] == []
    assert by_what["stale action stop"].status["needs_review"][0]["step"] == "publish"
    assert by_what["completed"].status["complete"] is True
    receipts = [s["receipts"] for s in by_what["completed"].status["steps"] if s["id"] == "publish"]
    assert receipts[0][0]["external_id"] == "pub-1"
    seqs = [m.seq for m in history.moments]
    assert seqs == sorted(set(seqs))


def test_replay_at_each_seq_and_time_prints_what_status_printed(history: History) -> None:
    for m in history.moments:
        doc, code, _, text = replay_text(history.plan, str(m.seq))
        assert (doc, code) == (m.status, m.code), m.what
        assert text == m.text, m.what  # byte for byte, key order included
        doc, code, _, text = replay_text(history.plan, m.at.isoformat())
        assert (doc, code, text) == (m.status, m.code, m.text), m.what
    # A time between two moments: the earlier one's view (with another timezone's offset).
    first, second = history.moments[0], history.moments[1]
    between = first.at + (second.at - first.at) / 2
    assert between > first.at
    in_cet = between.astimezone(timezone(timedelta(hours=1)))
    doc, _, _ = replay(history.plan, in_cet.isoformat())
    assert doc == first.status


def test_replay_before_the_first_and_after_the_last_event(history: History) -> None:
    never_run, code = status(history.plan, "--ledger", f"sqlite:///{history.plan.parent}/no.db")
    doc, replay_code, err = replay(history.plan, "0")
    assert (doc, replay_code) == (never_run, code)
    assert "before the first event" in err and "the view before any run" in err
    early = history.moments[0].at - timedelta(days=1)
    assert replay(history.plan, early.isoformat())[0] == never_run
    last = history.moments[-1]
    doc, _, err = replay(history.plan, str(last.seq + 10_000))
    assert doc == last.status
    assert f"last event of plan '{PLAN_ID}' (seq {last.seq}" in err and "current view" in err


def test_replay_refuses_a_time_without_timezone_and_garbage(history: History) -> None:
    for at, says in (
        ("2026-12-01T09:30:00", "has no timezone"),
        ("yesterday", "neither a sequence number nor an ISO 8601 time"),
    ):
        proc = run_cli("replay", str(history.plan), "--at", at)
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr
        assert proc.stdout == ""


def export_lines(plan: Path, *args: str) -> list[dict[str, Any]]:
    proc = run_cli("export", str(plan), "--format", "jsonl", *args)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_export_has_a_header_every_event_marker_and_receipt(history: History) -> None:
    lines = export_lines(history.plan)
    header, rest = lines[0], lines[1:]
    with open_ledger(history.url, create=False) as led:
        events = led.events(PLAN_ID)
        receipts = led.receipts(PLAN_ID)
        ledger_id = led.ledger_id
    assert header["type"] == "header" and header["schema_version"] == 1
    assert (header["plan_id"], header["ledger_id"]) == (PLAN_ID, ledger_id)
    assert header["last_seq"] == events[-1].seq
    markers = [e for e in events if e.kind == "marker_written"]
    assert header["counts"] == {
        "events": len(events),
        "markers": len(markers),
        "receipts": len(receipts),
    }
    assert len(markers) == 5 and len(receipts) == 1  # five runs, one action
    evs = [x for x in rest if x["type"] in ("event", "marker")]
    assert [x["seq"] for x in evs] == [e.seq for e in events]
    assert [x["kind"] for x in evs] == [e.kind.value for e in events]
    assert [x["data"] for x in evs] == [e.data for e in events]
    assert {x["kind"] for x in rest if x["type"] == "marker"} == {"marker_written"}
    assert not any(x["kind"] == "marker_written" for x in rest if x["type"] == "event")
    (rc,) = [x for x in rest if x["type"] == "receipt"]
    assert (rc["key"], rc["state"], rc["external_id"]) == (
        f"{PLAN_ID}/publish/publish",
        "applied",
        "pub-1",
    )
    assert list(rc) == ["type", *[f for f in receipts[0].model_dump() if f != "plan_id"]]
    assert [x["type"] for x in rest] == [x["type"] for x in evs] + ["receipt"]


def _body(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The export without what differs between two ledgers and two moments."""
    head = {k: v for k, v in lines[0].items() if k not in ("exported_at", "ledger_id", "ledger")}
    return [head, *lines[1:]]


def receipts_json(plan: Path, *args: str) -> list[dict[str, Any]]:
    proc = run_cli("receipt", str(plan), "publish", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    return rows


def test_a_restored_ledger_gives_the_same_status_receipts_and_export(
    history: History, ledger_url: str, tmp_path: Path
) -> None:
    export = tmp_path / "audit.jsonl"
    proc = run_cli("export", str(history.plan), "--output", str(export))
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    original = [json.loads(line) for line in export.read_text().splitlines()]

    proc = run_cli("restore", str(export), "--ledger", ledger_url)
    assert proc.returncode == 0, proc.stderr
    assert f"restored plan '{PLAN_ID}'" in proc.stdout
    assert "***" not in proc.stdout  # the closing hint is a command that works as printed
    hint = proc.stdout.split("Read it with `", 1)[1].split("`", 1)[0]
    assert hint == f"waymark status <plan file> --ledger {ledger_url}"  # no password in it

    final = history.moments[-1]
    assert status_text(history.plan, "--ledger", ledger_url) == (
        final.status,
        final.code,
        final.text,
    )
    assert receipts_json(history.plan, "--ledger", ledger_url) == receipts_json(history.plan)
    again = export_lines(history.plan, "--ledger", ledger_url)
    assert _body(again) == _body(original)
    with open_ledger(ledger_url, create=False) as led:
        assert again[0]["ledger_id"] == led.ledger_id != original[0]["ledger_id"]
        rebuilt = led.rebuild(PLAN_ID)  # the restored projection is the fold of its events
        assert led.step_states(PLAN_ID) == rebuilt
    # The seq numbers were kept: replay at a moment's seq works on the restored ledger too.
    m = history.moments[2]
    assert replay(history.plan, str(m.seq), "--ledger", ledger_url)[:2] == (m.status, m.code)
    # A second restore into the same ledger is refused and writes nothing.
    proc = run_cli("restore", str(export), "--ledger", ledger_url)
    assert (
        proc.returncode == 2 and "already has" in proc.stderr and "nothing written" in proc.stderr
    )
    with open_ledger(ledger_url, create=False) as led:
        assert len(led.events(PLAN_ID)) == original[0]["counts"]["events"]


def test_a_plan_goes_on_from_a_restored_ledger_only_with_its_identity(
    history: History, tmp_path: Path
) -> None:
    """The workdir's markers name the exported ledger: a restored ledger of its own identity is
    refused there (nothing ran); one restored with --keep-identity continues the plan, and the
    completed steps and the action are not done again."""
    export = tmp_path / "audit.jsonl"
    assert run_cli("export", str(history.plan), "-o", str(export)).returncode == 0
    workdir = tmp_path / "copy"
    shutil.copytree(history.plan.parent, workdir)
    plan = workdir / "plan.yaml"
    marker_before = (workdir / "EXECUTION_MARKER.json").read_text()

    other = f"sqlite:///{tmp_path / 'other.db'}"
    assert run_cli("restore", str(export), "--ledger", other).returncode == 0
    refused = run_cli("run", str(plan), "--ledger", other)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "was run on ledger" in refused.stderr and "but this run opened ledger" in refused.stderr
    assert "waymark restore <export file> --ledger <new ledger URL> --keep-identity" in " ".join(
        refused.stderr.split()
    )
    assert (workdir / "EXECUTION_MARKER.json").read_text() == marker_before

    same = f"sqlite:///{tmp_path / 'same.db'}"
    kept = run_cli("restore", str(export), "--ledger", same, "--keep-identity")
    assert kept.returncode == 0, kept.stderr
    went_on = run_cli("run", str(plan), "--ledger", same)
    assert went_on.returncode == 0, went_on.stdout + went_on.stderr
    assert "steps run: 0" in went_on.stdout
    assert (workdir / "published.count").read_text() == "x\n"
