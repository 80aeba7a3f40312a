"""A paused run explains itself: the review form's description says why in words and what each
answer does, the plan page and the progress bar show the pause while it lasts, and the log after
the answer says what this run does next. Real flow runs, answered as the Prefect UI does."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests._support.artifacts import flow_run_logs, latest_artifact, plan_copy_of
from tests._support.helpers import write_plan
from tests._support.pause import start_answering
from tests._support.plans import counting_chain
from tests._support.resume_helpers import sqlite_url


def _description(flow_run_id: uuid.UUID) -> str:
    """The form's description, as the UI reads it beside the paused run's form."""
    from prefect.client.orchestration import get_client
    from prefect.input import keyset_from_paused_state, read_flow_run_input

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run_id).state
    assert state is not None and state.is_paused()
    text = read_flow_run_input(keyset_from_paused_state(state)["description"], flow_run_id)
    assert isinstance(text, str), text
    return text


@pytest.mark.parametrize("decision", ["accept", "rerun"])
def test_a_paused_run_explains_itself(decision: str, prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    plan_id = f"explain-{decision}"
    (tmp_path / "terms.md").write_text("v1")
    terms = [{"name": "terms", "kind": "file", "path": "terms.md"}]
    plan = write_plan(tmp_path, counting_chain(plan_id, "ab", reads=["terms"], state_refs=terms))
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["a"]
    (tmp_path / "terms.md").write_text("v2")
    url = sqlite_url(tmp_path)
    copy = plan_copy_of(plan_id, url, tmp_path)
    seen: dict[str, Any] = {}

    def look(flow_run_id: uuid.UUID) -> None:
        seen["form"] = _description(flow_run_id)
        seen["page"] = latest_artifact(copy.page_key())
        seen["progress"] = latest_artifact(copy.key("progress"))
        seen["flow_run_id"] = str(flow_run_id)

    answer = {"decision": decision, "by": "tester", "reason": "checked"}
    helper, box = start_answering(url, plan_id, answer, inspect=look)
    out = run_plan(plan=str(plan), review_wait_seconds=120)
    helper.join(timeout=5)
    assert box[:2] == ["resumed", "b"], box
    assert out["result"] == "completed" and out["executed_steps"] == ["b"]

    v1 = hashlib.sha256(b"v1").hexdigest()[:12]
    v2 = hashlib.sha256(b"v2").hexdigest()[:12]
    changed = (
        f"state ref `terms` was version `sha256:{v1}…` when accepted and is `sha256:{v2}…` now"
    )
    form = seen["form"]
    assert f"**Plan `{plan_id}` stopped at step `b` for review.**" in form
    assert changed in form and "found at before step" in form  # b reads it: stopped before it
    assert (
        "- **accept** — take the current versions shown above as the accepted ones; this run "
        "goes on with step `b`" in form
    )
    assert "- **rerun** — accept the current versions and run step `b` again in this run" in form
    assert "- **abort** — stop the plan: this run runs nothing more" in form
    assert "This run waits until" in form and "the plan page" in form
    # The form links this copy's plan page (its address given to the gate by the page).
    assert "Where the plan stands: [the plan page](" in form
    assert f"/artifacts/key/{seen['page'].key})" in form

    page = seen["page"].data
    assert isinstance(page, str)
    assert "**Where it stands:** paused for review at b · 1/2 done · next: b" in page
    assert "## Needs your answer (1)" in page and changed in page
    assert "this run is paused and waits until" in page
    assert f"/runs/flow-run/{seen['flow_run_id']}" in page
    assert f"waymark review {plan.resolve()} --step b --accept" in page
    assert f"waymark review {plan.resolve()} --step b --abort" in page
    assert seen["page"].description.startswith("Plan page · paused for review at b · 1/2 done")
    assert seen["progress"].description.startswith("paused for review at b · 1/2 done")

    logs = [m.message for m in flow_run_logs(seen["flow_run_id"], want="review: tester")]
    said = next(m for m in logs if m.startswith("review: tester"))
    if decision == "accept":
        assert (
            said == "review: tester accepted step 'b' (checked): this run goes on and runs it now"
        )
    else:
        assert said == "review: tester asked to run step 'b' again (checked): this run runs it now"
    assert not any("the next run continues" in m for m in logs)
    warning = next(m for m in logs if m.startswith("step b needs review:"))
    assert changed in warning  # in words, not two 64-character hashes
    final = latest_artifact(copy.page_key()).data
    assert (
        "**Where it stands:** complete · 2/2 done" in final and "## Needs your answer" not in final
    )
