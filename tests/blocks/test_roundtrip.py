"""Saving and loading both blocks against the session's Prefect server; secrets stay masked."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from prefect_waymark.blocks import (
    GoalContractBlock,
    StateRefItem,
    StateRefsBlock,
    StateRefsBlockError,
    contract_hash,
)
from prefect_waymark.models import GoalContract
from prefect_waymark.resolvers import resolve_refs
from tests._support.ref_server import RefServer, serve


@pytest.fixture
def ref_server() -> Iterator[RefServer]:
    yield from serve()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_goal_contract_round_trip(prefect_server: str) -> None:
    name = _name("gc")
    block = GoalContractBlock(
        goal_id="launch",
        version=3,
        objective="Ship the report",
        acceptance=["reviewed by legal"],
        forbidden=["action:pay*", "no emails to customers"],
        exit_conditions=["budget spent"],
    )
    block.save(name)
    loaded = GoalContractBlock.load(name)
    assert loaded.to_contract() == block.to_contract()
    assert loaded.content_hash() == block.content_hash()
    assert loaded.status == "accepted"
    # Version and status are not content: only a real edit changes the hash.
    bumped = block.to_contract().model_copy(update={"version": 4, "status": "revoked"})
    assert contract_hash(bumped) == block.content_hash()
    edited = block.to_contract().model_copy(update={"objective": "Ship two reports"})
    assert contract_hash(edited) != block.content_hash()
    # save(overwrite=True) updates in place: Prefect keeps no history, hence explicit versions.
    loaded.status = "revoked"
    loaded.save(name, overwrite=True)
    assert GoalContractBlock.load(name).status == "revoked"
    assert GoalContractBlock.from_contract(GoalContract(goal_id="g", objective="o")).version == 1


def test_state_refs_round_trip_with_masked_credentials(
    prefect_server: str, ref_server: RefServer, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client

    token = f"tok-{uuid.uuid4().hex}"
    ref_server.set("/orders/7", {"rev": 1})
    ref_server.auth["/orders/7"] = f"Bearer {token}"
    name = _name("refs")
    block = StateRefsBlock(
        refs=[
            StateRefItem(
                name="order",
                kind="http",
                locator=ref_server.url("/orders/7"),
                version_from="json:/rev",
                credential="api",
            ),
            StateRefItem(name="spec", kind="file", locator="spec.md"),
            StateRefItem(
                name="row",
                kind="sql",
                locator="sqlite:///biz.db",
                version_from="rev",
                options={"table": "orders", "key_column": "id", "key": "o-1"},
            ),
        ],
        credentials={"api": token},
    )
    block.save(name)
    loaded = StateRefsBlock.load(name)
    assert [r.model_dump() for r in loaded.refs] == [r.model_dump() for r in block.refs]
    assert token not in loaded.model_dump_json() and token not in repr(loaded)
    with get_client(sync_client=True) as client:
        doc = client.read_block_document_by_name(name, "waymark-state-refs", include_secrets=False)
    assert token not in str(doc.data)
    configs = loaded.ref_configs()
    assert [c.kind for c in configs] == ["http", "file", "sql"]
    assert token not in repr(configs)
    got = resolve_refs(configs[:2], tmp_path)
    assert got["order"].version == "1" and got["spec"].version == "absent"
    assert ref_server.seen_auth["/orders/7"] == [f"Bearer {token}"]


def test_state_refs_errors_name_block_field_paths() -> None:
    block = StateRefsBlock(
        refs=[
            StateRefItem(name="a", kind="http", locator="ftp://x", credential="missing"),
            StateRefItem(name="b", kind="http", locator="http://h/x", version_from="nope"),
            StateRefItem(name="c", kind="sql", locator="sqlite:///x.db", options={"tabel": "t"}),
            StateRefItem(name="b", kind="file", locator="x"),
        ],
        credentials={"api": SecretStr("x").get_secret_value()},
    )
    with pytest.raises(StateRefsBlockError) as err:
        block.ref_configs(label="state_refs (block 'prod')")
    msg = str(err.value)
    assert "state_refs (block 'prod').refs[0].credential: no credential 'missing'" in msg
    assert "refs[1].version_from: expected etag, last-modified" in msg
    assert "refs[2].options.tabel: unknown field 'tabel'" in msg
    assert "refs[3].name: duplicate ref name 'b'" in msg
