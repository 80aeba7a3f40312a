"""The plan page and the run artifacts, with real flow runs on the session's Prefect server: read
back through Prefect's client as the UI shows them — the failing step's error and the tail of
its output, what blocks what, the next start, one version per run, the live one-line summary in
every description, no raw JSON; and the failed step's ERROR log line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect_waymark.errors import LedgerNotFound
from prefect_waymark.ledger import default_ledger_url
from tests._support.artifacts import (
    artifact_versions,
    flow_run_logs,
    latest_artifact,
    plan_copy_of,
)
from tests._support.helpers import write_plan
from tests._support.inprocess import flow_outcome

FAILING = (
    "echo 'checking 4 figures'; echo 'Q3 growth ok'; "
    "test -f figures-fixed || { echo 'figure check failed: Q4 growth is stale' >&2; exit 3; }"
)


def _report_plan(folder: Path) -> Path:
    return write_plan(
        folder,
        {
            "plan_id": "Report_Q4",
            "title": "Q4 report",
            "contract": {
                "goal_id": "q4-report",
                "version": 1,
                "objective": "Publish the Q4 report with checked figures",
                "acceptance": ["every figure matches the finance ledger"],
                "forbidden": ["publishing unchecked figures"],
            },
            "steps": [
                {
                    "id": "collect",
                    "title": "Collect the figures",
                    "owner": "alice",
                    "milestone": "data",
                    "run": "echo 1,2,3 > figures.csv",
                    "outputs": ["figures.csv"],
                    "acceptance": ["figures.csv holds the quarter's rows"],
                },
                {
                    "id": "check-figures",
                    "title": "Check the figures",
                    "owner": "bob",
                    "milestone": "data",
                    "depends_on": ["collect"],
                    "run": FAILING,
                },
                {
                    "id": "publish",
                    "title": "Publish",
                    "milestone": "publish",
                    "depends_on": ["check-figures"],
                    "run": "echo published > report.md",
                },
                {"id": "notes", "branch": "docs", "run": "echo notes > notes.md"},
            ],
        },
    )


def _markdown(art: Any) -> str:
    assert isinstance(art.data, str)
    return str(art.data)


def test_a_failed_run_then_a_resume_read_in_the_ui(prefect_server: str, tmp_path: Path) -> None:
    plan = _report_plan(tmp_path)
    ended, summary = flow_outcome(plan)
    assert ended == "Failed" and summary.failed_steps == ["check-figures"]
    copy = plan_copy_of("Report_Q4", default_ledger_url(tmp_path), tmp_path)
    assert copy.page_key() == f"waymark-report-q4-{copy.copy_id}-plan-page"
    assert len(copy.copy_id) == 8

    # The plan page, as the artifact key's page shows it (its latest version).
    page_art = latest_artifact(copy.page_key())
    page = _markdown(page_art)
    assert page.startswith("# Q4 report\n")
    assert "```json" not in page and '"execution_history"' not in page
    assert "**Where it stands:** failed at check-figures · 2/4 done · next: check-figures" in page
    assert "**Next start:** `check-figures` — it failed; the next run retries it" in page
    failed = page[page.index("## Failed (1)") : page.index("## Blocked")]
    assert "### `check-figures` — Check the figures (owner bob)" in failed
    assert "figure check failed: Q4 growth is stale" in failed  # the quoted error
    assert "Last lines of its output:" in failed and "Q3 growth ok" in failed  # the tail
    assert "- `publish` — Publish — waits for `check-figures` (failed)" in page
    assert "**Publish the Q4 report with checked figures**" in page
    assert "- A1: every figure matches the finance ledger" in page
    assert "| figures.csv holds the quarter's rows | `collect` | met just now |" in page
    assert "Per milestone" in page and "| data | 1/2 |" in page and "Per branch" in page
    assert f"/runs/flow-run/{summary.flow_run_id}" in page  # the last run, linked
    assert "**Updated:** just now (" in page  # humanised, with the local date
    assert page_art.description.startswith("Plan page · failed at check-figures · 2/4 done")
    assert copy.copy_id in page_art.description and str(tmp_path) in page_art.description

    # The run's marker: what this run did, in words.
    marker_art = latest_artifact(copy.key("marker"))
    marker = _markdown(marker_art)
    assert "```json" not in marker
    assert marker.startswith("# Run of Q4 report — failed\n")
    assert "## Unsuccessful (1)" in marker and "figure check failed: Q4 growth is stale" in marker
    assert "- `publish` — waits for `check-figures` (failed)" in marker
    assert "| 2 | 1 | 0 | 1 | 1 | 0 |" in marker  # ran, failed, skipped, not run, outputs, receipts
    assert marker_art.description.startswith("failed at check-figures · 2/4 done · next: ")
    assert marker_art.metadata_["run_id"] == summary.run_id
    steps_art = latest_artifact(copy.key("steps"))
    rows = json.loads(steps_art.data) if isinstance(steps_art.data, str) else steps_art.data
    by_step = {r["step"]: r for r in rows}
    assert by_step["check-figures"]["title"] == "Check the figures"
    assert by_step["check-figures"]["attempts"] == 1
    assert "figure check failed: Q4 growth is stale" in by_step["check-figures"]["error"]
    progress = latest_artifact(copy.key("progress"))
    assert progress.description.startswith("2/4 done")

    # The ERROR line of the failed step carries the last lines of its output.
    assert summary.flow_run_id is not None
    # Logs reach the API in batches: wait for each message this part reads.
    flow_run_logs(summary.flow_run_id, want="last lines of its stderr")
    logs = flow_run_logs(summary.flow_run_id, want="step check-figures failed")
    errors = [log.message for log in logs if log.level >= 40]
    step_error = next(m for m in errors if "last lines of its stderr" in m)
    assert "command exited with code 3" in step_error
    assert "figure check failed: Q4 growth is stale" in step_error and "Q3 growth ok" in step_error
    loop_error = next(m for m in errors if m.startswith("step check-figures failed"))
    assert loop_error.endswith("code 3: figure check failed: Q4 growth is stale")
    contract_lines = [m for m in (log.message for log in logs) if "goal contract q4-report" in m]
    assert len(contract_lines) == 1, contract_lines  # once per run, with the forbidden list
    assert "forbidden: publishing unchecked figures" in contract_lines[0]

    # Fixed and resumed: the run's own page version ends complete; one version per run.
    (tmp_path / "figures-fixed").write_text("")
    ended, again = flow_outcome(plan)
    assert ended == "Completed" and again.result == "completed"
    versions = artifact_versions(copy.page_key())
    assert len(versions) == 2
    last = _markdown(versions[-1])
    assert "**Where it stands:** complete · 4/4 done" in last
    assert "**Next start:** nothing — the plan is complete" in last
    assert "## Failed" not in last and "## Blocked" not in last
    assert f"/runs/flow-run/{again.flow_run_id}" in last
    assert _markdown(versions[0]) == page  # the first run's version is kept as it ended
    assert len(artifact_versions(copy.key("marker"))) == 2


def test_two_copies_of_one_plan_never_mix(prefect_server: str, tmp_path: Path) -> None:
    """Two workdirs with the same plan id on one Prefect server: each has its own artifact keys,
    and `waymark marker --from-prefect` returns only its own copy's latest marker."""
    from tests._support.helpers import run_cli
    from tests._support.plans import counting_chain

    one, two = tmp_path / "one", tmp_path / "two"
    plans = {wd: write_plan(wd, counting_chain("twin-plan", ["a", "b"])) for wd in (one, two)}
    proc = run_cli("marker", str(plans[two]), "--from-prefect", "--json")
    assert proc.returncode == 1 and "no ledger" in proc.stderr  # copy two never ran

    assert flow_outcome(plans[one])[1].result == "completed"
    _, second = flow_outcome(plans[two], max_steps=1)  # the latest artifacts are two's
    assert second.result == "stopped"
    copies = {wd: plan_copy_of("twin-plan", default_ledger_url(wd), wd) for wd in (one, two)}
    assert copies[one].copy_id != copies[two].copy_id
    for wd, copy in copies.items():
        assert len(artifact_versions(copy.page_key())) == 1  # each copy's page: its own run only
        assert str(wd) in latest_artifact(copy.page_key()).description
    assert "complete · 2/2 done" in latest_artifact(copies[one].page_key()).description
    assert "stopped after 1 step · 1/2 done" in latest_artifact(copies[two].page_key()).description

    seen = {}
    for wd in (one, two):
        proc = run_cli("marker", str(plans[wd]), "--from-prefect", "--json")
        assert proc.returncode == 0, proc.stderr
        seen[wd] = json.loads(proc.stdout)
        assert seen[wd]["copy"]["copy_id"] == copies[wd].copy_id
        assert seen[wd]["copy"]["workdir"] == str(wd)
        assert seen[wd]["artifact"]["key"] == copies[wd].key("marker")
        local = json.loads(run_cli("marker", str(plans[wd]), "--json").stdout)
        assert seen[wd]["run_id"] == local["run_id"]  # this copy's last run, not the other's
        assert seen[wd]["next_start"] == local["next_start"]
        assert seen[wd]["executed_steps"] == local["executed_steps"]
    assert seen[one]["result"] == "completed" and seen[two]["result"] == "stopped"
    proc = run_cli("marker", str(plans[one]), "--from-prefect")
    assert proc.returncode == 0 and f"copy {copies[one].copy_id}" in proc.stdout
    assert "next start: none (plan complete)" in proc.stdout


