"""Contract items with ids: plain strings get ``A1``/``E1`` by position, ``{id, text}`` keeps its
id; steps' ``serves`` must name one of them; the fingerprint of a plain-string contract is the
one it always had."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefect_waymark import ContractItem, GoalContract, PlanError, load_plan
from prefect_waymark.models import contract_hash
from tests._support.helpers import run_cli, write_plan


def plan_doc(contract: dict[str, Any] | None, **step: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"plan_id": "items", "steps": [{"id": "s1", "run": "true", **step}]}
    if contract is not None:
        doc["contract"] = contract
    return doc


CONTRACT = {
    "goal_id": "g",
    "objective": "ship it",
    "acceptance": ["tests pass", {"id": "docs", "text": "README updated"}],
    "exit_conditions": ["shipped", {"id": "budget", "text": "budget spent"}],
}


def test_ids_by_position_and_as_written() -> None:
    contract = GoalContract.model_validate(CONTRACT)
    assert contract.acceptance_items() == {"A1": "tests pass", "docs": "README updated"}
    assert contract.exit_items() == {"E1": "shipped", "budget": "budget spent"}
    assert contract.acceptance[1] == ContractItem(id="docs", text="README updated")


def test_a_plain_string_contract_keeps_its_fingerprint() -> None:
    # Items written as {id, text} change nothing for contracts written as strings: a recorded
    # plan's fingerprint must stay the same or it would stop at review.
    plain = GoalContract(goal_id="g", objective="o", acceptance=["a", "b"], exit_conditions=["e"])
    raw = GoalContract.model_validate(plain.model_dump())
    assert contract_hash(raw) == contract_hash(plain)
    assert plain.model_dump()["acceptance"] == ["a", "b"]


def test_serves_names_acceptance_items_and_exit_conditions(tmp_path: Path) -> None:
    spec = load_plan(write_plan(tmp_path, plan_doc(CONTRACT, serves=["A1", "docs", "budget"])))
    assert spec.steps[0].serves == ["A1", "docs", "budget"]


def test_an_unknown_serves_id_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    path = write_plan(tmp_path, plan_doc(CONTRACT, serves=["A2"]))
    with pytest.raises(PlanError) as info:
        load_plan(path)
    text = str(info.value)
    assert "steps[0].serves[0]" in text
    assert "unknown contract item 'A2'" in text
    assert "A1, docs, E1, budget" in text
    result = run_cli("validate", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout


def test_serves_without_a_contract_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="no goal contract: nothing to serve"):
        load_plan(write_plan(tmp_path, plan_doc(None, serves=["A1"])))


def test_a_repeated_item_id_is_refused(tmp_path: Path) -> None:
    # The second entry is written with the id the first got by position.
    contract = {**CONTRACT, "acceptance": ["tests pass", {"id": "A1", "text": "again"}]}
    with pytest.raises(PlanError) as info:
        load_plan(write_plan(tmp_path, plan_doc(contract)))
    assert "contract.acceptance[1]" in str(info.value)
    assert "duplicate id 'A1'" in str(info.value)


def test_verify_is_a_boolean(tmp_path: Path) -> None:
    assert load_plan(write_plan(tmp_path, plan_doc(None, verify=True))).steps[0].verify
    with pytest.raises(PlanError, match=r"steps\[0\]\.verify"):
        load_plan(write_plan(tmp_path, plan_doc(None, verify="yes")))
