"""Processes that open a new SQLite ledger at the same moment all open it: the first openers
race to turn the new file to WAL, and SQLite answers the losers "database is locked" at once,
without its busy timeout. Found by two agents racing through the MCP server (each one's first
``next``); without the retry, 10 of 40 rounds here had an opener fail."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

ROUNDS = 12
OPENERS = 4


def _open_and_record(url: str, barrier: Any) -> str:
    from prefect_waymark.ledger import open_ledger

    barrier.wait()
    try:
        led = open_ledger(url)
        try:
            led.record("p", "run_started", run_id="r")
        finally:
            led.close()
    except Exception as exc:  # noqa: BLE001 - returned to the test, which names it
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_openers_racing_for_a_new_ledger_all_open_it(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    failures: list[str] = []
    with ctx.Manager() as manager, ctx.Pool(OPENERS) as pool:
        for i in range(ROUNDS):
            url = f"sqlite:///{tmp_path / str(i) / 'ledger.db'}"
            barrier = manager.Barrier(OPENERS)
            results = pool.starmap(_open_and_record, [(url, barrier)] * OPENERS)
            failures += [r for r in results if r != "ok"]
    assert failures == []
