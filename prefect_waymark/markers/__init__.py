"""Execution markers: the boundary of each run, for machines (ledger event, EXECUTION_MARKER.json,
Prefect artifacts) and for people (TASKS.md, STATE.md, IMPLEMENTATION_LOG.md)."""

from __future__ import annotations

from .generated_files import MarkerFileError
from .marker_file import MARKER_FILE, read_marker_file
from .marker_record import artifact_key, build_marker, marker_history
from .run_markers import (
    VIEW_FILES,
    markers_folder,
    preflight_markers,
    rebuild_marker_files,
    write_run_markers,
)

__all__ = [
    "MARKER_FILE",
    "VIEW_FILES",
    "MarkerFileError",
    "artifact_key",
    "build_marker",
    "markers_folder",
    "marker_history",
    "preflight_markers",
    "read_marker_file",
    "rebuild_marker_files",
    "write_run_markers",
]
