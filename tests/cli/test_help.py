"""``waymark --help`` as a new user reads it: each command's summary is one sentence, never
broken where its docstring's lines end."""

from __future__ import annotations

import re

from tests._support.helpers import run_cli


def test_each_command_summary_is_the_first_paragraph_on_one_line() -> None:
    proc = run_cli("--help", env={"COLUMNS": "400", "TERM": "dumb"})
    assert proc.returncode == 0, proc.stderr
    rows = {m[1]: m[2].strip() for m in re.finditer(r"^│ (\S+) +(.+?)\s*│$", proc.stdout, re.M)}
    # Two docstrings whose first paragraph spans lines (commands.py, agent_commands.py).
    assert rows["validate"] == (
        "Check a plan file; print every problem, and which forbidden entries the hooks and a "
        "run enforce (the others are only shown). Writes nothing."
    ), rows
    assert rows["status"].endswith("its schedule and next run are read from the Prefect server.")
    assert len(rows) >= 25 and all(text for text in rows.values())
