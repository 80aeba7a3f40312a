"""A ``run_started``'s step hashes are waymark's own SHA-256 digests: stored as they are, not
scanned for secret shapes (a 10,000-step plan's first run spent ~0.9 s on that); everything
else in the event is masked as before, and a "hash" that is not a digest is masked too."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from prefect_waymark.ledger import SqlLedger

TOKEN = "ghp_" + "Zq8wL2mN4pR6tV0xY3bC5dF7gH9jK1aS2eU4"


def _stored_data(db: Path) -> dict[str, object]:
    with sqlite3.connect(db) as raw:
        (data,) = raw.execute("SELECT data FROM waymark_events").fetchone()
    return dict(json.loads(data))


def test_digests_are_stored_as_they_are_and_the_rest_is_masked(tmp_path: Path) -> None:
    digests = {f"s{i}": hashlib.sha256(str(i).encode()).hexdigest() for i in range(50)}
    with SqlLedger(f"sqlite:///{tmp_path / 'l.db'}") as led:
        led.record("p", "run_started", run_id="r", step_hashes=digests, note=f"token={TOKEN}")
    data = _stored_data(tmp_path / "l.db")
    assert data["step_hashes"] == digests
    assert TOKEN not in json.dumps(data) and "***" in str(data["note"])


def test_a_hash_that_is_not_a_digest_is_masked(tmp_path: Path) -> None:
    hashes = {"a": hashlib.sha256(b"a").hexdigest(), "b": f"token={TOKEN}"}
    with SqlLedger(f"sqlite:///{tmp_path / 'l.db'}") as led:
        led.record("p", "run_started", run_id="r", step_hashes=hashes)
    data = _stored_data(tmp_path / "l.db")
    assert TOKEN not in json.dumps(data)
    assert data["step_hashes"] == {"a": hashes["a"], "b": "token=***"}
