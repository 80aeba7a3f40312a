"""A plan's state beyond one folder: two workdirs that never share a file —
two machines, or a fresh clone per run — alternate runs of one plan on one ledger and one result
storage (a SQLite file and a folder; a PostgreSQL database and a saved ``LocalFileSystem``
block). No step is redone, none skipped, every declared output is present in both (restored
from the storage, hash checked), an output a person edited still stops for review, and the
markers agree. Real CLI runs on the session's Prefect server."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pytest

from prefect_waymark.results.outputs import output_key
from tests._support.helpers import run_cli, write_plan
from tests._support.resume_helpers import runs_of

PLAN = {
    "plan_id": "shared-state",
    "steps": [
        {
            "id": "collect",
            "run": "echo collect >> collect.count; echo '{\"rows\": 3}' > data.json",
            "outputs": ["data.json"],
        },
        {
            "id": "analyse",
            "depends_on": ["collect"],
            "run": "echo analyse >> analyse.count; grep -q rows data.json && cp data.json out.md",
            "outputs": ["out.md"],
        },
        {
            "id": "publish",
            "depends_on": ["analyse"],
            "run": "echo publish >> publish.count; test -f out.md",
            "action": "publish-report",
        },
    ],
}


def _total(folders: list[Path], step: str) -> int:
    return sum(runs_of(f / f"{step}.count") for f in folders)


def _shared_state(kind: str, request: pytest.FixtureRequest, team: Path) -> list[str]:
    """``--ledger`` and ``--results`` of the team: a SQLite file and a folder, or (the issue's
    form) one PostgreSQL database and a saved ``LocalFileSystem`` block, by its slug."""
    if kind == "folder-sqlite":
        return ["--ledger", f"sqlite:///{team / 'ledger.db'}", "--results", str(team / "results")]
    from prefect.filesystems import LocalFileSystem

    name = f"shared-state-{uuid.uuid4().hex[:8]}"
    LocalFileSystem(basepath=str(team / "block")).save(name)
    pg_url: str = request.getfixturevalue("pg_url")
    return ["--ledger", pg_url, "--results", f"local-file-system/{name}"]


@pytest.mark.parametrize("kind", ["folder-sqlite", "block-postgres"])
def test_two_workdirs_alternate_on_one_ledger_and_one_result_storage(
    prefect_server: str, tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    for folder in (a, b):
        write_plan(folder, PLAN)
    shared = _shared_state(kind, request, tmp_path / "team")

    def run(folder: Path, *extra: str) -> str:
        proc = run_cli("run", str(folder / "plan.yaml"), *shared, *extra)
        assert proc.returncode in (0, 3), proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    run(a, "--max-steps", "1")  # collect, on machine a
    out = run(b, "--max-steps", "1")  # analyse, on machine b: needs a's data.json
    assert "output data.json of step collect restored from the result storage" in out
    assert (b / "data.json").read_text() == (a / "data.json").read_text()
    out = run(a)  # publish, on machine a: analyse's out.md comes back from the storage
    assert "output out.md of step analyse restored" in out
    folders = [a, b]
    assert [_total(folders, s) for s in ("collect", "analyse", "publish")] == [1, 1, 1]
    assert runs_of(b / "collect.count") == 0 and runs_of(a / "analyse.count") == 0
    for folder in folders:
        assert (folder / "data.json").exists() and (folder / "out.md").exists()
    if kind == "block-postgres":  # the outputs b and a restored came through the block
        for rel in ("data.json", "out.md"):
            sha = hashlib.sha256((a / rel).read_bytes()).hexdigest()
            assert (tmp_path / "team" / "block" / output_key(sha)).read_bytes() == (
                a / rel
            ).read_bytes()
        assert not (tmp_path / "team" / "results").exists()

    # A person's edit is still an edit: present but different stops for review.
    (b / "data.json").write_text('{"rows": 4}')
    proc = run_cli("run", str(b / "plan.yaml"), *shared)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "output changed since the step completed: data.json" in proc.stdout
    assert [_total(folders, s) for s in ("collect", "analyse", "publish")] == [1, 1, 1]

    history = json.loads((a / "EXECUTION_MARKER.json").read_text())["execution_history"]
    assert [h["executed_steps"] for h in history] == [["collect"], ["analyse"], ["publish"]]
    assert [h["workdir"] for h in history] == [str(a), str(b), str(a)]
    assert len({h["ledger_id"] for h in history}) == 1


def test_a_missing_output_without_result_storage_still_stops_for_review(
    prefect_server: str, tmp_path: Path
) -> None:
    """No storage given: nothing to restore from, so a missing output is not guessed."""
    plan = write_plan(tmp_path, PLAN)
    assert run_cli("run", str(plan), "--max-steps", "1").returncode == 3
    (tmp_path / "data.json").unlink()
    proc = run_cli("run", str(plan))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "data.json" in proc.stdout and runs_of(tmp_path / "analyse.count") == 0


def test_a_bad_results_option_is_refused(prefect_server: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)
    proc = run_cli("run", str(plan), "--results", "local-file-system/no-such-block-here")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--results local-file-system/no-such-block-here" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "collect.count").exists()
