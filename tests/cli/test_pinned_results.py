"""A plan's results live where its ledger lives: two folders, one PostgreSQL ledger.

Folder A and folder B hold two copies of one plan file whose ledger is pinned. With the result
storage pinned beside it (``results:``), B continues where A stopped — the agent step's upstream
output restored in B, the code steps' values read from the storage — and A's next run goes on
from there: no step is done twice (counted), no review stop. Without it, B is refused before
anything is recorded (exit 2, naming the steps, the storage and the line that fixes it) and A's
plan is untouched. Hints carry the options given. Real ``waymark`` processes, a real ledger.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan
from tests._support.resume_helpers import runs_of

pytestmark = pytest.mark.postgres


def _plan(
    folder: Path, counts: Path, plan_id: str, results: Any = None, *, pinned: bool = True
) -> Path:
    """a (code, an output) -> w (an agent's step) -> c (code, reads a's output) -> d."""
    doc: dict[str, Any] = {
        "plan_id": plan_id,
        **({"ledger": {"env": "TEAM_LEDGER_URL"}} if pinned else {}),
        "steps": [
            {
                "id": "a",
                "run": f"echo a >> {counts}/a.count; mkdir -p out; echo from-a > out/a.txt",
                "outputs": ["out/a.txt"],
            },
            {"id": "w", "kind": "agent", "instructions": "review a", "depends_on": ["a"]},
            {
                "id": "c",
                "run": f"echo c >> {counts}/c.count; cat out/a.txt > out/c.txt",
                "depends_on": ["a", "w"],
                "outputs": ["out/c.txt"],
            },
            {
                "id": "d",
                "run": f"echo d >> {counts}/d.count; cat out/c.txt > out/d.txt",
                "depends_on": ["c"],
                "outputs": ["out/d.txt"],
            },
        ],
    }
    if results is not None:
        doc["results"] = results
    return write_plan(folder, doc)


def _events(pg_url: str, plan_id: str) -> list[Any]:
    with open_ledger(pg_url, create=False) as led:
        return led.events(plan_id)


def _ok(proc: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc.stdout


def _setup(tmp_path: Path, plan_id: str, results: Any) -> tuple[Path, Path, Path]:
    """The counts folder and the plan's two copies, in folders A and B."""
    counts = tmp_path / "counts"
    counts.mkdir()
    a = _plan(tmp_path / "A", counts, plan_id, results)
    return counts, a, _plan(tmp_path / "B", counts, plan_id, results)


