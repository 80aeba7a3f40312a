"""A ledger value waymark could not have written is bad input: every command that reads it
ends with exit 2 and one line naming the ledger, the row and the field — never a traceback — and
a run refuses before recording anything. Damaged by hand with SQL (the append-only triggers
dropped or disabled first), on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from prefect_waymark.ledger import EventKind, open_ledger
from tests._support.helpers import run_cli, write_plan

PLAN = {"plan_id": "dmg", "steps": [{"id": "a", "run": "echo a"}]}
READERS = [["status"], ["status", "--json"], ["marker"], ["export", "-o", "{out}"]]


def _engine(url: str) -> sa.Engine:
    return sa.create_engine(url, poolclass=sa.pool.NullPool)


def _damage(url: str, statement: str) -> None:
    with _engine(url).begin() as conn:
        if url.startswith("sqlite"):
            conn.execute(sa.text("DROP TRIGGER IF EXISTS waymark_events_no_update"))
        else:
            conn.execute(sa.text("ALTER TABLE waymark_events DISABLE TRIGGER USER"))
        conn.execute(sa.text(statement))


def _events(url: str) -> int:
    with _engine(url).connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM waymark_events")).scalar_one())


@pytest.fixture
def plan(tmp_path: Path, ledger_url: str) -> Path:
    path = write_plan(tmp_path / "proj", PLAN)
    with open_ledger(ledger_url) as led:
        led.record("dmg", EventKind.run_started, run_id="r1", step_hashes={})
        led.record("dmg", EventKind.step_started, step_id="a", run_id="r1")
    return path


DAMAGES = {
    "schema version": (
        "UPDATE waymark_meta SET value = 'two' WHERE key = 'schema_version'",
        "has schema_version 'two' in its waymark_meta table, not a number",
    ),
    "event data": (
        "UPDATE waymark_events SET data = '{bad' WHERE seq = (SELECT max(seq) FROM waymark_events)",
        "kind 'step_started') cannot be read",
    ),
    "event time": (
        "UPDATE waymark_events SET at = 'yesterday' WHERE kind = 'run_started'",
        "kind 'run_started') cannot be read: Invalid isoformat string",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_every_reader_says_what_is_damaged_with_exit_2(
    plan: Path, ledger_url: str, damage: str, tmp_path: Path
) -> None:
    """A command that reads the damaged value refuses (the schema version: every command; an
    event: export, which reads them all); one that does not need it (status reads the steps'
    standing) may answer — never with a traceback."""
    statement, expected = DAMAGES[damage]
    _damage(ledger_url, statement)
    refused = []
    for args in READERS:
        args = [a.format(out=tmp_path / "x.jsonl") for a in args]
        proc = run_cli(args[0], str(plan), *args[1:], "--ledger", ledger_url, timeout=120)
        assert "Traceback" not in proc.stderr and proc.returncode in (0, 2), (args, proc.stderr)
        if proc.returncode == 2:
            assert expected in proc.stderr and "waymark restore --help" in proc.stderr
            refused.append(args[0] if len(args) == 1 else " ".join(args[:2]))
    must = (
        {"status", "status --json", "marker", "export -o"}
        if damage == "schema version"
        else {"export -o"}
    )
    assert must <= set(refused), refused
    assert not (tmp_path / "x.jsonl").exists()
    assert run_cli("restore", "--help").returncode == 0  # the hint works as written


@pytest.mark.prefect
@pytest.mark.parametrize("damage", ["schema version", "run start data"])
def test_a_run_on_a_damaged_ledger_records_nothing(
    plan: Path, ledger_url: str, damage: str, prefect_server: str
) -> None:
    """A run reads the plan's runs before it records its own: a damaged one refuses it."""
    statement, expected = (
        DAMAGES[damage]
        if damage in DAMAGES
        else (
            "UPDATE waymark_events SET data = '{bad' WHERE kind = 'run_started'",
            "kind 'run_started') cannot be read",
        )
    )
    _damage(ledger_url, statement)
    before = _events(ledger_url)
    proc = run_cli("run", str(plan), "--ledger", ledger_url, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert _events(ledger_url) == before
    assert not (plan.parent / "EXECUTION_MARKER.json").exists()
