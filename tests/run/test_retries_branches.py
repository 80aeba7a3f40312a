"""Retries (each attempt a ledger event) and branches (concurrent; a failure stays in its branch),
with real in-process ``run_plan`` flow runs."""

from __future__ import annotations

from pathlib import Path

from tests._support.helpers import write_plan
from tests._support.inprocess import run_inprocess
from tests._support.resume_helpers import ledger_events, runs_of, step_states

# Waits (bounded) until the other branch's step has started: it can only succeed if the two
# branches really run at the same time.
_WAIT_FOR = "for i in $(seq 1 600); do test -f {f} && break; sleep 0.05; done; test -f {f}"


def test_independent_branch_completes_while_another_fails(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "branches",
            "steps": [
                {
                    "id": "bad1",
                    "branch": "bad",
                    "run": "echo x >> bad1.count; touch bad1.started; "
                    + _WAIT_FOR.format(f="good1.started")
                    + "; exit 7",
                },
                {
                    "id": "bad2",
                    "branch": "bad",
                    "run": "echo x >> bad2.count",
                    "depends_on": ["bad1"],
                },
                {
                    "id": "good1",
                    "branch": "good",
                    "run": "echo x >> good1.count; touch good1.started; "
                    + _WAIT_FOR.format(f="bad1.started"),
                },
                {
                    "id": "good2",
                    "branch": "good",
                    "run": "echo x >> good2.count",
                    "depends_on": ["good1"],
                },
                {
                    "id": "join",
                    "run": "echo x >> join.count",
                    "depends_on": ["bad2", "good2"],
                },
            ],
        },
    )
    summary = run_inprocess(plan)
    assert summary.result == "failed" and summary.exit_code == 1
    assert summary.failed_steps == ["bad1"]
    assert sorted(summary.executed_steps) == ["good1", "good2"]
    counts = {s: runs_of(tmp_path / f"{s}.count") for s in ("bad1", "bad2", "good1", "good2")}
    assert counts == {"bad1": 1, "bad2": 0, "good1": 1, "good2": 1}
    assert runs_of(tmp_path / "join.count") == 0
    failed = ledger_events(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}", "branches")
    assert [e.data["error"] for e in failed if e.kind == "step_failed"] == [
        "ShellStepError: step 'bad1': command exited with code 7"
    ]

    # Fix bad1 (a failed step's new definition is simply what runs next) and run again: only
    # the failed branch and the join run; good1.started is still there for bad1 to find.
    plan.write_text(plan.read_text().replace("; exit 7", ""))
    fixed = run_inprocess(plan)
    assert fixed.result == "completed"
    assert fixed.skipped_count == 2
    assert fixed.executed_steps == ["bad1", "bad2", "join"]
    counts = {s: runs_of(tmp_path / f"{s}.count") for s in ("bad1", "bad2", "good1", "good2")}
    assert counts == {"bad1": 2, "bad2": 1, "good1": 1, "good2": 1}


def test_retries_record_each_attempt(prefect_server: str, tmp_path: Path, ledger_url: str) -> None:
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "retries",
            "steps": [
                {
                    # fails on attempts 1 and 2, succeeds on attempt 3
                    "id": "flaky",
                    "run": 'echo x >> flaky.count; test "$(wc -l < flaky.count)" -ge 3',
                    "retries": 2,
                },
                {"id": "after-flaky", "run": "echo x >> after.count", "depends_on": ["flaky"]},
                {
                    "id": "doomed",
                    "branch": "other",
                    "run": 'echo "attempt $WAYMARK_ATTEMPT" >> doomed.count; echo oops >&2; exit 5',
                    "retries": 1,
                },
                {
                    "id": "after-doomed",
                    "branch": "other",
                    "run": "echo x >> ad.count",
                    "depends_on": ["doomed"],
                },
            ],
        },
    )
    summary = run_inprocess(plan, ledger_url=ledger_url)
    assert summary.result == "failed"
    assert summary.failed_steps == ["doomed"]
    assert sorted(summary.executed_steps) == ["after-flaky", "flaky"]
    assert runs_of(tmp_path / "flaky.count") == 3
    assert (tmp_path / "doomed.count").read_text() == "attempt 1\nattempt 2\n"
    assert runs_of(tmp_path / "ad.count") == 0

    attempts = ledger_events(ledger_url, "retries", "step_attempt_failed")
    by_step = {
        sid: [(e.data["attempt"], e.data["will_retry"]) for e in attempts if e.step_id == sid]
        for sid in ("flaky", "doomed")
    }
    assert by_step == {"flaky": [(1, True), (2, True)], "doomed": [(1, True), (2, False)]}
    doomed_attempt = next(e for e in attempts if e.step_id == "doomed")
    assert "oops" in doomed_attempt.data["output_tail"]
    states = step_states(ledger_url, "retries")
    assert states["flaky"].status == "completed" and states["flaky"].attempts == 3
    assert states["doomed"].status == "failed"
    # The error ends with the last line the command printed (stderr first).
    assert states["doomed"].error == (
        "ShellStepError: step 'doomed': command exited with code 5: oops"
    )
    assert "oops" in (states["doomed"].output_tail or "")
