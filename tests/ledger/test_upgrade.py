"""A multi-week plan's ledger outlives a version of prefect-waymark: a plan half run by 0.1.0
(commit 7cbb01f) or 0.2.0 (commit d541f3a; fixtures in tests/ledger/fixtures/) resumes under
this version on SQLite and on PostgreSQL (restored from that version's dump) — the completed
steps, an irreversible action among them, are not done again, and the marker history goes on
from the old run's entry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests._support.helpers import run_cli
from tests._support.postgres import PgServer
from tests._support.resume_helpers import runs_of

FIXTURES = Path(__file__).parent / "fixtures"


def _resume_and_check(work: Path, *ledger_args: str) -> None:
    before = run_cli("status", str(work / "plan.yaml"), "--json", *ledger_args)
    assert before.returncode == 0, before.stderr
    doc = json.loads(before.stdout)
    assert {s["id"]: s["status"] for s in doc["steps"]} == {
        "collect": "completed",
        "publish": "completed",
        "report": "pending",
    }
    assert [r["action"] for r in doc["steps"][1]["receipts"]] == ["publish-data"]

    proc = run_cli("run", str(work / "plan.yaml"), *ledger_args, cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [runs_of(work / f"{s}.count") for s in ("collect", "publish", "report")] == [1, 1, 1]
    history = json.loads((work / "EXECUTION_MARKER.json").read_text())["execution_history"]
    assert [h["result"] for h in history] == ["stopped", "completed"]
    assert history[0]["executor"] == "agent-old"
    assert history[1]["executed_steps"] == ["report"]
    assert history[1]["skipped_count"] == 2  # a count; the 0.1.0 entry keeps its list


RELEASES = pytest.mark.parametrize("release", ["v0.1.0", "v0.2.0"])


@RELEASES
def test_a_sqlite_ledger_of_an_earlier_release_resumes(
    prefect_server: str, tmp_path: Path, release: str
) -> None:
    work = tmp_path / "plan"
    shutil.copytree(FIXTURES / f"{release}-sqlite", work)
    _resume_and_check(work)


@RELEASES
def test_a_postgres_ledger_of_an_earlier_release_resumes(
    prefect_server: str, pg_server: PgServer, pg_url: str, tmp_path: Path, release: str
) -> None:
    work = tmp_path / "plan"
    shutil.copytree(FIXTURES / f"{release}-postgres", work)
    pg_server.restore(pg_url, work / "ledger.sql")
    _resume_and_check(work, "--ledger", pg_url)
