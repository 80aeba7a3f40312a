"""Where step results persist (any Prefect result storage, default ``<workdir>/.waymark/results``)
and the declared outputs kept beside them: :mod:`.storage`, :mod:`.outputs`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .outputs import OutputStore
    from .storage import ResultAccess, StorageSpec, default_result_storage

__all__ = ["OutputStore", "ResultAccess", "StorageSpec", "default_result_storage"]

_WHERE = {
    "OutputStore": ".outputs",
    "ResultAccess": ".storage",
    "StorageSpec": ".storage",
    "default_result_storage": ".storage",
}


__getattr__ = _lazy_exports(__name__, _WHERE)
