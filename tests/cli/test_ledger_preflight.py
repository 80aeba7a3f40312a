"""The real ``waymark`` command refuses, before anything runs, a ledger that cannot keep a record
or a malformed one and a folder the run could not write: exit 2,
one line naming the URL or the path and why, no traceback, no step run, nothing written.

As root, an unwritable folder is one under a regular file (root ignores permission bits)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain
from tests._support.postgres import PgServer

PLAN = counting_chain("pre", "ab")
PG_FORM = "postgresql+psycopg://user@host:5432/DBNAME"


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _refused(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


COMMANDS = [
    ["run"],
    ["resume"],
    ["status"],
    ["status", "--rebuild"],
    ["rerun", "{plan}", "a"],
    ["marker"],
    ["marker", "--rebuild"],
    ["review", "{plan}", "--accept"],
    ["receipt", "{plan}", "a"],
]


def _args(command: list[str], plan: Path) -> list[str]:
    if "{plan}" in command:
        return [part.replace("{plan}", str(plan)) for part in command]
    return [command[0], str(plan), *command[1:]]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("sqlite://", "in-memory SQLite"),
        ("sqlite:///:memory:", "in-memory SQLite"),
        ("notaurl", "not a database URL"),
        ("postgresql://u@h:nope/db", "port is not a number"),
    ],
)
def test_every_command_refuses_a_bad_ledger_url(tmp_path: Path, url: str, why: str) -> None:
    plan = write_plan(tmp_path, PLAN)
    for command in COMMANDS:
        proc = run_cli(*_args(command, plan), "--ledger", url, cwd=tmp_path)
        _refused(proc, f"ledger URL {url!r} (from --ledger)", why)
    assert _tree(tmp_path) == ["plan.yaml"]  # no a.count: no step ran; no ledger file


def test_an_in_memory_ledger_from_the_environment_runs_nothing(tmp_path: Path) -> None:
    """The issue's case: the whole plan ran on ``sqlite://``, then the ledger forgot it."""
    plan = write_plan(tmp_path, PLAN)
    proc = run_cli("run", str(plan), cwd=tmp_path, env={"WAYMARK_LEDGER_URL": "sqlite://"})
    line = _refused(proc, "$WAYMARK_LEDGER_URL", "in-memory", "<workdir>/.waymark/ledger.db")
    assert "sqlite:////ABSOLUTE/PATH/ledger.db" in line
    assert _tree(tmp_path) == ["plan.yaml"]


def test_a_postgresql_url_must_name_its_database(
    tmp_path: Path, pg_server: PgServer, pg_url: str
) -> None:
    plan = write_plan(tmp_path, PLAN)
    server = pg_server.server_url  # postgresql+psycopg://postgres@HOST:PORT, the test server
    for url in (server, server + "/", "postgresql://"):
        for command in (["run"], ["status"]):
            proc = run_cli(*_args(command, plan), "--ledger", url, env={"PGDATABASE": "x"})
            _refused(proc, "names no database", PG_FORM)
    # The hint's form works: the same server with the database named.
    proc = run_cli("status", str(plan), "--ledger", pg_url, "--json")
    assert proc.returncode == 0, proc.stderr
    assert _tree(tmp_path) == ["plan.yaml"]


def test_a_markers_folder_that_cannot_be_created_is_found_first(tmp_path: Path) -> None:
    """The issue's case: ``--markers-dir`` under a file was found after the action had run."""
    plan = write_plan(tmp_path, PLAN)
    (tmp_path / "somefile").write_text("x")
    target = tmp_path / "somefile" / "markers"
    proc = run_cli("run", str(plan), "--markers-dir", str(target))
    _refused(
        proc,
        f"cannot write the markers folder at {target}",
        f"{tmp_path / 'somefile'} is a file, not a folder",
    )
    assert _tree(tmp_path) == ["plan.yaml", "somefile"]


def test_a_ledger_folder_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)
    (tmp_path / "somefile").write_text("x")
    ledger = tmp_path / "somefile" / "deep" / "ledger.db"
    proc = run_cli("run", str(plan), "--ledger", f"sqlite:///{ledger}")
    _refused(proc, f"cannot write the ledger folder at {ledger.parent}", "is a file, not a folder")
    proc = run_cli("run", str(plan), "--ledger", f"sqlite:///{tmp_path}")
    _refused(proc, f"cannot write the ledger at {tmp_path}", "a folder, not a ledger file")
    assert _tree(tmp_path) == ["plan.yaml", "somefile"]


def test_a_workdir_whose_waymark_folder_is_a_file_is_refused(tmp_path: Path) -> None:
    """``<workdir>/.waymark`` holds the default ledger and the results: a file there stops both
    (the ledger's folder is checked first)."""
    plan = write_plan(tmp_path, PLAN)
    (tmp_path / ".waymark").write_text("not a folder")
    proc = run_cli("run", str(plan))
    _refused(proc, f"{tmp_path / '.waymark'}", "it is a file, not a folder")
    # With the ledger elsewhere, the results folder under it is what cannot be created.
    other = tmp_path.parent / f"{tmp_path.name}-ledger" / "ledger.db"
    proc = run_cli("run", str(plan), "--ledger", f"sqlite:///{other}")
    _refused(proc, f"cannot write the results folder at {tmp_path / '.waymark' / 'results'}")
    assert _tree(tmp_path) == [".waymark", "plan.yaml"] and not other.parent.exists()


def test_folders_that_do_not_exist_yet_are_created_by_the_run(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, PLAN)
    markers = tmp_path / "out" / "markers"
    ledger = tmp_path / "led" / "ger" / "ledger.db"
    proc = run_cli(
        "run", str(plan), "--markers-dir", str(markers), "--ledger", f"sqlite:///{ledger}"
    )
    assert proc.returncode == 0, proc.stderr
    assert (markers / "EXECUTION_MARKER.json").is_file() and ledger.is_file()
    assert (tmp_path / "a.count").read_text() == "a\n"
    assert not list(tmp_path.rglob(".waymark-preflight-*"))  # the probes are gone
