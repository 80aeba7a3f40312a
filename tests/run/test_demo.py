"""`make demo` as it runs: examples/research_report/run_demo.py, against the session's server.

The example is copied into a folder of the test's own (the script works in ``<its root>/.demo``),
and run by this interpreter, so its ``waymark`` is the one of the environment under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.floor
def test_the_demo_fails_once_resumes_and_publishes_once(
    prefect_server: str, tmp_path: Path
) -> None:
    example = tmp_path / "examples" / "research_report"
    shutil.copytree(
        ROOT / "examples" / "research_report", example, ignore=shutil.ignore_patterns("__pycache__")
    )
    proc = subprocess.run(
        [sys.executable, str(example / "run_demo.py")],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=480,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "publish log (1 line(s)): the report was published once" in out, out[-4000:]
    assert (tmp_path / ".demo" / "research-report" / "EXECUTION_MARKER.json").exists()
