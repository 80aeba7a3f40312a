"""``git`` refs: a repository path and a ref (branch, tag, ``HEAD``) → its commit sha."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from .base import RefConfig, ResolveContext, ResolverError

__all__ = ["GitRefConfig", "GitResolver"]


class GitRefConfig(RefConfig):
    """A commit-ish in a local git repository."""

    locator_field: ClassVar[str] = "repo"
    version_field: ClassVar[str | None] = "ref"

    kind: Literal["git"] = Field(default="git", description="Resolver kind.")
    repo: str = Field(default=".", description="Repository folder, relative to the workdir.")
    ref: str = Field(
        default="HEAD",
        pattern=r"^[^-\s][^\s]*$",
        description="Branch, tag or other commit-ish whose commit is the version.",
    )

    def describe(self) -> str:
        return f"git {self.repo}@{self.ref}"


class GitResolver:
    kind = "git"
    config_model = GitRefConfig

    async def read_version(self, config: GitRefConfig, ctx: ResolveContext) -> str:
        repo = Path(config.repo)
        repo = repo if repo.is_absolute() else ctx.workdir / repo
        if not repo.is_dir():
            raise ResolverError(f"{config.describe()}: no folder {repo}")
        env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
        proc = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            str(repo),
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            f"{config.ref}^{{commit}}",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            detail = err.decode(errors="replace").strip() or f"no commit {config.ref!r}"
            raise ResolverError(f"{config.describe()}: {detail}")
        return out.decode().strip()
