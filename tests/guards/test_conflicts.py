"""State refs changed between runs stop the plan for review before any step executes.

Real Prefect runs (the CLI in subprocesses and in-process flow runs) against the session's
server; refs on a real HTTP server, real files, real git repositories, real SQLite/PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from prefect_waymark import Plan
from prefect_waymark.ledger import open_ledger
from tests._support.git_repo import git, make_repo
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess
from tests._support.plans import counting_chain
from tests._support.prefect_events import needs_review_events
from tests._support.ref_server import RefServer, serve


@pytest.fixture
def ref_server() -> Iterator[RefServer]:
    yield from serve()


def count(folder: Path, name: str) -> int:
    path = folder / f"{name}.count"
    return len(path.read_text().splitlines()) if path.exists() else 0


def three_steps(refs: list[dict[str, Any]], plan_id: str) -> Plan:
    """a and b read the refs, c reads none."""
    names = [r["name"] for r in refs]
    plan = counting_chain(plan_id, "ab", reads=names, state_refs=refs)
    return plan.add_step(id="c", depends_on=["b"], run="echo c >> c.count")


def status_json(plan: Path) -> dict[str, Any]:
    proc = run_cli("status", str(plan), "--json")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def test_http_ref_change_stops_its_reader_then_accept_and_abort(
    prefect_server: str, ref_server: RefServer, tmp_path: Path
) -> None:
    first = ref_server.set("/orders", {"status": "open"})
    plan = write_plan(
        tmp_path,
        three_steps([{"name": "orders", "kind": "http", "url": ref_server.url("/orders")}], "h1"),
    )
    proc = run_cli("run", str(plan), "--max-steps", "1")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert count(tmp_path, "a") == 1
    assert ref_server.calls["/orders"] == 2  # run start + before step a

    second = ref_server.set("/orders", {"status": "cancelled"})
    proc = run_cli("run", str(plan))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert count(tmp_path, "b") == 0 and count(tmp_path, "c") == 0
    assert "needs review: b: state ref 'orders'" in proc.stdout
    doc = status_json(plan)
    item = doc["needs_review"][0]
    assert item["step"] == "b"
    assert (item["ref"], item["accepted"], item["current"]) == ("orders", first, second)
    assert item["at"]

    events = needs_review_events("h1")
    assert events, "the run emitted no waymark.plan.needs-review event"
    payload = events[0].payload
    assert payload["steps"][0]["step"] == "b" and payload["steps"][0]["current"] == second
    assert any(r.role == "flow-run" for r in events[0].related)

    proc = run_cli("review", str(plan), "--accept", "--reason", "cancellation is expected")
    assert proc.returncode == 0, proc.stderr
    assert f"accepted: orders = {second}" in proc.stdout
    proc = run_cli("run", str(plan), "--max-steps", "1")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert count(tmp_path, "b") == 1 and count(tmp_path, "a") == 1

    # A change that only completed steps read stops nothing: c reads no ref and runs; the
    # change is on record (its re-anchor event) and the log names the readers and the rerun.
    ref_server.set("/orders", {"status": "reopened"})
    proc = run_cli("run", str(plan), "--max-steps", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "only completed steps read or write it (a, b): recorded, nothing stops" in out
    assert f"`waymark rerun {plan} a`" in out
    assert count(tmp_path, "c") == 1 and count(tmp_path, "b") == 1
    proc = run_cli("review", str(plan), "--abort", "--reason", "customer left")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("rerun", str(plan), "c").returncode == 0
    proc = run_cli("run", str(plan))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "aborted" in proc.stdout + proc.stderr and "customer left" in proc.stdout + proc.stderr
    assert count(tmp_path, "c") == 1 and count(tmp_path, "b") == 1
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        kinds = [e.kind for e in led.events("h1")]
    assert kinds.count("plan_aborted") == 1
    assert kinds.count("reanchor") >= 5 and kinds.count("accepted_versions") == 2


def _prepare_kind(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """A ref of ``kind`` and a function that changes the state it points at."""
    if kind == "file":
        (tmp_path / "terms.md").write_text("v1")
        return {"name": "s", "kind": "file", "path": "terms.md"}, lambda: (
            tmp_path / "terms.md"
        ).write_text("v2")
    if kind == "git":
        repo = make_repo(tmp_path / "repo")

        def commit() -> None:
            (repo / "a.txt").write_text("changed\n")
            git(repo, "commit", "-qam", "human edit")

        return {"name": "s", "kind": "git", "repo": "repo", "ref": "main"}, commit
    url = (
        f"sqlite:///{tmp_path / 'biz.db'}"
        if kind == "sql-sqlite"
        else request.getfixturevalue("pg_url")
    )
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE invoices (id VARCHAR(10) PRIMARY KEY, rev INTEGER)"))
        conn.execute(sa.text("INSERT INTO invoices VALUES ('i1', 1)"))

    def bump() -> None:
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE invoices SET rev = rev + 1"))
        engine.dispose()

    ref = {
        "name": "s",
        "kind": "sql",
        "url": url,
        "table": "invoices",
        "key_column": "id",
        "key": "i1",
        "version_column": "rev",
    }
    return ref, bump


@pytest.mark.parametrize("kind", ["file", "git", "sql-sqlite", "sql-postgres"])
def test_local_kinds_stop_then_accept(
    kind: str, prefect_server: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from prefect_waymark.flows import run_plan

    ref, change = _prepare_kind(kind, tmp_path, request)
    plan = write_plan(tmp_path, three_steps([ref], f"k-{kind}"))
    first = run_plan(plan=str(plan), max_steps=1)
    assert first["result"] == "stopped" and first["executed_steps"] == ["a"]
    change()
    second = run_plan(plan=str(plan))
    assert second["result"] == "needs_review"
    assert second["executed_steps"] == [] and count(tmp_path, "b") == 0
    item = second["needs_review"][0]
    assert item["step"] == "b" and item["ref"] == "s"
    assert item["accepted"] != item["current"] and item["current"]
    proc = run_cli("review", str(plan), "--accept")
    assert proc.returncode == 0, proc.stderr
    third = run_plan(plan=str(plan))
    assert third["result"] == "completed" and third["executed_steps"] == ["b", "c"]
    assert [count(tmp_path, s) for s in "abc"] == [1, 1, 1]


def test_rerun_decision_runs_a_completed_step_again(prefect_server: str, tmp_path: Path) -> None:
    """A ref change found before a completed step's dependant: --rerun runs that step again."""
    from prefect_waymark.flows import run_plan

    (tmp_path / "terms.md").write_text("v1")
    ref = {"name": "terms", "kind": "file", "path": "terms.md"}
    plan = write_plan(tmp_path, three_steps([ref], "rr"))
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["a"]
    (tmp_path / "terms.md").write_text("v2")
    assert run_plan(plan=str(plan))["result"] == "needs_review"
    assert run_cli("review", str(plan), "--step", "a", "--accept").returncode == 2  # a is fine
    proc = run_cli("review", str(plan), "--rerun")
    assert proc.returncode == 0, proc.stderr
    done = run_plan(plan=str(plan))
    assert done["result"] == "completed"
    assert [count(tmp_path, s) for s in "abc"] == [1, 1, 1]


