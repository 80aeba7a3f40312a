"""Helpers for tests: run the real ``waymark`` command, write plans."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from prefect_waymark import Plan

WAYMARK = str(Path(sys.executable).parent / "waymark")


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``waymark`` command in a real subprocess."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [WAYMARK, *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_plan(folder: Path, doc: dict[str, Any] | Plan, name: str = "plan.yaml") -> Path:
    """Write a plan file: a plan document or a :class:`~prefect_waymark.Plan`."""
    if not isinstance(doc, dict):
        doc = doc.to_dict()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
