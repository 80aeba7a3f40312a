"""Fixtures of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plan cache of the test's own (``$WAYMARK_PLAN_CACHE``), and no ledger URL in the
    environment: the quick path of ``waymark status`` may answer (cli/quick_status.py)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("WAYMARK_PLAN_CACHE", str(folder))
    monkeypatch.delenv("WAYMARK_LEDGER_URL", raising=False)
    return folder
