"""Declared outputs kept beside the persisted results, content-addressed, so a plan's state
reaches beyond one folder.

When a run is given result storage (``--results SLUG``, ``result_storage=`` — a shared
``LocalFileSystem``, a ``RemoteFileSystem``, S3 through prefect-aws: any Prefect
``WritableFileSystem``), each completed step's declared outputs are written there under their
sha256 (``waymark-outputs/<aa>/<sha256>``), next to the results. A later run in a workdir that
lacks one of them — a fresh ``git clone`` per run, another machine — restores it from there, the
hash checked before the file is put in place, instead of stopping for review; so does a folder
whose copy is an older version that was stored too (the step was made again in another folder
since). An output that is present and different from every stored version is a person's edit:
that stays a review stop.

Only the workdir's own files are kept and restored (:mod:`prefect_waymark._files.outputs`): an
output outside the workdir (``allow_outside_workdir: true``) is hashed where it is but never
copied into the shared storage — :class:`Kept` names it and the run log and ``waymark done``
say so — and a restore never writes through a symbolic link or onto a FIFO, a device or a folder.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._files.outputs import open_output, resolve_output
from ..errors import OutputRefused

__all__ = ["Kept", "OutputStore", "output_key"]

#: Why an output outside the workdir was not kept, as the run log and ``waymark done`` say it.
OUTSIDE = (
    "outside the workdir (allow_outside_workdir): hashed where it is, never copied into the "
    "shared result storage"
)


@dataclass
class Kept:
    """What :meth:`OutputStore.put` did: the outputs stored, and those left out (path -> why)."""

    stored: list[str] = field(default_factory=list)
    not_kept: dict[str, str] = field(default_factory=dict)


def output_key(sha256: str) -> str:
    """Where an output of this content lives in the storage."""
    return f"waymark-outputs/{sha256[:2]}/{sha256}"


def _call(fs: Any, name: str, *args: Any) -> Any:
    """``fs.<name>(*args)`` from sync code: Prefect's file systems are async under the hood."""
    from ..resolvers.resolve import run_sync

    afn = getattr(fs, f"a{name}", None)
    if afn is not None:
        return run_sync(afn(*args))
    result = getattr(fs, name)(*args)
    return run_sync(result) if inspect.iscoroutine(result) else result


class OutputStore:
    """Puts and restores declared outputs in a Prefect ``WritableFileSystem``."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage
        #: Set when reading the storage failed for another reason than a missing entry.
        self.unreachable: str | None = None

    def put(self, workdir: Path, outputs: dict[str, str], *, allow_outside: bool = False) -> Kept:
        """Store each output (relative path -> recorded sha256). A file that changed since it
        was hashed is not stored under the old hash; one outside the workdir (the plan allows
        outside paths) is never stored, and :attr:`Kept.not_kept` says why."""
        kept = Kept()
        for rel, sha in sorted(outputs.items()):
            try:
                resolved = resolve_output(workdir, rel, allow_outside=allow_outside)
                if not resolved.inside:
                    kept.not_kept[rel] = OUTSIDE
                    continue
                if not resolved.exists:
                    continue
                with open_output(resolved) as fh:
                    data = fh.read()
            except (OSError, OutputRefused):
                continue
            if hashlib.sha256(data).hexdigest() != sha:
                continue
            _call(self.storage, "write_path", output_key(sha), data)
            kept.stored.append(rel)
        return kept

    def holds(self, sha: str) -> bool:
        """Whether an output of this content was stored: a version waymark recorded once (an
        outdated copy of a step's output, not a person's edit)."""
        return self.unreachable is None and self._read(sha) is not None

    def _read(self, sha: str) -> bytes | None:
        """The stored content of hash ``sha``; None if not stored, or the storage failed."""
        try:
            data = _call(self.storage, "read_path", output_key(sha))
        except (FileNotFoundError, KeyError, ValueError):
            # Not stored (LocalFileSystem says "does not exist" with a ValueError): the step
            # completed before storage was given.
            return None
        except Exception as exc:  # noqa: BLE001 - unreachable: say so once, try no more
            self.unreachable = f"{type(exc).__name__}: {exc}"
            return None
        if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != sha:
            return None
        return data

    def restore(self, workdir: Path, rel: str, sha: str) -> bool:
        """Write ``rel`` from storage if its content there hashes to ``sha``; True if done.

        Never writes outside the workdir (a ``..`` path, an absolute one, a symlinked folder),
        never through a symbolic link nor onto a FIFO, a device or a folder, never raises for a
        file-system problem; after the storage failed once (unreachable), later outputs of the
        run are not tried again: each is then a stop for review."""
        if self.unreachable is not None:
            return False
        try:
            resolved = resolve_output(workdir, rel)
        except OutputRefused:
            return False  # outside the workdir, or not a file: not restored, a review stop
        if not resolved.inside or resolved.path.is_symlink():
            return False  # a link there: never written through, never cut
        target = resolved.path.parent.resolve() / resolved.path.name
        data = self._read(sha)
        if data is None:
            return False
        from .._files.atomic import atomic_write

        try:
            atomic_write(target, data)
        except OSError:
            return False
        return True
