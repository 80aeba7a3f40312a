"""A secret from a block never appears in logs, artifacts, markers, the ledger or status output.

Credentials come from a StateRefs block (``credentials``, a Prefect SecretDict) and from a
Prefect Secret block; the refs live on a real HTTP server that requires them. The plan runs
through the real CLI, stops for review on a changed ref, is accepted and completes; then every
place waymark writes to is searched for the secrets.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan
from tests._support.ref_server import RefServer, serve


@pytest.fixture
def ref_server() -> Iterator[RefServer]:
    yield from serve()


def _flow_run_texts(flow_run_ids: list[str]) -> list[str]:
    """Logs, artifacts and parameters of the flow runs, as Prefect's API returns them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        LogFilter,
        LogFilterFlowRunId,
    )

    ids = [uuid.UUID(i) for i in flow_run_ids]
    texts: list[str] = []
    with get_client(sync_client=True) as client:
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)))
        texts += [log.message for log in logs]
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids))
        )
        texts += [json.dumps(a.model_dump(mode="json")) for a in artifacts]
        for fr in ids:
            run = client.read_flow_run(fr)
            texts.append(json.dumps(run.model_dump(mode="json")))
    assert any("re-anchor" in t for t in texts), "the flow runs' logs did not reach the API"
    return texts


def test_block_secrets_never_leak(
    prefect_server: str, ref_server: RefServer, tmp_path: Path
) -> None:
    from prefect.blocks.system import Secret

    from prefect_waymark.blocks import StateRefItem, StateRefsBlock

    token = f"bearer-{uuid.uuid4().hex}"
    password = f"pw-{uuid.uuid4().hex}"
    basic = base64.b64encode(f"ann:{password}".encode()).decode()
    ref_server.set("/private", {"rev": 1})
    ref_server.set("/basic", {"rev": 1})
    ref_server.auth["/private"] = f"Bearer {token}"
    ref_server.auth["/basic"] = f"Basic {basic}"
    secret_name = f"waymark-test-{uuid.uuid4().hex[:8]}"
    Secret(value=password).save(secret_name)
    refs_name = f"refs-{uuid.uuid4().hex[:8]}"
    StateRefsBlock(
        refs=[
            StateRefItem(
                name="private",
                kind="http",
                locator=ref_server.url("/private"),
                version_from="json:/rev",
                credential="api",
            ),
            StateRefItem(
                name="basic",
                kind="http",
                locator=ref_server.url("/basic"),
                options={"auth": "basic", "username": "ann"},
                secret_block=secret_name,
            ),
        ],
        credentials={"api": token},
    ).save(refs_name)
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "secrets",
            "state_refs": {"block": refs_name},
            "steps": [
                {"id": "a", "run": "echo a >> a.count", "reads": ["private", "basic"]},
                {"id": "b", "depends_on": ["a"], "run": "env | sort", "reads": ["private"]},
            ],
        },
    )
    outputs: list[str] = []

    def cli(*args: str) -> int:
        proc = run_cli(*args)
        outputs.extend([proc.stdout, proc.stderr])
        return proc.returncode

    assert cli("run", str(plan), "--max-steps", "1") == 3, outputs
    ref_server.set("/private", {"rev": 2})
    assert cli("run", str(plan)) == 4, outputs
    assert cli("status", str(plan)) == 4
    assert cli("status", str(plan), "--json") == 4
    assert cli("review", str(plan), "--accept") == 0
    assert cli("run", str(plan)) == 0, outputs
    assert cli("status", str(plan), "--json") == 0
    assert cli("marker", str(plan), "--json") == 0
    # The credentials were really used: the server accepted them on every read.
    assert ref_server.seen_auth["/private"].count(f"Bearer {token}") >= 5
    assert f"Basic {basic}" in ref_server.seen_auth["/basic"]

    ledger_dir = tmp_path / ".waymark"
    with open_ledger(f"sqlite:///{ledger_dir / 'ledger.db'}") as led:
        events = led.events("secrets")
    flow_runs = [e.data["flow_run_id"] for e in events if e.kind == "run_started"]
    assert len(flow_runs) == 3
    kinds = {e.kind for e in events}
    assert {"reanchor", "accepted_versions", "step_needs_review"} <= kinds
    texts = outputs + [json.dumps(e.model_dump(mode="json")) for e in events]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "EXECUTION_MARKER.json" for p in files)
    texts += [p.read_bytes().decode("latin-1") for p in files]  # ledger db, WAL, markers, results
    # Logs reach the API asynchronously after each run; give them a moment, then search.
    deadline = time.monotonic() + 30
    while True:
        try:
            texts += _flow_run_texts(flow_runs)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    for secret in (token, password, basic):
        leaks = [t[max(0, t.find(secret) - 80) : t.find(secret) + 80] for t in texts if secret in t]
        assert not leaks, f"secret found: {leaks[:3]}"
    # Sanity: the search does look at the right things.
    assert any("private" in t and "re-anchor" in t for t in texts)
    assert any(ref_server.url("/private") in t for t in texts)


