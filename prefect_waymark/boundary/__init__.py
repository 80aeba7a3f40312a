"""The execution boundary of a run (the marker essay: a marker is the boundary of one
execution): the ledger sequence range, the git commit before and after and whether the tree was
dirty, and the workdir files the run created, modified, deleted or used only temporarily beyond
its declared outputs — and what changed between the last run and this one that no run made.

- :mod:`.ignore`: what a manifest leaves out (``.waymark/``, ``.git``, marker files, ``ignore:``);
- :mod:`.manifest`: a workdir's files with size, mtime and sha256 (hashing only what changed);
- :mod:`.compare`: two manifests compared;
- :mod:`.git`: the repository's commit and dirtiness;
- :mod:`.store`: the last run's end manifest in ``.waymark/manifest-<plan_id>.json``;
- :mod:`.tracker`: :class:`RunBoundary`, taken at run start, after each step, at run end.
"""

from __future__ import annotations

from .tracker import RunBoundary

__all__ = ["RunBoundary"]
