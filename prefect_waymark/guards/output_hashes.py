"""sha256 of a step's declared outputs, recorded when it completes and compared on later runs."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["ABSENT", "hash_outputs"]

ABSENT = "absent"


def hash_outputs(workdir: Path, outputs: list[str]) -> dict[str, str]:
    """sha256 of each declared output (relative to the workdir); ``absent`` for a missing file."""
    hashed: dict[str, str] = {}
    for rel in outputs:
        digest = hashlib.sha256()
        try:
            with open(workdir / rel, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            hashed[rel] = ABSENT
            continue
        hashed[rel] = digest.hexdigest()
    return hashed