def test_versions_read_from_a_response_that_echoes_the_credential_are_scrubbed(
    prefect_server: str, ref_server: RefServer, tmp_path: Path
) -> None:
    """The server echoes the token in the body and the ETag: the ledger's ``reanchor`` and
    ``accepted_versions`` events, the conflict shown for review and the markers keep ``***``."""
    from prefect_waymark.blocks import StateRefItem, StateRefsBlock

    token = f"echo-{uuid.uuid4().hex}"
    ref_server.set("/me", {"token": token, "note": f"v1 for {token}"}, etag=f'"e1-{token}"')
    ref_server.auth["/me"] = f"Bearer {token}"
    refs_name = f"refs-{uuid.uuid4().hex[:8]}"
    StateRefsBlock(
        refs=[
            StateRefItem(
                name="note",
                kind="http",
                locator=ref_server.url("/me"),
                version_from="json:/note",
                credential="api",
            ),
            StateRefItem(name="tag", kind="http", locator=ref_server.url("/me"), credential="api"),
        ],
        credentials={"api": token},
    ).save(refs_name)
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "echoed",
            "state_refs": {"block": refs_name},
            "steps": [
                {"id": "a", "run": "true", "reads": ["note", "tag"]},
                {"id": "b", "depends_on": ["a"], "run": "true", "reads": ["note"]},
            ],
        },
    )
    outputs: list[str] = []

    def cli(*args: str) -> int:
        proc = run_cli(*args)
        outputs.extend([proc.stdout, proc.stderr])
        return proc.returncode

    assert cli("run", str(plan), "--max-steps", "1") == 3, outputs
    ref_server.set("/me", {"token": token, "note": f"v2 for {token}"}, etag=f'"e2-{token}"')
    assert cli("run", str(plan)) == 4, outputs  # the note changed: a person decides
    assert cli("status", str(plan)) == 4
    assert cli("review", str(plan), "--accept") == 0
    assert cli("run", str(plan)) == 0, outputs
    assert cli("marker", str(plan), "--json") == 0
    assert ref_server.seen_auth["/me"].count(f"Bearer {token}") >= 4  # really sent

    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        events = led.events("echoed")
    accepted = [e.data for e in events if e.kind == "accepted_versions"]
    recorded = json.dumps(accepted)
    assert "v1 for ***" in recorded and "v2 for ***" in recorded, recorded
    assert '\\"e1-***\\"' in recorded
    assert any("v2 for ***" in t for t in outputs)  # the conflict shown names the change
    texts = outputs + [json.dumps(e.model_dump(mode="json")) for e in events]
    texts += [p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file()]
    leaks = [t[max(0, t.find(token) - 80) : t.find(token) + 80] for t in texts if token in t]
    assert not leaks, f"secret found: {leaks[:3]}"


def test_a_raw_secret_in_a_blocks_locator_is_refused_before_any_step(
    prefect_server: str, tmp_path: Path
) -> None:
    """Bad input in a StateRefs block is exit 2 like bad input in a plan file (it was exit 4, a
    review stop, which no answer could fix); nothing runs, nothing is recorded."""
    from prefect_waymark.blocks import StateRefItem, StateRefsBlock

    password = f"pw-{uuid.uuid4().hex}"
    refs_name = f"refs-{uuid.uuid4().hex[:8]}"
    StateRefsBlock(
        refs=[StateRefItem(name="api", kind="http", locator=f"https://ann:{password}@h/x")]
    ).save(refs_name)
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "block-raw",
            "state_refs": {"block": refs_name},
            "steps": [{"id": "a", "run": "echo ran > ran.txt", "reads": ["api"]}],
        },
    )
    proc = run_cli("run", str(plan))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    assert f"state_refs (block {refs_name!r})" in proc.stderr
    assert "refs[0].locator: the URL holds a password" in proc.stderr
    assert not (tmp_path / "ran.txt").exists()
    assert not (tmp_path / ".waymark" / "ledger.db").exists()
    texts = [out] + [p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file()]
    assert not [t for t in texts if password in t]
