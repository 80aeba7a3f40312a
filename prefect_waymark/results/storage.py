"""Where step results persist (default ``<workdir>/.waymark/results``) and how they are read back
without a Prefect task run (a skipped step's value for a downstream step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from prefect.blocks.core import Block
from prefect.filesystems import LocalFileSystem, WritableFileSystem
from prefect.results import ResultStore

from .outputs import OutputStore

__all__ = [
    "ResultAccess",
    "StorageSpec",
    "as_storage",
    "default_result_storage",
    "describe_storage",
]


StorageSpec = Union[Path, str, WritableFileSystem]  # noqa: UP007 - a runtime alias on 3.10


def default_result_storage(workdir: Path) -> Path:
    """``<workdir>/.waymark/results``; Prefect turns a path into a local file system."""
    path = workdir / ".waymark" / "results"
    path.mkdir(parents=True, exist_ok=True)
    return path


def describe_storage(storage: StorageSpec | None, workdir: Path) -> str:
    """The storage in words, for messages: a folder path, a block slug, or the default."""
    if storage is None:
        return f"{workdir / '.waymark' / 'results'} (this folder's own; no `results:` pinned)"
    if isinstance(storage, (str, Path)):
        return str(storage)
    slug = getattr(storage, "_block_document_name", None)
    return str(slug) if slug else type(storage).__name__


def as_storage(storage: StorageSpec) -> StorageSpec:
    """A string that is an absolute path is that folder (a ``Path``, which Prefect reads as a
    local file system); other strings stay block slugs."""
    if isinstance(storage, str) and storage.startswith("/"):
        return Path(storage)
    return storage


def _resolve(storage: StorageSpec) -> WritableFileSystem:
    if isinstance(storage, Path) or (isinstance(storage, str) and storage.startswith("/")):
        return LocalFileSystem(basepath=str(storage))  # a folder (e.g. a shared mount)
    if isinstance(storage, str):
        block = Block.load(storage)
        if not isinstance(block, WritableFileSystem):
            raise TypeError(f"result storage {storage!r} is not a writable file system block")
        return block
    return storage


class ResultAccess:
    """Reads persisted step results by key from any Prefect result storage."""

    def __init__(self, storage: StorageSpec, *, keep_outputs: bool = False) -> None:
        self.spec = storage
        self.storage = _resolve(storage)
        #: Declared outputs kept beside the results (given storage, not the workdir default).
        self.outputs = OutputStore(self.storage) if keep_outputs else None
        self._store = ResultStore(result_storage=self.storage)
        self._local = (
            Path(self.storage.basepath)
            if isinstance(self.storage, LocalFileSystem) and self.storage.basepath
            else None
        )

    def known_missing(self, key: str) -> str | None:
        """For local storage, the missing file's path if the result is gone; else ``None``.

        Remote storage is not probed up front (one call per step); it is checked on read.
        """
        if self._local is None:
            return None
        path = self._local / key
        return None if path.exists() else str(path)

    def read(self, key: str) -> Any:
        return self._store.read(key).result
