"""Which plan, executor and reminder interval a hook works with: options, else environment.

``--plan`` / ``$WAYMARK_PLAN`` (a relative path is taken from ``$CLAUDE_PROJECT_DIR``, the
project root Claude Code exports to its hooks, else from the event's ``cwd``, else from the
hook's own working directory), ``--executor`` / ``$WAYMARK_EXECUTOR`` (else ``user@host``,
what ``waymark start`` records without one, so the two agree), ``--every`` /
``$WAYMARK_HOOK_EVERY`` (default 20; 0 turns reminders off), ``--ledger`` (else the plan's
pinned ledger, ``$WAYMARK_LEDGER_URL`` or ``<workdir>/.waymark/ledger.db``) and ``--workdir``
(else the plan file's folder). A bad value never stops the hook: it is left out, and said on
stderr.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..ledger.identity import default_executor

__all__ = ["DEFAULT_EVERY", "HookSettings", "resolve_settings"]

DEFAULT_EVERY = 20
PLAN_ENV = "WAYMARK_PLAN"
EXECUTOR_ENV = "WAYMARK_EXECUTOR"
EVERY_ENV = "WAYMARK_HOOK_EVERY"
PROJECT_ENV = "CLAUDE_PROJECT_DIR"
# The names ``waymark start --executor`` accepts (cli/agent_commands.py).
_EXECUTOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/-]{0,99}$")


@dataclass
class HookSettings:
    """A hook's configuration, resolved; ``notices`` says what was left out and why."""

    plan: str | None
    executor: str | None
    every: int
    ledger: str | None = None
    workdir: Path | None = None
    project_dir: str | None = None
    notices: list[str] = field(default_factory=list)

    def plan_path(self, cwd: str | None) -> Path | None:
        """The plan file: a relative ``plan`` from the project root, else from ``cwd``."""
        if not self.plan:
            return None
        p = Path(self.plan).expanduser()
        if not p.is_absolute():
            base = self.project_dir or cwd or os.getcwd()
            p = Path(base) / p
        return p.resolve()


def _every(raw: str | None, source: str, notices: list[str]) -> int | None:
    if raw is None or not raw.strip():
        return None
    try:
        n = int(raw.strip())
    except ValueError:
        n = -1
    if n < 0:
        notices.append(f"{source} {raw[:40]!r}: expected a number >= 0; using {DEFAULT_EVERY}")
        return None
    return n


def resolve_settings(
    *,
    plan: str | None = None,
    executor: str | None = None,
    every: str | None = None,
    ledger: str | None = None,
    workdir: str | None = None,
    env: Mapping[str, str] | None = None,
) -> HookSettings:
    """The settings from the options given, else from ``env`` (default: the process's)."""
    env = os.environ if env is None else env
    notices: list[str] = []
    n = _every(every, "--every", notices)
    if n is None and every is None:
        n = _every(env.get(EVERY_ENV), f"${EVERY_ENV}", notices)
    who = executor or env.get(EXECUTOR_ENV) or default_executor()
    if not _EXECUTOR_RE.fullmatch(who):
        notices.append(
            f"executor {who[:100]!r}: expected letters, digits and . _ @ / - (at most 100); "
            "the hook answers without an executor"
        )
        who_ok: str | None = None
    else:
        who_ok = who
    wd: Path | None = None
    if workdir:
        wd = Path(workdir).expanduser()
        if not wd.is_dir():
            notices.append(f"--workdir {workdir}: no such folder; using the plan's folder")
            wd = None
    return HookSettings(
        plan=plan or env.get(PLAN_ENV) or None,
        executor=who_ok,
        every=DEFAULT_EVERY if n is None else n,
        ledger=ledger or None,
        workdir=wd.resolve() if wd is not None else None,
        project_dir=env.get(PROJECT_ENV) or None,
        notices=notices,
    )