def test_plan_own_writes_are_not_conflicts_but_unreadable_refs_are(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "writes",
            "state_refs": [
                {"name": "draft", "kind": "file", "path": "draft.md"},
                {"name": "repo", "kind": "git", "repo": "nowhere", "on_error": "fail"},
            ],
            "steps": [
                {"id": "write", "run": "echo text > draft.md", "writes": ["draft"]},
                {"id": "read", "depends_on": ["write"], "run": "cat draft.md", "reads": ["draft"]},
                {"id": "use-repo", "depends_on": ["read"], "run": "true", "reads": ["repo"]},
            ],
        },
    )
    summary = run_inprocess(plan)  # the unreadable repo fails its step
    assert summary.executed_steps == ["write", "read"]
    assert summary.failed_steps == ["use-repo"]
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        accepted = [e.data for e in led.events("writes", kinds=["accepted_versions"])]
        states = led.step_states("writes")
    assert any(d.get("reason") == "written by step write" for d in accepted)
    assert "cannot be read" in str(states["use-repo"].error)


def test_unreadable_ref_stops_for_review(
    prefect_server: str, ref_server: RefServer, tmp_path: Path
) -> None:
    from prefect_waymark.flows import run_plan

    plan = write_plan(
        tmp_path,
        three_steps([{"name": "api", "kind": "http", "url": ref_server.url("/missing")}], "unr"),
    )
    out = run_plan(plan=str(plan))
    assert out["result"] == "needs_review" and out["executed_steps"] == []
    item = out["needs_review"][0]
    assert item["step"] == "a" and item["current"] is None
    assert "HTTP 404" in item["conflicts"][0]["error"]


