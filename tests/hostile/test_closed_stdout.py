"""A standard output that is full (``> /dev/full``) or closed (``| head``) ends a command with
one line on stderr (full: exit 1, the output was lost) or quietly (closed), never a traceback.
``/dev/full`` is read-only use of the system's own device: nothing is created under ``/dev``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests._support.helpers import WAYMARK, write_plan

NO_PREFECT = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
PLAN = {
    "plan_id": "out",
    "title": "t" * 200,  # a title's limit; the steps' titles make the output long
    "steps": [{"id": f"s{i}", "title": "t" * 200, "run": "true"} for i in range(300)],
}
COMMANDS = [["validate"], ["status"], ["status", "--json"], ["schema"]]


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_plan(tmp_path_factory.mktemp("out"), PLAN)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_full_standard_output_is_one_line_and_exit_1(plan: Path, args: list[str]) -> None:
    full_args = args if args == ["schema"] else [args[0], str(plan), *args[1:]]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [WAYMARK, *full_args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=NO_PREFECT,
            timeout=120,
        )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "waymark: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_closed_standard_output_ends_quietly(plan: Path, args: list[str]) -> None:
    full_args = args if args == ["schema"] else [args[0], str(plan), *args[1:]]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a byte
    proc = subprocess.run(
        [WAYMARK, *full_args],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        env=NO_PREFECT,
        timeout=120,
    )
    os.close(write)
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1)  # click ends a broken pipe with 1, waymark's flush with 0
