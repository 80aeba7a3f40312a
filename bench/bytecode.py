"""Compile the package's bytecode before timing whole processes.

A ``pip install -e`` checkout has no ``__pycache__`` until Python writes one, and where
``PYTHONDONTWRITEBYTECODE`` is set (this project's machines set it) it never does: every
``waymark`` process would compile ~200 modules from source (~0.15-0.3 s) while Prefect's
installed modules load cached bytecode. A user's install has its bytecode, so the benchmarks
compile it once first (``compileall`` writes it even where Python itself would not).
"""

from __future__ import annotations

import compileall
from pathlib import Path

import prefect_waymark


def compile_package() -> None:
    """Write ``__pycache__`` for every module of ``prefect_waymark`` (quietly)."""
    compileall.compile_dir(str(Path(prefect_waymark.__file__).parent), quiet=1)