def test_a_changed_ref_stops_only_its_readers(prefect_server: str, tmp_path: Path) -> None:
    """A file ref read only by `deploy` (completed) changes: the run stops nothing — not the agent
    step `notes`, which reads no ref — and says who reads it. A ref a pending step reads stops
    that step, before it runs, and nothing else runs in its place blindly."""
    (tmp_path / "config.yaml").write_text("v1")
    (tmp_path / "prices.json").write_text("p1")
    doc = {
        "plan_id": "blame",
        "state_refs": [
            {"name": "config", "kind": "file", "path": "config.yaml"},
            {"name": "prices", "kind": "file", "path": "prices.json"},
        ],
        "steps": [
            {"id": "deploy", "run": "echo d >> deploy.count", "reads": ["config"]},
            {"id": "notes", "kind": "agent", "depends_on": ["deploy"], "instructions": "x"},
            {"id": "price", "branch": "p", "run": "echo p >> price.count", "reads": ["prices"]},
            # A second branch: entering it re-reads every ref; it answers only for its own.
            {"id": "tidy", "branch": "t", "run": "echo t >> tidy.count"},
        ],
    }
    plan = write_plan(tmp_path, doc)
    first = run_cli("run", str(plan), "--until", "deploy")
    assert first.returncode == 3, first.stdout + first.stderr
    assert count(tmp_path, "deploy") == 1 and count(tmp_path, "price") == 0

    (tmp_path / "config.yaml").write_text("v2")  # read only by the completed `deploy`
    second = run_cli("run", str(plan))
    out = second.stdout + second.stderr
    assert second.returncode == 3, out  # only the agent step is left: it waits for its agent
    assert "needs review" not in second.stdout
    assert "only completed steps read or write it (deploy): recorded, nothing stops" in out
    assert count(tmp_path, "price") == 1 and count(tmp_path, "deploy") == 1
    assert count(tmp_path, "tidy") == 1
    states = status_json(plan)["steps"]
    assert {s["id"]: s["status"] for s in states} == {
        "deploy": "completed",
        "notes": "pending",
        "price": "completed",
        "tidy": "completed",
    }

    # A ref a step still to run reads stops that step, named as its reader.
    (tmp_path / "prices.json").write_text("p2")
    assert run_cli("rerun", str(plan), "price").returncode == 0
    third = run_cli("run", str(plan))
    assert third.returncode == 4, third.stdout + third.stderr
    assert "needs review: price: state ref 'prices'" in third.stdout
    assert "notes" not in [i["step"] for i in status_json(plan)["needs_review"]]
    assert count(tmp_path, "price") == 1


def test_an_agent_steps_stop_never_offers_to_run_it_in_the_run() -> None:
    from prefect_waymark.review.reasons import answer_effects

    details = {"ref": "config", "accepted": "a", "current": "b"}
    agent = answer_effects(details, "notes", this_run=True, checked_in=True)
    code = answer_effects(details, "build", this_run=True)
    assert "again in this run" in code["rerun"] and "again in this run" not in agent["rerun"]
    assert "back to its executor" in agent["rerun"] and "`waymark next`" in agent["rerun"]
    assert "this run goes on with step `notes`" not in agent["accept"]
    assert "back to its executor" in agent["accept"]
