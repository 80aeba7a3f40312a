"""Execution markers with real Prefect flow runs: the ledger event, EXECUTION_MARKER.json, the
human views and the Prefect artifacts read back through Prefect's client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import default_ledger_url, open_ledger
from prefect_waymark.markers import (
    MARKER_FILE,
    MarkerFileError,
    artifact_key,
    marker_history,
    read_marker_file,
)
from prefect_waymark.markers.generated_files import GENERATED_LINE, is_generated
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import flow_outcome

MARKER_FIELDS = {
    "plan_id",
    "executed_at",
    "executor",
    "workdir",
    "flow_run_id",
    "executed_steps",
    "skipped_count",
    "failed_steps",
    "outputs",
    "receipts",
    "state_refs",
    "contract",
    "result",
    "next_start",
}


def _plan(folder: Path, plan_id: str = "Marker_Plan.v1") -> Path:
    return write_plan(
        folder,
        {
            "plan_id": plan_id,
            "title": "Marker test",
            "contract": {"goal_id": "g-1", "version": 2, "objective": "Write three files"},
            "steps": [
                {"id": "one", "run": "echo 1 > one.txt", "outputs": ["one.txt"]},
                {
                    "id": "two",
                    "depends_on": ["one"],
                    "run": "test -f allow-two || exit 5; echo 2 > two.txt",
                    "outputs": ["two.txt"],
                    "acceptance": ["two.txt holds 2"],
                },
                {"id": "three", "depends_on": ["two"], "run": "echo 3 > three.txt"},
            ],
        },
    )


def _run(plan: Path, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    ended, summary = flow_outcome(plan, **kwargs)
    return ("failed" if ended == "Failed" else summary.result), summary.model_dump()


def test_artifact_keys_are_normalised() -> None:
    assert artifact_key("Marker_Plan.v1", "marker") == "waymark-marker-plan-v1-marker"
    assert artifact_key("--X--", "steps") == "waymark-x-steps"


def test_three_runs_leave_three_markers_in_order(prefect_server: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    assert _run(plan, max_steps=1)[0] == "stopped"
    assert _run(plan)[0] == "failed"
    (tmp_path / "allow-two").write_text("")
    assert _run(plan)[0] == "completed"

    doc = read_marker_file(tmp_path / MARKER_FILE)
    assert doc is not None and doc["plan_id"] == "Marker_Plan.v1"
    history = doc["execution_history"]
    assert [m["result"] for m in history] == ["stopped", "failed", "completed"]
    for m in history:
        assert MARKER_FIELDS <= set(m), MARKER_FIELDS - set(m)
        assert m["executed_at"][-6] in "+-" and m["executed_at"][-3] == ":"  # ISO 8601 offset
    assert [m["executed_steps"] for m in history] == [["one"], [], ["two", "three"]]
    assert history[0]["next_start"] == {"step": "two", "why": "budget reached (--max-steps 1)"}
    assert history[1]["failed_steps"] == ["two"]
    assert history[1]["next_start"]["step"] == "two"
    assert history[2]["next_start"]["step"] is None
    assert history[2]["skipped_count"] == 1
    assert history[2]["started_from"] == "two"
    for m in history:  # every run re-read the contract; its marker says which one it saw
        assert m["contract"]["goal_id"] == "g-1" and m["contract"]["version"] == 2
        assert m["contract"]["hash"].startswith("sha256:") and len(m["contract"]["hash"]) == 71
    outs = {o["path"]: o["sha256"] for m in history for o in m["outputs"]}
    import hashlib

    assert outs["two.txt"] == hashlib.sha256(b"2\n").hexdigest()
    # The file says it is generated on its first line, and matches the ledger exactly.
    assert (tmp_path / MARKER_FILE).read_text().startswith('{"generated_by": "prefect-waymark')
    with open_ledger(default_ledger_url(tmp_path)) as led:
        assert marker_history(led, "Marker_Plan.v1") == history
    # Human views.
    state_md = (tmp_path / "STATE.md").read_text()
    assert state_md.startswith(GENERATED_LINE)
    assert "Latest execution record: EXECUTION_MARKER.json" in state_md
    tasks = (tmp_path / "TASKS.md").read_text()
    assert "[x] `three`" in tasks and "**completed**" in tasks
    log = (tmp_path / "IMPLEMENTATION_LOG.md").read_text()
    assert log.count("## Run ") == 3
    assert "two: two.txt holds 2 — evidence: `two.txt` sha256" in log

    # Prefect artifacts, read back through Prefect's client: three versions of the marker key
    # (this copy's: the key carries the copy id), readable text, the run's identity in the
    # metadata, no raw JSON.
    from tests._support.artifacts import artifact_versions, latest_artifact, plan_copy_of

    copy = plan_copy_of("Marker_Plan.v1", default_ledger_url(tmp_path), tmp_path)
    key = copy.key("marker")
    assert key == f"waymark-marker-plan-v1-{copy.copy_id}-marker"
    arts = artifact_versions(key)
    assert len(arts) == 3
    for art, marker in zip(arts, history, strict=True):
        body = art.data
        assert isinstance(body, str) and "```json" not in body
        assert body.startswith(f"# Run of Marker test — {marker['result']}\n")
        assert art.metadata_["run_id"] == marker["run_id"]
        assert json.loads(art.metadata_["next_start"]) == marker["next_start"]
    assert "budget reached (--max-steps 1)" in arts[0].data
    assert arts[0].description.startswith("stopped after 1 step · 1/3 done · next: two")
    assert "## Unsuccessful (1)" in arts[1].data and "exited with code 5" in arts[1].data
    assert arts[2].description.startswith("complete · 3/3 done")
    # The progress artifact of the last run ends at 100 %; the steps table lists every step.
    assert float(latest_artifact(copy.key("progress")).data) == 100.0
    table = latest_artifact(copy.key("steps")).data
    rows = json.loads(table) if isinstance(table, str) else table
    assert [r["step"] for r in rows] == ["one", "two", "three"]
    assert {r["status"] for r in rows} == {"completed"}
    from prefect_waymark.markers.artifacts import read_latest_marker

    with open_ledger(default_ledger_url(tmp_path)) as led:
        latest = read_latest_marker("Marker_Plan.v1", led, tmp_path)
    assert latest is not None and latest["run_id"] == history[-1]["run_id"]
    assert latest["executed_steps"] == history[-1]["executed_steps"]
    proc = run_cli("marker", str(plan), "--json", "--from-prefect")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["run_id"] == history[-1]["run_id"]
    proc = run_cli("marker", str(plan), "--history", "--json")
    assert json.loads(proc.stdout)["execution_history"] == history


def test_corrupt_marker_is_refused_then_rebuilt(prefect_server: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path, "corrupt-plan")
    (tmp_path / "allow-two").write_text("")
    assert _run(plan, max_steps=1)[0] == "stopped"
    marker = tmp_path / MARKER_FILE
    good = marker.read_text()

    # Hand-edited: still valid JSON, but the history no longer matches the ledger.
    edited = json.loads(good)
    edited["execution_history"][0]["executed_steps"] = ["one", "two"]
    marker.write_text(json.dumps(edited))
    ledger_db = tmp_path / ".waymark" / "ledger.db"
    before = ledger_db.stat().st_size, len(os.listdir(tmp_path))
    proc = run_cli("run", str(plan))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "EXECUTION_MARKER.json" in proc.stderr and "edited by hand" in proc.stderr
    assert "--rebuild" in proc.stderr
    with open_ledger(default_ledger_url(tmp_path)) as led:
        assert len(marker_history(led, "corrupt-plan")) == 1  # nothing ran, nothing recorded
    assert (ledger_db.stat().st_size, len(os.listdir(tmp_path))) == before

    # Truncated: not JSON at all.
    marker.write_text(good[: len(good) // 2])
    proc = run_cli("run", str(plan))
    assert proc.returncode == 2 and "corrupt marker file" in proc.stderr

    proc = run_cli("marker", str(plan), "--rebuild")
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == good
    assert _run(plan)[0] == "completed"
    doc = read_marker_file(marker)
    assert doc is not None and len(doc["execution_history"]) == 2


def test_user_written_tasks_md_is_never_overwritten(prefect_server: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path, "user-files")
    mine = "# My own task list\n- [ ] buy milk\n"
    (tmp_path / "TASKS.md").write_text(mine)
    proc = run_cli("run", str(plan))
    assert proc.returncode == 2
    assert "TASKS.md" in proc.stderr and "--markers-dir" in proc.stderr
    assert not (tmp_path / ".waymark").exists()  # refused before any ledger write
    assert (tmp_path / "TASKS.md").read_text() == mine
    (tmp_path / "allow-two").write_text("")
    proc = run_cli("run", str(plan), "--markers-dir", str(tmp_path / "waymark-files"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "TASKS.md").read_text() == mine
    assert is_generated(tmp_path / "waymark-files" / "TASKS.md")
    assert (tmp_path / "waymark-files" / MARKER_FILE).exists()


def test_edited_output_stops_at_needs_review(prefect_server: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path, "edited-output")
    (tmp_path / "allow-two").write_text("")
    assert _run(plan, until="two")[0] == "stopped"
    (tmp_path / "two.txt").write_text("2, corrected by a person\n")
    result, summary = _run(plan)
    assert result == "needs_review"
    assert summary["needs_review"][0]["step"] == "two"
    assert "two.txt" in summary["needs_review"][0]["reason"]
    assert summary["executed_steps"] == []
    assert (tmp_path / "two.txt").read_text() == "2, corrected by a person\n"
    assert not (tmp_path / "three.txt").exists()
    proc = run_cli("status", str(plan), "--json")
    assert proc.returncode == 4
    assert json.loads(proc.stdout)["needs_review"][0]["step"] == "two"
    # The stop is announced to Prefect like every other review stop.
    from tests._support.prefect_events import needs_review_events

    events = needs_review_events("edited-output")
    assert events, "no waymark.plan.needs-review event for an edited output"
    assert events[0].payload["steps"][0]["step"] == "two"


def test_mutable_output_may_change(prefect_server: str, tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "mutable-output",
            "steps": [
                {
                    "id": "notes",
                    "run": "echo draft > notes.md",
                    "outputs": ["notes.md"],
                    "mutable_outputs": ["notes.md"],
                },
                {"id": "after", "depends_on": ["notes"], "run": "cat notes.md > copy.md"},
            ],
        },
    )
    assert _run(plan, max_steps=1)[0] == "stopped"
    (tmp_path / "notes.md").write_text("edited by a person\n")
    assert _run(plan)[0] == "completed"
    assert (tmp_path / "copy.md").read_text() == "edited by a person\n"


_WRITER = """
import sys
from pathlib import Path
from prefect_waymark.markers.marker_file import write_marker_file
path = Path(sys.argv[1])
n = 0
while True:
    n += 1
    history = [{"executed_at": "x", "n": n, "pad": "y" * 200_000} for _ in range(5)]
    write_marker_file(path, "atomic", history)
    Path(sys.argv[2]).write_text(str(n))
