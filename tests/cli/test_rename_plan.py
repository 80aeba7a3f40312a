"""A renamed plan keeps its history and never repeats an action.

Changing ``plan_id`` used to make the refusal suggest ``--markers-dir``, and following it re-ran
an irreversible action under the new id. Now the refusal names ``waymark rename-plan``, and
following it exactly carries the history and receipts over: completed steps stay done, a re-run
of the action's step finds its receipt under the old key, and the old id is closed."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain
from tests._support.resume_helpers import runs_of


def _write(folder: Path, plan_id: str) -> Path:
    plan = counting_chain(plan_id, ["collect", "publish", "report"]).to_dict()
    plan["steps"][1]["action"] = "publish-data"
    return write_plan(folder, plan)


def _counts(folder: Path) -> list[int]:
    return [runs_of(folder / f"{s}.count") for s in ("collect", "publish", "report")]


def test_following_the_rename_hint_carries_history_and_receipts(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = _write(tmp_path, "weekly-report")
    first = run_cli("run", str(plan), "--max-steps", "2")
    assert first.returncode == 3, first.stdout + first.stderr
    assert _counts(tmp_path) == [1, 1, 0]

    _write(tmp_path, "weekly-report-v2")  # the author renames the plan
    refused = run_cli("run", str(plan))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert _counts(tmp_path) == [1, 1, 0]
    hint = re.search(r"`(waymark rename-plan [^`]+)`", refused.stderr)
    assert hint is not None, refused.stderr
    args = shlex.split(hint.group(1))[1:]
    assert args == ["rename-plan", str(plan), "--from", "weekly-report"]

    renamed = run_cli(*args)  # the hint, exactly as given
    assert renamed.returncode == 0, renamed.stdout + renamed.stderr
    assert "weekly-report → weekly-report-v2" in renamed.stdout
    assert "1 action receipt(s)" in renamed.stdout
    doc = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    assert doc["plan_id"] == "weekly-report-v2" and len(doc["execution_history"]) == 1

    status = run_cli("status", str(plan), "--json")
    steps = {s["id"]: s["status"] for s in json.loads(status.stdout)["steps"]}
    assert steps == {"collect": "completed", "publish": "completed", "report": "pending"}

    resumed = run_cli("run", str(plan))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _counts(tmp_path) == [1, 1, 1]  # only the step left was run

    # A re-run of the action's step finds its receipt under the old key: not published again.
    assert run_cli("rerun", str(plan), "publish").returncode == 0
    again = run_cli("run", str(plan))
    assert again.returncode == 0, again.stdout + again.stderr
    assert runs_of(tmp_path / "publish.count") == 1
    keys = run_cli("receipt", str(plan), "publish", "--json")
    assert "weekly-report/publish/publish-data" in keys.stdout, keys.stdout + keys.stderr

    # The old id is closed: a plan file that still says it is refused, naming the new id.
    old = _write(tmp_path / "old-copy", "weekly-report")
    stale = run_cli("run", str(old), "--ledger", f"sqlite:///{tmp_path / '.waymark/ledger.db'}")
    assert stale.returncode == 2 and "renamed to 'weekly-report-v2'" in stale.stderr
    assert not (tmp_path / "old-copy" / "collect.count").exists()


def test_renames_that_would_lose_or_merge_history_are_refused(
    prefect_server: str, tmp_path: Path
) -> None:
    a = _write(tmp_path / "a", "plan-a")
    assert run_cli("run", str(a), "--max-steps", "1").returncode == 3
    ledger = f"sqlite:///{tmp_path / 'a' / '.waymark' / 'ledger.db'}"
    b = _write(tmp_path / "b", "plan-b")
    assert run_cli("run", str(b), "--ledger", ledger, "--max-steps", "1").returncode == 3

    into_existing = run_cli("rename-plan", str(b), "--from", "plan-a", "--ledger", ledger)
    assert into_existing.returncode == 2
    assert "already has" in into_existing.stderr and "nothing changed" in into_existing.stderr

    unknown = run_cli("rename-plan", str(b), "--from", "never-ran", "--ledger", ledger)
    assert unknown.returncode == 2 and "no history" in unknown.stderr

    same = run_cli("rename-plan", str(b), "--from", "plan-b", "--ledger", ledger)
    assert same.returncode == 2 and "already has plan_id" in same.stderr

    c = _write(tmp_path / "a", "plan-c")
    assert run_cli("rename-plan", str(c), "--from", "plan-a").returncode == 0
    twice = run_cli("rename-plan", str(c), "--from", "plan-a")
    assert twice.returncode == 2 and "already renamed to 'plan-c'" in twice.stderr
    for proc in (into_existing, unknown, same, twice):
        assert "Traceback" not in proc.stderr
    assert runs_of(tmp_path / "a" / "collect.count") == 1


def test_a_second_folder_runs_a_renamed_plan(
    prefect_server: str, pg_url: str, tmp_path: Path
) -> None:
    """Found by the soak (bench/soak.py): after `rename-plan` in folder A, folder B (the same
    pinned ledger and result storage, its marker files still under the old id) was refused, and
    the `rename-plan` its refusal named was refused too ("already renamed"): B could not go on.
    Now that command rewrites B's marker files, and B's run goes on under the new id: nothing is
    run twice, nothing stops for review."""
    env = {"TEAM_LEDGER_URL": pg_url, "TEAM_RESULTS": str(tmp_path / "results")}
    env["WAYMARK_LEDGER_URL"] = ""

    def write(folder: Path, plan_id: str) -> Path:
        plan = counting_chain(plan_id, ["collect", "publish", "report"]).to_dict()
        plan["steps"][1]["action"] = "publish-data"
        plan["ledger"] = {"env": "TEAM_LEDGER_URL"}
        plan["results"] = {"env": "TEAM_RESULTS"}
        for step in plan["steps"]:
            step["run"] += f" && echo {step['id']} > {step['id']}.out"
            step["outputs"] = [f"{step['id']}.out"]
        return write_plan(folder, plan)

    plan_a = write(tmp_path / "A", "team-plan")
    plan_b = write(tmp_path / "B", "team-plan")
    first = run_cli("run", str(plan_a), "--max-steps", "1", env=env)
    assert first.returncode == 3, first.stdout + first.stderr
    first_b = run_cli("run", str(plan_b), "--max-steps", "1", env=env)  # B has run under the old id
    assert first_b.returncode == 3, first_b.stdout + first_b.stderr

    plan_a = write(tmp_path / "A", "team-plan-v2")
    plan_b = write(tmp_path / "B", "team-plan-v2")
    renamed = run_cli("rename-plan", str(plan_a), "--from", "team-plan", env=env)
    assert renamed.returncode == 0, renamed.stdout + renamed.stderr

    # B's marker files are still under the old id: B is refused, with the hint to follow.
    refused = run_cli("run", str(plan_b), env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    hint = re.search(r"`(waymark rename-plan [^`]+)`", refused.stderr)
    assert hint is not None, refused.stderr
    followed = run_cli(*shlex.split(hint.group(1))[1:], env=env)  # it used to be refused too
    assert followed.returncode == 0, followed.stdout + followed.stderr
    assert "carried over already" in followed.stdout
    second = run_cli("run", str(plan_b), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Traceback" not in second.stderr
    done = [
        runs_of(f / f"{s}.count")
        for s in ("collect", "publish", "report")
        for f in (tmp_path / "A", tmp_path / "B")
    ]
    assert done == [1, 0, 0, 1, 0, 1]  # each step once: collect in A, publish and report in B
    assert (tmp_path / "B" / "collect.out").read_text() == "collect\n"  # restored in B
    again = run_cli("run", str(plan_a), env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "needs review" not in again.stdout
    assert [runs_of(tmp_path / "A" / f"{s}.count") for s in ("collect", "publish", "report")] == [
        1,
        0,
        0,
    ]
