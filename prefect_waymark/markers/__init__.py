"""Execution markers: the boundary of each run, for machines (ledger event, EXECUTION_MARKER.json,
Prefect artifacts) and for people (TASKS.md, STATE.md, IMPLEMENTATION_LOG.md).

The public names load on first use: importing one module of the package loads none of the
others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
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

_WHERE = {
    "MarkerFileError": ".generated_files",
    "MARKER_FILE": ".marker_file",
    "read_marker_file": ".marker_file",
    "artifact_key": ".marker_record",
    "build_marker": ".marker_record",
    "marker_history": ".marker_record",
    "VIEW_FILES": ".run_markers",
    "markers_folder": ".run_markers",
    "preflight_markers": ".run_markers",
    "rebuild_marker_files": ".run_markers",
    "write_run_markers": ".run_markers",
}

__getattr__ = _lazy_exports(__name__, _WHERE)
