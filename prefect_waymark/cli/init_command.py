"""``waymark init``: write the entrypoint file a git-source deployment loads (``waymark_flow.py``).

``waymark deploy PLAN --pool P --source GIT_URL`` deploys ``waymark_flow.py:run_plan``: each flow
run clones the repository and Prefect loads the flow from that file at the repository's root.
Someone else's file of that name is never overwritten.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Annotated

import typer

from ._common import fail

__all__ = ["git_root", "init", "is_entry_file"]


def is_entry_file(path: Path) -> bool:
    """True if ``path`` holds the text ``waymark init`` writes (line endings and trailing blanks
    aside)."""
    from ..flows.deployment import ENTRY_FILE_TEXT

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return _lines(text) == _lines(ENTRY_FILE_TEXT)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


def git_root(folder: Path, *, need_git: bool = True) -> Path | None:
    """The root of the git checkout ``folder`` is in (``git rev-parse --show-toplevel``), or
    ``None`` if it is in none. Without git installed: exit 2 (``need_git``), else ``None``."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except FileNotFoundError:
        if not need_git:
            return None
        fail("git is not installed (or not on PATH); a git-source deployment needs it")
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return Path(proc.stdout.strip()).resolve()


def init(
    folder: Annotated[
        Path,
        typer.Argument(help="Repository root to write waymark_flow.py in (default: here)."),
    ] = Path("."),
) -> None:
    """Write waymark_flow.py, the entrypoint a `waymark deploy --source` deployment loads.

    Commit and push it at the repository's root. An existing waymark_flow.py is left as it is.
    """
    from ..flows.deployment import ENTRY_FILE, ENTRY_FILE_TEXT

    if not folder.is_dir():
        fail(f"{folder}: no such folder")
    target = folder / ENTRY_FILE
    if target.exists() or target.is_symlink():
        if is_entry_file(target):
            print(f"{target} already exists (waymark's entrypoint file): nothing to do")
            return
        fail(
            f"{target} exists and is not waymark's entrypoint file; left as it is: move it "
            f"away and run `waymark init` again, or give another folder"
        )
    try:
        with target.open("x", encoding="utf-8") as out:  # never replaces a file
            out.write(ENTRY_FILE_TEXT)
    except OSError as exc:
        fail(f"{target}: cannot write it ({exc.strerror or exc})")
    print(f"wrote {target}: the entrypoint of `waymark deploy --source` deployments")
    root = git_root(folder, need_git=False)
    if root is None:
        print("  note: this folder is not in a git checkout; put the file at the repository's root")
    elif root != folder.resolve():
        print(f"  note: the checkout's root is {root}; --source looks for {ENTRY_FILE} there")
    print("  commit and push it, then: waymark deploy PLAN --pool POOL --source GIT_URL")