"""


def test_marker_write_is_atomic_when_killed(tmp_path: Path) -> None:
    """Kill a writer with SIGKILL mid-write, many times: the file is always old or new, whole."""
    target = tmp_path / MARKER_FILE
    progress = tmp_path / "progress"
    kills = 0
    seen: set[int] = set()
    for i in range(12):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(target), str(progress)])
        deadline = time.monotonic() + 30
        while not progress.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05 + 0.013 * i)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        doc = read_marker_file(target)  # raises MarkerFileError if partial
        assert doc is not None and len(doc["execution_history"]) == 5
        seen.add(doc["execution_history"][0]["n"])
        progress.unlink()
    assert kills == 12
    assert len(seen) >= 2  # the kills landed at different points of the writing loop


def test_foreign_marker_file_refused_without_ledger(tmp_path: Path) -> None:
    from prefect_waymark.markers import preflight_markers
    from prefect_waymark.plan.loader import load_plan

    plan = _plan(tmp_path, "foreign")
    (tmp_path / MARKER_FILE).write_text('{"plan_id": "foreign", "execution_history": []}')
    with pytest.raises(MarkerFileError, match="not written by prefect-waymark"):
        preflight_markers(load_plan(plan), None, tmp_path)


def test_refusals_after_a_rename_or_a_lost_ledger_give_safe_hints(
    prefect_server: str, tmp_path: Path
) -> None:
    """Following a refusal's hint must never start the plan afresh (which would repeat its
    actions): a renamed plan is told to put its id back, a lost ledger to point at it, and a
    rebuild from a ledger that never saw these runs does not wipe the marker."""
    from tests._support.helpers import run_cli, write_plan
    from tests._support.plans import counting_chain

    plan = write_plan(tmp_path, counting_chain("renamed", ["a"]))
    assert run_cli("run", str(plan)).returncode == 0
    marker_before = (tmp_path / MARKER_FILE).read_text()

    write_plan(tmp_path, counting_chain("renamed-v2", ["a"]))
    proc = run_cli("run", str(plan))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "set `plan_id: renamed` back" in proc.stderr and "--markers-dir" not in proc.stderr
    assert (tmp_path / "a.count").read_text() == "a\n"  # nothing ran under the new id

    write_plan(tmp_path, counting_chain("renamed", ["a"]))
    (tmp_path / ".waymark" / "ledger.db").rename(tmp_path / "elsewhere.db")
    proc = run_cli("run", str(plan))
    assert proc.returncode == 2 and "this ledger has none" in proc.stderr
    assert "--ledger" in proc.stderr and "marker PLAN --rebuild" not in proc.stderr
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    from prefect_waymark.ledger import open_ledger

    open_ledger(empty).close()  # an empty ledger that never saw these runs
    proc = run_cli("marker", str(plan), "--rebuild", "--ledger", empty)
    assert proc.returncode == 2 and "this ledger has none" in proc.stderr
    assert (tmp_path / MARKER_FILE).read_text() == marker_before  # not wiped

    moved = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    proc = run_cli("run", str(plan), "--ledger", moved)  # the hint works: the plan is complete
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a.count").read_text() == "a\n"


def test_generated_files_take_the_umask_mode(tmp_path: Path) -> None:
    """Not mkstemp's 0600: a team's other accounts read the marker like any file of the run."""
    import os
    import stat

    from prefect_waymark.markers.generated_files import atomic_write

    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / MARKER_FILE, "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / MARKER_FILE).stat().st_mode) == 0o640
    atomic_write(tmp_path / "TASKS.md", "x\n")
    assert stat.S_IMODE((tmp_path / "TASKS.md").stat().st_mode) == 0o666 & ~old