def test_a_second_folder_continues_with_the_pinned_storage(
    prefect_server: str, pg_url: str, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-results"
    env = {"TEAM_LEDGER_URL": pg_url, "TEAM_RESULTS": str(shared), "WAYMARK_LEDGER_URL": ""}
    counts, plan_a, plan_b = _setup(tmp_path, "two-folders", {"env": "TEAM_RESULTS"})
    # Folder A runs a, then stops before the agent's step w.
    out = _ok(run_cli("run", str(plan_a), env=env), 3)
    assert "steps run: 1" in out

    # Folder B, an agent, no flags: a's output is restored here from the pinned storage.
    doc = json.loads(_ok(run_cli("next", str(plan_b), "--executor", "bot", "--json", env=env)))
    assert doc["step"]["id"] == "w"
    (up,) = doc["step"]["upstream"]
    assert up["outputs"][0]["here"] is True
    assert (plan_b.parent / "out" / "a.txt").read_text() == "from-a\n"
    assert doc["boundary"]["next_start"]["step"] == "w"
    _ok(run_cli("start", str(plan_b), "w", "--executor", "bot", env=env))
    _ok(run_cli("done", str(plan_b), "w", "--executor", "bot", env=env))
    # The last marker (A's run) said "next: w"; the plan's true next start is c.
    doc = json.loads(_ok(run_cli("next", str(plan_b), "--executor", "bot", "--json", env=env), 3))
    assert doc["boundary"]["next_start"]["step"] == "c"
    assert "waymark run" in doc["reason"] and "--results" not in doc["reason"]

    # Folder B runs c: a's value comes from the storage, a is not run again.
    out = _ok(run_cli("run", str(plan_b), "--max-steps", "1", env=env), 3)
    assert "steps run: 1" in out and "needs review" not in out
    assert (plan_b.parent / "out" / "c.txt").read_text() == "from-a\n"

    # Folder A goes on where B stopped: c's output restored, d runs; nothing stopped A.
    out = _ok(run_cli("run", str(plan_a), env=env))
    assert "steps run: 1" in out and "needs review" not in out
    assert (plan_a.parent / "out" / "d.txt").read_text() == "from-a\n"
    assert [runs_of(counts / f"{s}.count") for s in "acd"] == [1, 1, 1]
    kinds = [e.kind for e in _events(pg_url, "two-folders")]
    assert "step_needs_review" not in kinds
    assert kinds.count("step_completed") == 4


def test_without_the_storage_a_second_folder_is_refused_before_recording(
    prefect_server: str, pg_url: str, tmp_path: Path
) -> None:
    env = {"TEAM_LEDGER_URL": pg_url, "WAYMARK_LEDGER_URL": ""}
    counts, plan_a, plan_b = _setup(tmp_path, "no-storage", None)
    _ok(run_cli("run", str(plan_a), env=env), 3)
    _ok(run_cli("start", str(plan_a), "w", "--executor", "bot", env=env))
    _ok(run_cli("done", str(plan_a), "w", "--executor", "bot", env=env))
    before = len(_events(pg_url, "no-storage"))

    for command in (
        ["run", str(plan_b)],
        ["next", str(plan_b), "--executor", "bot"],
        ["run", str(plan_b), "--workdir", str(plan_b.parent)],
    ):
        proc = run_cli(*command, env=env)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        err = proc.stderr
        assert "a (" in err and "output out/a.txt" in err and "nothing was recorded" in err
        assert str(plan_b.parent / ".waymark" / "results") in err  # which storage
        # The line that fixes it works as written: work in the folder that has them.
        assert f"--workdir {plan_a.parent}" in err
    assert len(_events(pg_url, "no-storage")) == before  # nothing recorded
    assert not (plan_b.parent / "out").exists()
    assert not (counts / "c.count").exists()

    # Folder A's plan is untouched: it goes on, nothing stops it, nothing runs twice.
    out = _ok(run_cli("run", str(plan_a), env=env))
    assert "steps run: 2" in out and "needs review" not in out
    assert [runs_of(counts / f"{s}.count") for s in "acd"] == [1, 1, 1]
    assert "step_needs_review" not in [e.kind for e in _events(pg_url, "no-storage")]


def test_hints_carry_the_options_given(prefect_server: str, pg_url: str, tmp_path: Path) -> None:
    shared, work = tmp_path / "shared", tmp_path / "work"
    work.mkdir()
    counts = tmp_path / "counts"
    counts.mkdir()
    plan = _plan(tmp_path / "plans", counts, "hints", pinned=False)
    flags = ["--workdir", str(work), "--ledger", pg_url, "--results", str(shared)]
    _ok(run_cli("run", str(plan), *flags), 3)
    doc = json.loads(_ok(run_cli("next", str(plan), "--executor", "bot", "--json", *flags)))
    for name in ("start", "tick", "done"):
        command = doc["step"]["commands"][name]
        for flag, value in zip(flags[::2], flags[1::2], strict=True):
            if flag == "--results" and name == "tick":  # tick takes none: not carried
                assert "--results" not in command
                continue
            assert f"{flag} {value}" in command, (name, command)
    # The hint works as written: its own start, then done, then next says a flow run does c.
    start = doc["step"]["commands"]["start"].split()
    _ok(run_cli(*start[1:]))
    _ok(run_cli("done", str(plan), "w", "--executor", "bot", *flags))
    text = _ok(run_cli("next", str(plan), "--executor", "bot", *flags), 3)
    line = next(x for x in text.splitlines() if "a flow run does it" in x)
    command = line.split("(`", 1)[1].rstrip(")`")
    assert command.startswith(f"waymark run {plan}")
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        assert f"{flag} {value}" in command
    out = _ok(run_cli(*command.split()[1:]))  # as printed: c and d run, a is not redone
    assert "steps run: 2" in out
    assert [runs_of(counts / f"{s}.count") for s in "acd"] == [1, 1, 1]


def test_an_outdated_copy_is_restored_not_a_review_stop(
    prefect_server: str, pg_url: str, tmp_path: Path
) -> None:
    """Found by the soak (bench/soak.py): folder B holds a restored copy of `a`'s output; `a` is
    made again in folder A (a rerun); B's copy is then an older version, which B's next run took
    for a person's edit and stopped for review — a stop nobody caused. It is the version the
    storage kept before: restored, nothing stops. A person's edit in B still stops."""
    env = {"TEAM_LEDGER_URL": pg_url, "TEAM_RESULTS": str(tmp_path / "shared")}
    env["WAYMARK_LEDGER_URL"] = ""
    counts = tmp_path / "counts"
    counts.mkdir()
    doc: dict[str, Any] = {
        "plan_id": "outdated-copy",
        "ledger": {"env": "TEAM_LEDGER_URL"},
        "results": {"env": "TEAM_RESULTS"},
        "steps": [
            {
                "id": "a",
                "run": f"echo a >> {counts}/a.count; mkdir -p out; date +%s%N > out/a.txt",
                "outputs": ["out/a.txt"],
            },
            {
                "id": "b",
                "run": f"echo b >> {counts}/b.count; cat out/a.txt > b.txt",
                "depends_on": ["a"],
                "outputs": ["b.txt"],
            },
        ],
    }
    plan_a, plan_b = write_plan(tmp_path / "A", doc), write_plan(tmp_path / "B", doc)
    _ok(run_cli("run", str(plan_a), env=env))
    _ok(run_cli("run", str(plan_b), env=env))  # nothing to run: B restores the outputs
    first = (tmp_path / "B" / "out" / "a.txt").read_text()
    assert first == (tmp_path / "A" / "out" / "a.txt").read_text()

    _ok(run_cli("rerun", str(plan_a), "a", env=env))
    _ok(run_cli("run", str(plan_a), env=env))  # a and b again, in A
    assert [runs_of(counts / f"{s}.count") for s in "ab"] == [2, 2]
    newer = (tmp_path / "A" / "out" / "a.txt").read_text()
    assert newer != first

    out = _ok(run_cli("run", str(plan_b), env=env))  # B's copies are the older versions
    assert "needs review" not in out
    assert (tmp_path / "B" / "out" / "a.txt").read_text() == newer
    assert [runs_of(counts / f"{s}.count") for s in "ab"] == [2, 2]
    assert "step_needs_review" not in [e.kind for e in _events(pg_url, "outdated-copy")]

    (tmp_path / "B" / "b.txt").write_text("edited by hand\n")  # a person's edit: still a stop
    stopped = run_cli("run", str(plan_b), env=env)
    assert stopped.returncode == 4, (stopped.stdout, stopped.stderr)
    assert (tmp_path / "B" / "b.txt").read_text() == "edited by hand\n"
