"""With ``review_wait_seconds`` (or ``$WAYMARK_REVIEW_WAIT_SECONDS``), a flow run that stops
for review pauses with a typed form (accept / rerun / abort); answering it (as the Prefect UI
does, through ``resume_flow_run(id, run_input=...)``) lets the same run continue."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import write_plan
from tests._support.pause import answer_when_paused
from tests._support.plans import counting_chain


@pytest.mark.floor
@pytest.mark.parametrize("decision", ["accept", "abort"])
def test_paused_run_continues_after_an_answer(
    decision: str, prefect_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_waymark.flows import run_plan

    (tmp_path / "terms.md").write_text("v1")
    plan_id = f"pause-{decision}"
    terms = [{"name": "terms", "kind": "file", "path": "terms.md"}]
    plan = write_plan(tmp_path, counting_chain(plan_id, "ab", reads=["terms"], state_refs=terms))
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["a"]
    (tmp_path / "terms.md").write_text("v2")
    url = f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}"
    box: list[Any] = []
    helper = threading.Thread(
        target=answer_when_paused,
        args=(url, plan_id, {"decision": decision, "by": "tester", "reason": "checked"}, box),
        daemon=True,
    )
    helper.start()
    if decision == "accept":
        out = run_plan(plan=str(plan), review_wait_seconds=120)
    else:  # the environment variable works too (e.g. for `waymark run`)
        monkeypatch.setenv("WAYMARK_REVIEW_WAIT_SECONDS", "120")
        out = run_plan(plan=str(plan))
    helper.join(timeout=5)
    assert "resumed" in box, box
    with open_ledger(url) as led:
        kinds = [e.kind for e in led.events(plan_id)]
        decided = led.events(plan_id, kinds=["step_review_accepted", "plan_aborted"])
    assert "review_waiting" in kinds and "step_needs_review" in kinds
    assert [e.data["by"] for e in decided] == ["tester"]
    if decision == "accept":
        assert out["result"] == "completed" and out["executed_steps"] == ["b"]
        assert (tmp_path / "b.count").read_text() == "b\n"
    else:
        assert out["result"] == "needs_review" and out["executed_steps"] == []
        assert not (tmp_path / "b.count").exists()
        assert decided[0].kind == "plan_aborted"
