"""Every kind of stop for review pauses a run started with ``review_wait_seconds`` — not only a
ref or contract conflict: an output a person edited, an action whose outcome is unknown, and a
persisted result that is gone. Each is answered as the Prefect UI would, and the same run goes
on (or stops, for an abort) as the answer says."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import write_plan
from tests._support.pause import start_answering
from tests._support.resume_helpers import runs_of, sqlite_url, step_states


def _kinds(url: str, plan_id: str) -> list[str]:
    with open_ledger(url) as led:
        return [str(e.kind) for e in led.events(plan_id)]


def test_an_edited_output_pauses_and_accepting_it_goes_on(
    prefect_server: str, tmp_path: Path
) -> None:
    from prefect_waymark.flows import run_plan

    plan = write_plan(
        tmp_path,
        {
            "plan_id": "pause-edited",
            "steps": [
                {
                    "id": "draft",
                    "run": "echo draft > draft.md; echo x >> draft.count",
                    "outputs": ["draft.md"],
                },
                {"id": "send", "depends_on": ["draft"], "run": "echo x >> send.count"},
            ],
        },
    )
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["draft"]
    (tmp_path / "draft.md").write_text("edited by a person\n")
    url = sqlite_url(tmp_path)
    helper, box = start_answering(url, "pause-edited", {"decision": "accept", "by": "editor"})
    out = run_plan(plan=str(plan), review_wait_seconds=120)
    helper.join(timeout=5)
    assert box[:2] == ["resumed", "draft"], box
    assert out["result"] == "completed" and out["executed_steps"] == ["send"]
    assert runs_of(tmp_path / "draft.count") == 1  # the edit was kept, not overwritten
    assert (tmp_path / "draft.md").read_text() == "edited by a person\n"
    kinds = _kinds(url, "pause-edited")
    assert kinds.count("review_waiting") == 1 and kinds.count("step_needs_review") == 1
    # Accepting took the edited content as the step's output: the next run does not stop again.
    again = run_plan(plan=str(plan))
    assert again["result"] == "completed" and again["needs_review"] == []


def test_a_lost_result_pauses_and_rerun_recomputes_it_in_the_same_run(
    prefect_server: str, tmp_path: Path
) -> None:
    from prefect_waymark.flows import run_plan

    plan = write_plan(
        tmp_path,
        {
            "plan_id": "pause-lost",
            "steps": [
                {"id": "produce", "run": "echo x >> produce.count"},
                {"id": "consume", "depends_on": ["produce"], "run": "echo x >> consume.count"},
            ],
        },
    )
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["produce"]
    url = sqlite_url(tmp_path)
    key = step_states(url, "pause-lost")["produce"].result_key
    assert key is not None
    (tmp_path / ".waymark" / "results" / key).unlink()
    helper, box = start_answering(url, "pause-lost", {"decision": "rerun", "by": "ops"})
    out = run_plan(plan=str(plan), review_wait_seconds=120)
    helper.join(timeout=5)
    assert box[:2] == ["resumed", "produce"], box
    assert out["result"] == "completed"
    assert out["executed_steps"] == ["produce", "consume"]
    assert runs_of(tmp_path / "produce.count") == 2 and runs_of(tmp_path / "consume.count") == 1
    with open_ledger(url) as led:
        (review,) = led.events("pause-lost", kinds=["step_needs_review"])
        (rerun,) = led.events("pause-lost", kinds=["step_rerun_requested"])
    assert "persisted result is missing" in review.data["reason"]
    assert rerun.data["by"] == "ops"


@pytest.mark.parametrize("answer", ["abort", "applied"])
def test_an_unknown_action_outcome_pauses_the_run(
    answer: str, prefect_server: str, tmp_path: Path
) -> None:
    from prefect_waymark.flows import run_plan

    (tmp_path / "wire_mod.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            def wire(ctx):
                with ctx.action("wire") as act:
                    if act.needed:
                        with open(Path(ctx.workdir) / "wire.count", "a") as f:
                            f.write("x\\n")
                        raise ConnectionResetError("the response was lost")
                return act.how
            """
        )
    )
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "pause-unknown",
            "steps": [
                {"id": "wire", "call": "wire_mod:wire", "retries": 1},
                {"id": "after", "depends_on": ["wire"], "run": "echo x >> after.count"},
            ],
        },
    )
    url = sqlite_url(tmp_path)
    reply = (
        {"decision": "abort", "by": "ops", "reason": "ask the bank"}
        if answer == "abort"  # the bank confirmed the wire: its receipt goes with the answer
        else {"decision": "accept", "receipt": "applied", "by": "ops", "reason": "bank says yes"}
    )
    helper, box = start_answering(url, "pause-unknown", reply)
    out = run_plan(plan=str(plan), review_wait_seconds=120)
    helper.join(timeout=5)
    assert box[:2] == ["resumed", "wire"], box
    assert runs_of(tmp_path / "wire.count") == 1  # never repeated blindly
    kinds = _kinds(url, "pause-unknown")
    assert kinds.count("review_waiting") == 1
    if answer == "abort":
        assert out["result"] == "needs_review" and out["needs_review"][0]["step"] == "wire"
        assert out["needs_review"][0]["reason"].startswith("outcome unknown")
        assert not (tmp_path / "after.count").exists()
        assert "plan_aborted" in kinds
    else:  # the same run goes on: wire completes from its receipt, then after runs
        assert out["result"] == "completed", out
        assert out["executed_steps"] == ["wire", "after"]
        assert runs_of(tmp_path / "after.count") == 1
        with open_ledger(url) as led:
            (receipt,) = led.receipts("pause-unknown", "wire")
        assert receipt.state == "applied" and receipt.settled_by == "ops"


def test_a_receipt_in_the_answer_to_a_stop_that_is_no_unknown_outcome_is_ignored(
    prefect_server: str, tmp_path: Path
) -> None:
    """An action step stopped before it ran (its ref changed) has nothing to settle: a receipt
    "applied" in the answer must not record an action that never ran; the step runs it."""
    from prefect_waymark.flows import run_plan

    (tmp_path / "terms.md").write_text("v1")
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "pause-no-intent",
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [
                {"id": "prep", "run": "echo x >> prep.count"},
                {
                    "id": "send",
                    "depends_on": ["prep"],
                    "run": "echo x >> send.count",
                    "action": "send-offer",
                    "reads": ["terms"],
                },
            ],
        },
    )
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["prep"]
    (tmp_path / "terms.md").write_text("v2")
    url = sqlite_url(tmp_path)
    reply = {"decision": "accept", "receipt": "applied", "by": "ops"}
    helper, box = start_answering(url, "pause-no-intent", reply)
    out = run_plan(plan=str(plan), review_wait_seconds=120)
    helper.join(timeout=5)
    assert box[:2] == ["resumed", "send"], box
    assert out["result"] == "completed" and out["executed_steps"] == ["send"]
    assert runs_of(tmp_path / "send.count") == 1  # the action really ran, once
    with open_ledger(url) as led:
        (receipt,) = led.receipts("pause-no-intent", "send")
    assert receipt.state == "applied" and receipt.settled_by != "ops"
