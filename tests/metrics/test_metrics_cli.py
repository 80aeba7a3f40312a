"""``waymark metrics PLAN``: the table, the ``--json`` document's keys, and exit 2 (nothing
written) for a bad plan file or a plan the ledger has no history of."""

from __future__ import annotations

import json
from pathlib import Path

from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess

KEYS = [
    "plan_omission_rate",
    "acceptance_coverage",
    "goal_drift_events",
    "verification_coverage",
    "resume_success_rate",
    "duplicate_side_effects",
    "ref_freshness",
    "single_in_progress_compliance",
]


def _plan(folder: Path) -> Path:
    steps = [
        {"id": "one", "run": "echo 1 >> one.count", "serves": ["A1"], "milestone": "m"},
        {"id": "two", "run": "echo 2 >> two.count", "depends_on": ["one"]},
        {"id": "three", "run": "echo 3 >> three.count", "depends_on": ["two"], "verify": True},
    ]
    contract = {"goal_id": "g", "objective": "o", "acceptance": ["a", "b"]}
    return write_plan(folder, {"plan_id": "metrics-cli", "contract": contract, "steps": steps})


def test_metrics_table_and_json(prefect_server: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    run_inprocess(plan, max_steps=1)
    run_inprocess(plan)
    ledger = tmp_path / ".waymark" / "ledger.db"
    before = ledger.stat().st_size, ledger.stat().st_mtime_ns

    doc_run = run_cli("metrics", str(plan), "--json")
    assert doc_run.returncode == 0, doc_run.stderr
    doc = json.loads(doc_run.stdout)
    assert list(doc) == ["plan_id", "schema_version", *KEYS]
    assert doc["plan_id"] == "metrics-cli" and doc["schema_version"] == 1
    assert all("value" in doc[k] for k in KEYS)
    assert doc["plan_omission_rate"]["value"] == 0.0
    assert doc["acceptance_coverage"]["value"] == 0.3333
    assert doc["acceptance_coverage"]["items"] == 2
    assert doc["acceptance_coverage"]["items_with_evidence"] == 1
    assert doc["goal_drift_events"]["unlinked_steps"] == 2  # two and three
    assert doc["verification_coverage"]["value"] == 0.5  # the plan's unit yes, m no
    assert doc["resume_success_rate"]["value"] == 1.0

    table = run_cli("metrics", str(plan), "--workdir", str(tmp_path))
    assert table.returncode == 0, table.stderr
    out = table.stdout
    for label in ("plan omission rate", "acceptance coverage", "goal drift events",
                  "verification coverage", "resume success rate", "duplicate side effects",
                  "state-ref freshness", "single-in_progress violations"):  # fmt: skip
        assert label in out
    assert "0 of 3 steps omitted so far" in out and "1 of 1 resumed runs clean" in out
    assert "measured so far" in out
    assert (ledger.stat().st_size, ledger.stat().st_mtime_ns) == before  # it only reads


def test_metrics_refuses_bad_input_with_exit_2(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    none_yet = run_cli("metrics", str(plan))
    assert none_yet.returncode == 2
    assert "has no ledger yet" in none_yet.stderr and f"`waymark run {plan}`" in none_yet.stderr
    assert not (tmp_path / ".waymark").exists()  # nothing created

    from prefect_waymark.ledger import open_ledger

    url = f"sqlite:///{tmp_path / 'other.db'}"
    open_ledger(url).close()
    unknown = run_cli("metrics", str(plan), "--ledger", url)
    assert unknown.returncode == 2 and "has no history in the ledger" in unknown.stderr

    bad = write_plan(tmp_path, {"plan_id": "x", "steps": [{"id": "s", "rn": "echo"}]}, "bad.yaml")
    refused = run_cli("metrics", str(bad), "--json")
    assert refused.returncode == 2 and "bad.yaml" in refused.stderr and "rn" in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == ""
