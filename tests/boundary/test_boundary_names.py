"""File names the boundary meets in real runs: a name that is not UTF-8 (recorded escaped, so
every event, marker and export stays UTF-8, and the export restores), declared outputs written
``sub/../b.txt`` and ``./c.txt`` (normalised, not reported as created), and two plans in one
workdir (each compares with its own last run's manifest)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from prefect_waymark.ledger import open_ledger
from prefect_waymark.markers import marker_history
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess

BAD = "bad\\xff.txt"  # how the boundary records the file named b"bad\xff.txt"


def _utf8(doc: object) -> bool:
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_odd_names_outputs_and_two_plans_in_one_workdir(
    prefect_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    work = tmp_path / "work"
    url = f"sqlite:///{work / '.waymark' / 'ledger.db'}"
    plan = write_plan(
        work,
        {
            "plan_id": "names",
            "steps": [
                {
                    "id": "make",
                    "run": "printf x > \"$(printf 'bad\\377.txt')\"; mkdir -p sub; "
                    "echo b > b.txt; echo c > c.txt; echo u > undeclared.txt",
                    "outputs": ["sub/../b.txt", "./c.txt"],
                }
            ],
        },
    )
    other = write_plan(
        work,
        {"plan_id": "other", "steps": [{"id": "o", "run": "echo o > o.txt"}]},
        name="other.yaml",
    )
    with caplog.at_level(logging.WARNING):
        first = run_inprocess(plan, ledger_url=url)
    assert first.result == "completed"
    assert not [r for r in caplog.records if "not published" in r.getMessage()]
    markers = _markers(url, "names")
    b = markers[-1]["boundary"]
    assert b["created"] == sorted([BAD, "undeclared.txt"]) and b["errors"] == []
    with open_ledger(url, create=False) as led:
        assert all(_utf8(e.data) for e in led.events("names"))

    # The export (to a file and to stdout) is UTF-8 and restores.
    out = tmp_path / "names.jsonl"
    proc = run_cli("export", str(plan), "-o", str(out))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    text = out.read_bytes().decode("utf-8")
    assert BAD in json.loads(text.splitlines()[-1])["data"]["boundary"]["created"]
    piped = run_cli("export", str(plan))
    assert piped.returncode == 0 and piped.stdout.splitlines()[1:] == text.splitlines()[1:]
    restored = f"sqlite:///{tmp_path / 'restored.db'}"
    proc = run_cli("restore", str(out), "--ledger", restored)
    assert proc.returncode == 0, proc.stderr
    assert _markers(restored, "names")[-1]["boundary"] == b

    # Another plan in the same workdir: no earlier manifest of its own, so no between-runs
    # (with one manifest for the workdir, it compared with the first plan's run).
    marks = str(tmp_path / "other-markers")  # one workdir, its own markers folder
    done = run_inprocess(other, ledger_url=url, publish_artifacts=False, markers_dir=marks)
    assert done.result == "completed"
    ob = _markers(url, "other")[-1]["boundary"]
    assert ob["between_runs"] is None and ob["previous_run"] is None
    assert (work / ".waymark" / "manifest-names.json").is_file()
    assert (work / ".waymark" / "manifest-other.json").is_file()
    # The first plan's next run compares with its own last run, and sees the other's file.
    second = run_inprocess(plan, ledger_url=url, publish_artifacts=False)
    assert second.result == "completed"
    b2 = _markers(url, "names")[-1]["boundary"]
    assert b2["previous_run"] == first.run_id
    assert b2["between_runs"]["created"] == ["o.txt"]


def _markers(url: str, plan_id: str) -> list[dict[str, object]]:
    with open_ledger(url, create=False) as led:
        return marker_history(led, plan_id)


def test_a_checked_in_output_whose_name_is_not_utf8_is_refused(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        {"plan_id": "agent", "steps": [{"id": "w", "kind": "agent", "instructions": "write"}]},
    )
    env = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}
    assert run_cli("start", str(plan), "w", "--executor", "bob", env=env).returncode == 0
    bad = os.fsdecode(b"bad\xff.txt")
    (tmp_path / bad).write_text("x")
    proc = run_cli("done", str(plan), "w", "--executor", "bob", "--output", bad, env=env)
    assert proc.returncode == 2 and "expected a file name in UTF-8" in proc.stderr, proc.stderr
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}", create=False) as led:
        assert led.step_states("agent")["w"].status == "in_progress"
