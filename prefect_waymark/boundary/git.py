"""The git side of a run's boundary: the commit a workdir's repository is at, and whether the
tree is dirty within the workdir (waymark's own files and the plan's ignore globs left out)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .ignore import Ignore

__all__ = ["GitState", "git_state"]

_TIMEOUT = 20.0


@dataclass(frozen=True)
class GitState:
    root: str
    commit: str | None  # None: a repository without commits yet
    dirty: bool
    dirty_paths: int  # entries of `git status --porcelain` within the workdir, left-outs aside


def _git(workdir: Path, *args: str) -> subprocess.CompletedProcess[str] | str:
    """The finished command, or why it could not run."""
    exe = shutil.which("git")
    if exe is None:
        return "git is not installed (not on PATH)"
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        return subprocess.run(
            [exe, "-C", str(workdir), *args],
            capture_output=True,
            text=True,
            errors="backslashreplace",  # a file name that is not UTF-8: counted all the same
            timeout=_TIMEOUT,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"git {args[0]}: {exc}"


def _porcelain_paths(out: str) -> list[str]:
    """Paths in ``git status --porcelain -z`` output (a rename's source skipped)."""
    paths: list[str] = []
    items = out.split("\0")
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if len(item) < 4:
            continue
        code, path = item[:2], item[3:]
        paths.append(path)
        if "R" in code or "C" in code:
            i += 1  # the next item is the original path
    return paths


def git_state(workdir: Path, ignore: Ignore) -> tuple[GitState | None, str | None]:
    """The repository's state (a workdir inside a repository counts), or ``None`` outside one;
    and, when git cannot tell (git missing, a command failed), why."""
    top = _git(workdir, "rev-parse", "--show-toplevel")
    if isinstance(top, str):
        return None, top
    if top.returncode != 0:
        if "not a git repository" in top.stderr:
            return None, None
        return None, f"git rev-parse: {top.stderr.strip() or top.returncode}"
    root = Path(top.stdout.strip())
    head = _git(workdir, "rev-parse", "--verify", "-q", "HEAD")
    commit = None
    if not isinstance(head, str) and head.returncode == 0 and head.stdout.strip():
        commit = head.stdout.strip()
    status = _git(workdir, "status", "--porcelain", "-z", "--", ".")
    if isinstance(status, str):
        return None, status
    if status.returncode != 0:
        return None, f"git status: {status.stderr.strip() or status.returncode}"
    try:
        inside = workdir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        inside = "."
    prefix = "" if inside in ("", ".") else inside + "/"
    count = 0
    for path in _porcelain_paths(status.stdout):
        rel = path[len(prefix) :] if prefix and path.startswith(prefix) else path
        if not ignore.path(rel.rstrip("/")):
            count += 1
    return GitState(root=str(root), commit=commit, dirty=count > 0, dirty_paths=count), None
