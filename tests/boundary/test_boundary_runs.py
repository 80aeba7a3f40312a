"""The execution boundary of real runs: in a git workdir (a folder inside a repository), steps
that create, modify and delete undeclared files, a temporary file across two steps, a commit in
a step, the plan's ignore globs, an edit made between two runs, `waymark marker --changes`; and
a workdir outside git on both ledgers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.boundary import tracker
from prefect_waymark.ledger import open_ledger
from prefect_waymark.ledger.event_payloads import RunBoundaryData
from prefect_waymark.ledger.events import EventKind
from prefect_waymark.markers import marker_history
from tests._support.git_repo import git, make_repo
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess

COMMIT = "git -c user.name=t -c user.email=t@example.com commit -qm two"


def _boundaries(ledger_url: str, plan_id: str) -> tuple[list[dict[str, Any]], list[Any]]:
    with open_ledger(ledger_url) as led:
        markers = marker_history(led, plan_id)
        events = led.events(plan_id)
    return markers, events


def test_a_git_workdir_run_and_the_next_one(
    prefect_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every look taken: a stall of a loaded machine in the first one would skip the second.
    monkeypatch.setattr(tracker, "LOOK_SHARE", float("inf"))
    repo = make_repo(tmp_path / "repo")  # a.txt committed at the top
    work = repo / "work"
    work.mkdir()
    (work / "keep.txt").write_text("keep\n")
    (work / "old.txt").write_text("old\n")
    plan = write_plan(
        work,
        {
            "plan_id": "bound",
            "ignore": ["logs", "*.bin"],
            "steps": [
                {
                    "id": "make",
                    "run": "echo made > made.txt; echo more >> keep.txt; rm old.txt; "
                    "echo t > scratch.tmp; echo o > out1.txt; mkdir -p logs; echo l > logs/x.log; "
                    "echo b > cache.bin; touch inner.tmp; rm inner.tmp",
                    "outputs": ["out1.txt"],
                },
                {
                    "id": "commit",
                    "depends_on": ["make"],
                    "run": f"rm scratch.tmp; git add keep.txt && {COMMIT}",
                },
            ],
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plan")
    head0 = git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("edited outside the workdir\n")  # dirty, but not in the workdir
    url = f"sqlite:///{tmp_path / 'ledger.db'}"

    first = run_inprocess(plan, ledger_url=url, publish_artifacts=False)
    assert first.result == "completed"
    head1 = git(repo, "rev-parse", "HEAD")
    assert head1 != head0
    markers, events = _boundaries(url, "bound")
    b = markers[-1]["boundary"]
    assert (b["created"], b["modified"], b["deleted"]) == (["made.txt"], ["keep.txt"], ["old.txt"])
    # scratch.tmp lived across two steps; inner.tmp within one step is not seen (the limit)
    assert b["temporary"] == ["scratch.tmp"] and b["looks"] == 2
    assert b["git"] == {
        "root": str(repo),
        "before": head0,
        "after": head1,
        "dirty_before": False,  # a.txt is outside the workdir
        "dirty_after": True,  # made.txt, out1.txt untracked; old.txt deleted
    }
    assert b["between_runs"] is None and b["previous_run"] is None and b["errors"] == []
    assert b["manifest_files"] == 4  # plan.yaml, keep.txt, made.txt, out1.txt
    started = next(e for e in events if e.kind == EventKind.run_started)
    finished = next(e for e in events if e.kind == EventKind.run_finished)
    assert b["seq_start"] < started.seq <= b["seq_end"] < finished.seq
    assert finished.data["boundary"] == b
    assert set(b) == RunBoundaryData.__optional_keys__  # every key, each documented there
    on_file = json.loads((work / "EXECUTION_MARKER.json").read_text())
    assert on_file["execution_history"][-1]["boundary"] == b

    # someone else's edits between the runs; an ignored file and a touch do not count
    (work / "made.txt").write_text("edited by hand\n")
    (work / "keep.txt").unlink()
    (work / "notes.md").write_text("mine\n")
    (work / "logs" / "y.log").write_text("ignored\n")
    st = (work / "out1.txt").stat()
    os.utime(work / "out1.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 3_000_000_000))

    second = run_inprocess(plan, ledger_url=url, publish_artifacts=False)
    assert second.result == "completed" and second.executed_steps == []
    markers, _ = _boundaries(url, "bound")
    b2 = markers[-1]["boundary"]
    assert b2["between_runs"] == {
        "created": ["notes.md"],
        "modified": ["made.txt"],
        "deleted": ["keep.txt"],
    }
    assert b2["previous_run"] == first.run_id
    assert (b2["created"], b2["modified"], b2["deleted"], b2["temporary"]) == ([], [], [], [])
    assert b2["git"]["before"] == b2["git"]["after"] == head1
    assert b2["seq_start"] >= b["seq_end"]

    shown = run_cli("marker", str(plan), "--ledger", url, "--changes", "--history", cwd=work)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert f"{head0[:12]} (clean) → {head1[:12]} (dirty) — commits made" in out
    assert "  created: 1\n    made.txt\n" in out and "  temporary: 1\n    scratch.tmp\n" in out
    assert "    modified: made.txt\n" in out and "    created: notes.md\n" in out
    assert out.count("ledger: after seq") == 2
    as_json = run_cli("marker", str(plan), "--ledger", url, "--changes", "--json", cwd=work)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == b2
    every = run_cli(
        "marker", str(plan), "--ledger", url, "--changes", "--history", "--json", cwd=work
    )
    runs = json.loads(every.stdout)["runs"]
    assert [(r["run_id"], r["boundary"]) for r in runs] == [(first.run_id, b), (second.run_id, b2)]
    bad = run_cli("marker", str(plan), "--ledger", url, "--changes", "--rebuild", cwd=work)
    assert bad.returncode == 2 and "--changes" in bad.stderr and not bad.stdout


def test_outside_git_the_git_fields_are_null(
    prefect_server: str, tmp_path: Path, ledger_url: str
) -> None:
    work = tmp_path / "plain"
    plan = write_plan(
        work,
        {
            "plan_id": "plain-bound",
            "steps": [{"id": "one", "run": "echo x > undeclared.txt; echo y > out.txt",
                       "outputs": ["out.txt"]}],
        },
    )  # fmt: skip
    summary = run_inprocess(plan, ledger_url=ledger_url, publish_artifacts=False)
    assert summary.result == "completed"
    markers, events = _boundaries(ledger_url, "plain-bound")
    b = markers[-1]["boundary"]
    assert b["git"] is None and b["errors"] == []
    assert b["created"] == ["undeclared.txt"] and b["temporary"] == []
    started = next(e for e in events if e.kind == EventKind.run_started)
    assert b["seq_start"] < started.seq <= b["seq_end"]
