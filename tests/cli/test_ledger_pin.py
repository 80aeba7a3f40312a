"""A plan pins its ledger, and each ledger has an identity.

The bug: a plan published through a PostgreSQL ledger, then run from another checkout where
``$WAYMARK_LEDGER_URL`` was not set, silently used a new SQLite ledger and published again. With
``ledger:`` in the plan file the second checkout uses the plan's ledger (nothing runs again) or
is refused before anything runs; a workdir whose marker names another ledger is refused with a
message that names both; a refused run leaves no ``ledger.db`` behind. Real ``waymark`` processes,
a real PostgreSQL ledger, a real Prefect Secret block on the session server."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain
from tests._support.resume_helpers import runs_of


def _plan(folder: Path, ledger: Any, plan_id: str = "pinned") -> Path:
    plan = counting_chain(plan_id, ["collect", "publish"]).to_dict()
    plan["steps"][1]["action"] = "publish-data"
    if ledger is not None:
        plan["ledger"] = ledger
    return write_plan(folder, plan)


def _refused(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr
    return proc.stderr


@pytest.mark.parametrize(
    ("ledger", "needle"),
    [
        ({"url": "postgresql+psycopg://ann:hunter2@db:5432/plans"}, "password"),
        ({"url": "sqlite:///relative/ledger.db"}, "absolute path"),
        ({"url": "sqlite://"}, "in-memory"),
        ({"url": "notaurl"}, "not a database URL"),
        ({"env": "TEAM_LEDGER", "secret": "team-ledger"}, "exactly one of url, env, secret"),
        ({}, "exactly one of url, env, secret"),
        ({"env": "not a name"}, "not an environment variable name"),
        ({"secret": "Team_Ledger"}, "not a block name"),
        ({"env": "TEAM_LEDGER", "required": "yes"}, "required"),
        ({"env": "TEAM_LEDGER", "extra": 1}, "extra"),
    ],
)
def test_a_bad_pin_is_refused_by_validate(tmp_path: Path, ledger: Any, needle: str) -> None:
    plan = _plan(tmp_path, ledger)
    proc = run_cli("validate", str(plan))
    err = _refused(proc, "ledger", needle)
    assert "hunter2" not in err
    assert not (tmp_path / ".waymark").exists()


def test_a_required_pin_that_cannot_be_had_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    plan = _plan(tmp_path, {"env": "WAYMARK_TEST_UNSET_LEDGER"})
    for command in (["run"], ["status"], ["marker"]):
        proc = run_cli(*command, str(plan), env={"WAYMARK_LEDGER_URL": ""})
        _refused(proc, "$WAYMARK_TEST_UNSET_LEDGER", "not set", "nothing ran")
    assert not (tmp_path / "collect.count").exists()
    assert not (tmp_path / ".waymark").exists()  # no empty ledger.db left behind


@pytest.mark.postgres
def test_a_second_checkout_uses_the_pinned_ledger_and_repeats_nothing(
    prefect_server: str, pg_url: str, tmp_path: Path
) -> None:
    first, second = tmp_path / "laptop", tmp_path / "ci-runner"
    pin = {"env": "TEAM_LEDGER_URL"}
    _plan(first, pin)
    env = {"TEAM_LEDGER_URL": pg_url}
    proc = run_cli("run", str(first / "plan.yaml"), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Another checkout: the same plan file, no marker, no $WAYMARK_LEDGER_URL.
    _plan(second, pin)
    proc = run_cli("run", str(second / "plan.yaml"), env={**env, "WAYMARK_LEDGER_URL": ""})
    # The pinned ledger knows both steps are done. Their persisted results live in the first
    # checkout's folder, which this one cannot reach: refused before anything is recorded
    # (never a review stop on the shared plan), with the one line that fixes it.
    err = _refused(proc, "collect (its result", "publish (its result", "nothing was recorded")
    theirs = first / ".waymark" / "results"
    assert f"--results {theirs}" in err and f"results: {theirs}" in err
    assert [runs_of(first / f"{s}.count") for s in ("collect", "publish")] == [1, 1]
    assert not (second / "collect.count").exists() and not (second / "publish.count").exists()
    assert not (second / ".waymark" / "ledger.db").exists()
    # The line it gave: nothing runs again, the action is not repeated.
    proc = run_cli(
        "run", str(second / "plan.yaml"), "--results", str(theirs),
        env={**env, "WAYMARK_LEDGER_URL": ""},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "steps run: 0" in proc.stdout
    assert [runs_of(first / f"{s}.count") for s in ("collect", "publish")] == [1, 1]
    # Pointing that checkout at another ledger contradicts the pin: refused, nothing written.
    other = f"sqlite:///{tmp_path / 'other.db'}"
    proc = run_cli("run", str(second / "plan.yaml"), "--ledger", other, env=env)
    _refused(proc, "--ledger names the ledger", "the plan pins", "nothing ran")
    assert not (tmp_path / "other.db").exists()
    # The marker names the pinned ledger by its identity.
    history = json.loads((second / "EXECUTION_MARKER.json").read_text())["execution_history"]
    ids = {h["ledger_id"] for h in history}
    assert len(ids) == 1 and None not in ids
    assert history[-1]["ledger"] == pg_url


def test_a_pin_that_is_not_required_falls_back(prefect_server: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path, {"env": "WAYMARK_TEST_UNSET_LEDGER", "required": False})
    proc = run_cli("run", str(plan), env={"WAYMARK_LEDGER_URL": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / ".waymark" / "ledger.db").exists()  # the embedded default


def test_a_secret_block_pin(prefect_server: str, tmp_path: Path) -> None:
    from prefect.blocks.system import Secret

    name = f"waymark-ledger-{uuid.uuid4().hex[:8]}"
    db = tmp_path / "team" / "ledger.db"
    Secret(value=f"sqlite:///{db}").save(name)
    plan = _plan(tmp_path / "work", {"secret": name})
    proc = run_cli("run", str(plan))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert db.exists() and not (tmp_path / "work" / ".waymark" / "ledger.db").exists()
    status = run_cli("status", str(plan), "--json")
    assert status.returncode == 0, status.stderr
    assert {s["status"] for s in json.loads(status.stdout)["steps"]} == {"completed"}
    missing = _plan(tmp_path / "work2", {"secret": f"{name}-missing"})
    _refused(run_cli("run", str(missing)), f"{name}-missing", "does not exist", "nothing ran")
    assert not (tmp_path / "work2" / ".waymark").exists()


def test_a_workdir_whose_marker_names_another_ledger_is_refused(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = _plan(tmp_path / "work", None)
    proc = run_cli("run", str(plan))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    marker = json.loads((tmp_path / "work" / "EXECUTION_MARKER.json").read_text())
    first_id = marker["execution_history"][-1]["ledger_id"]
    # A ledger that does not exist yet: refused, and no empty ledger file is created.
    fresh = tmp_path / "fresh.db"
    proc = run_cli("run", str(plan), "--ledger", f"sqlite:///{fresh}")
    _refused(proc, first_id, "this ledger has none")
    assert not fresh.exists()
    # Another ledger that exists (and holds the same plan id, copied): refused, naming both.
    other = tmp_path / "other.db"
    shutil.copy(tmp_path / "work" / ".waymark" / "ledger.db", other)
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{other}")
    with engine.begin() as conn:  # the copy gets an identity of its own, as a restore might
        conn.execute(text("UPDATE waymark_meta SET value = 'other-id' WHERE key = 'ledger_id'"))
    engine.dispose()
    proc = run_cli("run", str(plan), "--ledger", f"sqlite:///{other}")
    err = _refused(proc, first_id, "other-id", "nothing ran", "pin it in the plan file")
    assert "Traceback" not in err
    assert runs_of(tmp_path / "work" / "collect.count") == 1
