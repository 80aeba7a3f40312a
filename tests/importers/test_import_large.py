"""A 2 MB tasks.json and a 2 MB issues.jsonl import correctly: every task becomes a step, the
done ones completed in the ledger once. How fast is measured in bench/bench_import.py (no test
asserts a time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from prefect_waymark import load_plan
from prefect_waymark.importers import prepare_import, record_import, write_plan_file
from prefect_waymark.ledger import EventKind, default_ledger_url, open_ledger
from tests.importers.big_sources import beads_file, taskmaster_file

SIZE = 2 * 1024 * 1024


@pytest.mark.parametrize(
    ("fmt", "name", "generate"),
    [("taskmaster", "tasks.json", taskmaster_file), ("beads", "issues.jsonl", beads_file)],
)
def test_two_megabytes_import_completely(
    tmp_path: Path, fmt: str, name: str, generate: Callable[[Path, int], int]
) -> None:
    src = tmp_path / name
    items = generate(src, SIZE)
    assert src.stat().st_size >= SIZE
    out = tmp_path / "plan.yaml"
    prep = prepare_import(src, fmt, out=out)
    write_plan_file(out, prep.text)
    steps = len(prep.spec.steps)
    # Task Master: every task and subtask is a step; beads: every issue (epics included).
    assert steps >= items and steps > 1000
    assert len(load_plan(out).steps) == steps
    with open_ledger(default_ledger_url(out.parent)) as led:
        rec = record_import(
            led,
            prep.spec,
            prep.built.done,
            source_format=fmt,
            source_path=str(src),
            sha256=prep.sha256,
        )
        completed = led.events(prep.spec.plan_id, kinds=[EventKind.step_completed])
        imported = led.events(prep.spec.plan_id, kinds=[EventKind.imported])
    assert len(rec.completed) > 500
    assert sorted(str(e.step_id) for e in completed) == sorted(rec.completed)
    assert set(rec.completed) == set(prep.built.done)
    assert len(imported) == 1
