"""Secrets are masked before anything is stored or sent (issue 33, class 3).

A real ``waymark run --ledger postgresql+psycopg://postgres:PASSWORD@.../db`` of a plan whose
``run:`` steps print a GitHub token, an AWS access key, a URL with a password and a
``password=...`` assignment (one step succeeds, one fails): none of the raw values is found in
the ledger's rows, ``waymark export``, the marker and view files, the flow run's parameters, its
logs, its task runs' state messages or its artifacts, read back from the Prefect API. Each is
found there in today's (unmasked) code. The local PostgreSQL trusts connections, so a URL with
any password connects: the password is real in the URL and must never reach Prefect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests._support.helpers import run_cli, write_plan

GITHUB = "ghp_" + "Zq8wL2mN4pR6tV0xY3bC5dF7gH9jK1aS2eU4"  # ghp_ and 36 characters
AWS = "AKIA" + "QX7RZ2M4N6P8T0V3"
URL_PASSWORD = "Pw-9x7Qz4k"
WORD_PASSWORD = "hunter2-Lq93"
LEDGER_PASSWORD = "ledger-pw-Xc81"
SECRETS = (GITHUB, AWS, URL_PASSWORD, WORD_PASSWORD, LEDGER_PASSWORD)

_PRINT = (
    f"echo token={GITHUB}; echo aws_key {AWS}; "
    f"echo cloning https://deploy:{URL_PASSWORD}@git.example.com/repo.git; "
    f"echo password={WORD_PASSWORD} >&2"
)


def _found(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _flow_run_things(flow_run_id: str) -> dict[str, str]:
    """What Prefect's API holds of the flow run, each as text: its parameters, its logs (the
    steps' too), its task runs' state messages, its artifacts."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
    )

    from tests._support.artifacts import flow_run_logs

    logs = flow_run_logs(flow_run_id, want="failed", wait=30)
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(UUID(flow_run_id))
        tasks = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)]))
        )
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(flow_run_id)])
            )
        )
    assert logs and tasks and artifacts, (len(logs), len(tasks), len(artifacts))
    return {
        "parameters": json.dumps(run.parameters),
        "flow run state": repr(run.state),
        "logs": "\n".join(log.message for log in logs),
        "task run states": "\n".join(repr(t.state) for t in tasks),
        "artifacts": "\n".join(f"{a.key} {a.description} {a.data}" for a in artifacts),
    }


def _ledger_rows(url: str) -> tuple[str, Any]:
    """Every row of every ledger table, as text; and the run's flow run id."""
    import psycopg

    libpq = url.replace("postgresql+psycopg://", "postgresql://", 1)
    rows: list[str] = []
    with psycopg.connect(libpq) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        ]
        for table in tables:
            rows += [repr(r) for r in conn.execute(f'SELECT * FROM "{table}"')]
        started = conn.execute(
            "SELECT data FROM waymark_events WHERE kind = 'run_started' ORDER BY seq DESC"
        ).fetchone()
    assert started is not None, tables
    data = started[0] if isinstance(started[0], dict) else json.loads(started[0])
    return "\n".join(rows), data["flow_run_id"]


def test_secrets_a_step_prints_and_the_ledger_password_are_stored_nowhere(
    prefect_server: str, tmp_path: Path, pg_url: str
) -> None:
    url = pg_url.replace("postgres@", f"postgres:{LEDGER_PASSWORD}@", 1)
    assert LEDGER_PASSWORD in url, url
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "leaky",
            "steps": [
                {"id": "prints", "run": _PRINT},
                {"id": "fails", "depends_on": ["prints"], "run": f"{_PRINT}; exit 3"},
            ],
        },
    )
    done = run_cli("run", str(plan), "--ledger", url, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # step `fails` failed
    assert "fails" in done.stdout + done.stderr

    rows, flow_run_id = _ledger_rows(url)
    assert "output_tail" in rows  # the failed step's output was recorded
    places = {"the ledger's rows": rows}

    export = run_cli("export", str(plan), "--ledger", url, cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    assert "output_tail" in export.stdout
    places["`waymark export`"] = export.stdout

    for name in ("EXECUTION_MARKER.json", "STATE.md", "IMPLEMENTATION_LOG.md", "TASKS.md"):
        places[name] = (tmp_path / name).read_text()

    seen = _flow_run_things(flow_run_id)
    assert "--ledger" not in seen["parameters"] and "ledger_url" in seen["parameters"]
    places.update({f"the flow run's {where} (Prefect API)": text for where, text in seen.items()})
    places["the run's terminal output"] = done.stdout + done.stderr

    leaks = {where: _found(text) for where, text in places.items()}
    assert {where: found for where, found in leaks.items() if found} == {}
    # masked, not dropped: the output and the URL keep their shape
    assert "token=***" in rows and "https://deploy:***@git.example.com" in rows
    assert "postgres:***@" in seen["parameters"], seen["parameters"]


def test_each_known_shape_is_masked_and_ordinary_text_is_kept() -> None:
    from prefect_waymark._masking import mask

    shapes = {
        f"token={GITHUB}": "token=***",
        f"key {AWS} in use": "key *** in use",
        f"https://deploy:{URL_PASSWORD}@git.example.com/r": "https://deploy:***@git.example.com/r",
        f"password={WORD_PASSWORD}": "password=***",
        "api_key: 'abc123def456'": "api_key: '***'",
        "xoxb-1234-5678-AbCdEfGh9 posted": "*** posted",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sIgNaTuRe_x-1 ok": "jwt *** ok",
        "sk_live_" + "a1" * 12: "***",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nnext": (
            "-----***\nnext"
        ),
    }
    for text, shown in shapes.items():
        assert mask(text) == shown, text
    for kept in (
        "sha256:" + "ab12" * 16,
        "step a completed in 1.2 s; next start: b",
        "postgresql+psycopg://postgres@127.0.0.1:5432/plans",
    ):
        assert mask(kept) is kept


def test_a_remembered_secret_is_masked_in_its_encoded_forms_too() -> None:
    import base64
    from urllib.parse import quote

    from prefect_waymark._masking import mask, remember_secret

    value = "plain words/& value"  # no known shape
    assert mask(f"got {value}") == f"got {value}"
    remember_secret(value)
    encoded = base64.b64encode(value.encode()).decode()
    assert mask(f"got {value}; {quote(value, safe='')}; {encoded}") == "got ***; ***; ***"