def test_a_failure_reaches_the_plan_page_while_the_run_goes_on(
    prefect_server: str, tmp_path: Path
) -> None:
    """The page a person opens first shows a failed step at once, with its error, not only when
    the run ends: here another branch is still running when the page is read."""
    import threading
    import time

    plan = write_plan(
        tmp_path,
        {
            "plan_id": "fail-live",
            "steps": [
                {"id": "check", "run": "echo 'Q4 growth is stale' >&2; exit 3"},
                {
                    "id": "slow",
                    "branch": "docs",
                    "run": "for i in $(seq 600); do test -f go && exit 0; sleep 0.1; done; exit 9",
                },
            ],
        },
    )
    done: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: done.update(r=flow_outcome(plan)))
    runner.start()
    try:
        seen = ""
        deadline = time.monotonic() + 50
        while time.monotonic() < deadline and "Q4 growth is stale" not in seen:
            time.sleep(0.5)
            if not (tmp_path / ".waymark" / "ledger.db").exists():
                continue
            try:  # the file exists a few ms before its tables do
                copy = plan_copy_of("fail-live", default_ledger_url(tmp_path), tmp_path)
            except LedgerNotFound:
                continue
            key = copy.page_key()
            versions = artifact_versions(key)
            seen = _markdown(versions[-1]) if versions else ""
        assert not (tmp_path / "go").exists() and runner.is_alive()  # the run is still going
        assert "Q4 growth is stale" in seen, seen
    finally:
        (tmp_path / "go").write_text("go")
        runner.join(120)
    outcome, summary = done["r"]
    assert outcome == "Failed" and summary.failed_steps == ["check"]
    assert "slow" in summary.executed_steps
