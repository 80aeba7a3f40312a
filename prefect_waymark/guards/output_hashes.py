"""sha256 of a step's declared outputs, recorded when it completes and compared on later runs.

Each output is found and read through :mod:`prefect_waymark._files.outputs`: a link leaving the
workdir, a FIFO, a device or a directory is refused with
:class:`~prefect_waymark.errors.OutputRefused`, never read."""

from __future__ import annotations

from pathlib import Path

from .._files.outputs import output_sha256, resolve_output

__all__ = ["ABSENT", "hash_output", "hash_outputs"]

ABSENT = "absent"


def hash_output(workdir: Path, rel: str, *, allow_outside: bool = False) -> str:
    """sha256 of one declared output (relative to the workdir); ``absent`` if nothing is there.
    Raises :class:`~prefect_waymark.errors.OutputRefused` for what is not the workdir's own
    regular file (``allow_outside``: the plan's ``allow_outside_workdir``)."""
    resolved = resolve_output(workdir, rel, allow_outside=allow_outside)
    if not resolved.exists:
        return ABSENT
    try:
        return output_sha256(resolved)
    except FileNotFoundError:  # removed since it was resolved
        return ABSENT


def hash_outputs(
    workdir: Path, outputs: list[str], *, allow_outside: bool = False
) -> dict[str, str]:
    """:func:`hash_output` of each declared output; the first refused one raises."""
    return {rel: hash_output(workdir, rel, allow_outside=allow_outside) for rel in outputs}
