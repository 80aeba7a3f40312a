"""Timing: a 2 MB tasks.json and a 2 MB issues.jsonl are imported in under 2 s each, measured
in-process: the parse and plan build (read, build, validate, render) and, apart, the ledger
writes (two events per done step, one transaction each: the ledger has no batch API)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from prefect_waymark.importers import prepare_import, record_import, write_plan_file
from prefect_waymark.ledger import EventKind, default_ledger_url, open_ledger
from tests.importers.big_sources import beads_file, taskmaster_file

SIZE = 2 * 1024 * 1024
LIMIT = 2.0


@pytest.mark.parametrize(
    ("fmt", "name", "generate"),
    [("taskmaster", "tasks.json", taskmaster_file), ("beads", "issues.jsonl", beads_file)],
)
def test_two_megabytes_import_in_under_two_seconds(
    tmp_path: Path, fmt: str, name: str, generate: Callable[[Path, int], int]
) -> None:
    src = tmp_path / name
    generate(src, SIZE)
    assert src.stat().st_size >= SIZE
    builds: list[float] = []
    records: list[float] = []
    for attempt in range(2):  # the better of two: the machine is shared
        out = tmp_path / f"run{attempt}" / "plan.yaml"
        t0 = time.perf_counter()
        prep = prepare_import(src, fmt, out=out)
        builds.append(time.perf_counter() - t0)
        write_plan_file(out, prep.text)
        with open_ledger(default_ledger_url(out.parent)) as led:
            t0 = time.perf_counter()
            rec = record_import(
                led,
                prep.spec,
                prep.built.done,
                source_format=fmt,
                source_path=str(src),
                sha256=prep.sha256,
            )
            records.append(time.perf_counter() - t0)
            assert len(led.events(prep.spec.plan_id, kinds=[EventKind.step_completed])) == len(
                rec.completed
            )
    assert len(prep.spec.steps) > 1000 and len(rec.completed) > 500
    build, record = min(builds), min(records)
    print(
        f"\n{fmt}: {src.stat().st_size:,} bytes, {len(prep.spec.steps)} steps, "
        f"{len(rec.completed)} done: parse+build {build:.3f}s, ledger {record:.3f}s"
    )
    assert build < LIMIT, f"parse and plan build took {build:.2f}s"
    assert build + record < LIMIT, f"with the ledger writes: {build + record:.2f}s"
