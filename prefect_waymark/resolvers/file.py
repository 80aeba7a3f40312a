"""``file`` refs: a path relative to the workdir → sha256 of its bytes (missing: ``absent``)."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from .base import ABSENT, RefConfig, ResolveContext, ResolverError

__all__ = ["FileRefConfig", "FileResolver", "file_version"]


class FileRefConfig(RefConfig):
    """A file whose content is authoritative state."""

    locator_field: ClassVar[str] = "path"

    kind: Literal["file"] = Field(default="file", description="Resolver kind.")
    path: str = Field(min_length=1, description="File path, relative to the workdir.")

    def describe(self) -> str:
        return f"file {self.path}"


def file_version(path: Path) -> str:
    """``sha256:<hex>`` of the file, or ``absent``."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except FileNotFoundError:
        return ABSENT
    except IsADirectoryError:
        raise ResolverError(f"{path} is a folder; a file ref needs a file") from None
    return "sha256:" + digest.hexdigest()


class FileResolver:
    kind = "file"
    config_model = FileRefConfig

    async def read_version(self, config: FileRefConfig, ctx: ResolveContext) -> str:
        path = Path(config.path)
        return await asyncio.to_thread(
            file_version, path if path.is_absolute() else ctx.workdir / path
        )
