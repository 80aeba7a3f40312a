"""What a ``waymark run`` process and an agent's check-ins load beyond Prefect's own flow path
(read from ``PYTHONPROFILEIMPORTTIME``): no FastAPI, and a SQLite ledger reached through the one
ledger path (its connection layer on ``sqlite3``, no PostgreSQL driver); and that the
parameters a run sends are Prefect's. How long a run takes is a benchmark's to say
(``bench/bench_resume.py --only whole``), not a test's."""

from __future__ import annotations

import enum
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from prefect_waymark.flows.json_flow import JsonFlow, json_flow
from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain

#: The one ledger path on SQLite: its connection layer on the standard library's driver.
_SQLITE_PATH = {"prefect_waymark.ledger.connection", "prefect_waymark.ledger.sql", "sqlite3"}


def _postgres_driver(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in ("psycopg", "psycopg2", "asyncpg")}


def _imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.fixture(scope="module")
def run_modules(prefect_server: str, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules one ``waymark run`` of a 2-step plan imported (it completes the plan)."""
    work = tmp_path_factory.mktemp("run-imports")
    plan = write_plan(work, counting_chain("imports", ["a", "b"]))
    proc = run_cli("run", str(plan), cwd=work, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "completed" in proc.stdout
    assert (work / "a.count").read_text() == "a\n" and (work / "b.count").read_text() == "b\n"
    modules = _imported(proc.stderr)
    assert "prefect.flow_engine" in modules  # the reader sees what the run loads
    return modules


def test_a_run_does_not_load_fastapi_to_send_its_parameters(run_modules: set[str]) -> None:
    assert "fastapi.encoders" not in run_modules
    assert not {m for m in run_modules if m == "fastapi" or m.startswith("fastapi.")}


def test_a_run_on_a_sqlite_ledger_takes_the_one_ledger_path(run_modules: set[str]) -> None:
    assert _SQLITE_PATH <= run_modules  # the ledger was opened through its one path
    assert _postgres_driver(run_modules) == set()


def test_check_ins_on_a_sqlite_ledger_take_the_one_ledger_path(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "check-ins",
            "steps": [{"id": "draft", "kind": "agent", "owner": "w", "instructions": "Write it."}],
        },
    )
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    for args in (["next"], ["start", "draft"], ["done", "draft"]):
        proc = run_cli(*args[:1], str(plan), *args[1:], "--executor", "w", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        modules = _imported(proc.stderr)
        assert "prefect_waymark.ledger.sql_ledger" in modules or args == ["next"]
        assert _SQLITE_PATH <= modules or args == ["next"], args
        assert _postgres_driver(modules) == set(), args
        assert "prefect.flow_engine" not in modules, args  # no Prefect engine for a check-in
    done = run_cli("status", str(plan), "--json", cwd=tmp_path)
    assert '"completed"' in done.stdout, done.stdout


class _Colour(str, enum.Enum):
    red = "r"


class _Model(BaseModel):
    name: str
    size: int = 3


def _deep(n: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(n):
        out = [out]
    return out


def _loop() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _flow() -> JsonFlow[..., Any]:
    def fn(**kwargs: Any) -> None:
        return None

    return json_flow(name="serialize-check")(fn)


@pytest.mark.parametrize(
    "params",
    [
        {"plan": "plan.yaml", "workdir": None, "max_steps": 5, "lease": 60.0, "flag": True},
        {"nested": {"a": [1, 2.5, None, {"b": "c"}], "d": []}, "empty": {}},
        {"nan": math.nan, "inf": math.inf, "big": 10**30, "uni": "ümlaut ✓"},
        # Not JSON's own types: Prefect's encoder decides (a tuple, a path, an enum, a model,
        # a non-string key, a str subclass nested in a list).
        {"t": (1, 2), "p": Path("/x/y"), "e": _Colour.red, "m": _Model(name="x")},
        {"keys": {1: "one"}, "inner": ["a", _Colour.red], "plain": "x", "n": 1},
        {"sa": {"_sa_instance_state": 1, "a": [{"_sa": 2, "b": 3}]}, "deep": _deep(3000)},
        {"loop": _loop(), "ok": [1]},
    ],
    ids=["run", "nested", "floats", "objects", "mixed", "sa-keys-and-depth", "loop"],
)
def test_parameters_serialize_as_prefect_serializes_them(params: dict[str, Any]) -> None:
    from prefect import Flow

    flow = _flow()
    ours = flow.serialize_parameters(dict(params))
    theirs = Flow.serialize_parameters(flow, dict(params))
    assert list(ours) == list(theirs) == list(params)
    assert repr(ours) == repr(theirs)  # nan included; types too (a tuple would become a list)
    for key, value in params.items():  # copies, as Prefect's encoder makes: never the caller's
        if isinstance(value, list | dict) and value:
            assert ours[key] is not value
