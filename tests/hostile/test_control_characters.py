"""What reaches a terminal is text: control characters in an executor's reason or a step's
output are shown as ``\\u001b``-style escapes in ``status``, ``next``, the check-in commands, the
Markdown views and the run's log lines; JSON output keeps the value (JSON's own escapes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan

REASON = "bad \x1b[2J\x1b]0;pwned\x07 end \x9b31m"
SHOWN = "bad \\u001b[2J\\u001b]0;pwned\\u0007 end \\u009b31m"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
NO_PREFECT = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}


def _raw(text: str, *, colours: bool = False) -> list[str]:
    if colours:  # rich's own colour codes (SGR: ESC [ ... m) are allowed, nothing else
        text = re.sub("\x1b\\[[0-9;]*m", "", text)
    return RAW.findall(text)


@pytest.fixture
def failed(tmp_path: Path) -> Path:
    plan = write_plan(
        tmp_path / "proj",
        {"plan_id": "ctl", "steps": [{"id": "a", "kind": "agent", "instructions": "do it"}]},
    )
    assert run_cli("start", str(plan), "a", env=NO_PREFECT).returncode == 0
    proc = run_cli("fail", str(plan), "a", "--reason", REASON, env=NO_PREFECT)
    assert proc.returncode == 0, proc.stderr
    assert SHOWN in proc.stdout + proc.stderr and not _raw(proc.stdout + proc.stderr)
    return plan


def test_status_next_and_the_views_show_control_characters_as_escapes(failed: Path) -> None:
    for args, env in (
        (["status"], NO_PREFECT),
        (["status"], {**NO_PREFECT, "FORCE_COLOR": "1"}),  # rich's colours, as in a terminal
        (["next"], NO_PREFECT),
    ):
        proc = run_cli(args[0], str(failed), *args[1:], env=env)
        out = proc.stdout + proc.stderr
        assert not _raw(out, colours="FORCE_COLOR" in env), (args, out)
        assert "pwned" in out and "\\u001b" in out
    for name in ("STATE.md", "IMPLEMENTATION_LOG.md"):
        text = (failed.parent / name).read_text()
        assert SHOWN in text and not _raw(text), name


def test_json_output_keeps_the_value(failed: Path) -> None:
    proc = run_cli("status", str(failed), "--json", env=NO_PREFECT)
    doc = json.loads(proc.stdout)
    assert [s["error"] for s in doc["steps"]] == [REASON]  # the reason as it was given
    assert not _raw(proc.stdout)


@pytest.mark.prefect
def test_a_steps_output_is_logged_as_text(prefect_server: str, tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path / "proj",
        {"plan_id": "out", "steps": [{"id": "a", "run": "printf 'x\\033[2Jy\\n'; exit 3"}]},
    )
    proc = run_cli("run", str(plan), timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "x\\u001b[2Jy" in out and not _raw(out), out[-2000:]
