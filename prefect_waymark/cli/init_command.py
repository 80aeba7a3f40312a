"""``waymark init``: write the entrypoint file a git-source deployment loads (``waymark_flow.py``),
or, with ``--agent``, wire an agent harness to a plan (:mod:`prefect_waymark.hooks.harness`).

``waymark deploy PLAN --pool P --source GIT_URL`` deploys ``waymark_flow.py:run_plan``: each flow
run clones the repository and Prefect loads the flow from that file at the repository's root.
Someone else's file of that name is never overwritten.
"""

from __future__ import annotations

import importlib.util
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from ._common import fail, load_or_exit

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


_DEFAULT_EXECUTOR = {"claude-code": "claude", "codex": "codex", "generic": "agent"}


def init(
    folder: Annotated[
        Path,
        typer.Argument(
            help="Repository root to write waymark_flow.py in, or the project to wire an "
            "agent harness into (default: here)."
        ),
    ] = Path("."),
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Wire this agent harness to the plan instead: claude-code (.claude/settings."
            "json hooks and env, CLAUDE.md), codex (AGENTS.md) or generic (AGENTS.md).",
            show_default=False,
        ),
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option("--plan", help="With --agent: the plan file (default: FOLDER/plan.yaml)."),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            help="With --agent: the name the agent checks in as (default: claude, codex or agent).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write waymark_flow.py, the entrypoint a `waymark deploy --source` deployment loads; or,
    with --agent, wire an agent harness to a plan.

    Commit and push waymark_flow.py at the repository's root; an existing one is left as it is.
    With --agent the harness's files are merged with what is there (nothing of yours is
    removed) and a second run changes nothing; each file and what changed is printed.
    """
    from ..flows.deployment import ENTRY_FILE, ENTRY_FILE_TEXT

    if not folder.is_dir():
        fail(f"{folder}: no such folder")
    if agent is not None:
        _wire_agent(folder, agent, plan, executor)
        return
    if plan is not None or executor is not None:
        fail("--plan and --executor go with --agent (waymark init FOLDER --agent claude-code)")
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


def _wire_agent(folder: Path, agent: str, plan: Path | None, executor: str | None) -> None:
    """``waymark init --agent``: the harness's files for the plan, merged and written."""
    from ..errors import HarnessFileError
    from ..hooks.harness import HARNESSES, apply, harness_changes
    from .agent_commands import valid_executor

    if agent not in HARNESSES:
        fail(f"--agent {agent[:100]!r}: expected one of {', '.join(HARNESSES)}")
    project = folder.resolve()
    path = plan if plan is not None else folder / "plan.yaml"
    if not path.is_file():
        what = "--plan" if plan is not None else f"no plan.yaml in {folder}; give --plan:"
        fail(f"{what} {path}: no such file")
    load_or_exit(path)  # a plan with problems is wired to nothing
    target = path.resolve()
    shown = str(target.relative_to(project)) if target.is_relative_to(project) else str(target)
    name = valid_executor(executor or _DEFAULT_EXECUTOR[agent], "--executor")
    try:
        changes = harness_changes(project, agent, shown, name, _waymark(project))
        apply(changes)
    except (HarnessFileError, OSError) as exc:
        fail(f"{exc}; nothing was written" if isinstance(exc, HarnessFileError) else str(exc))
    for change in changes:
        print(f"{change.path}: {change.what}")
    if agent != "generic" and importlib.util.find_spec("mcp") is None:
        print("  note: the waymark MCP server needs the SDK: pip install 'prefect-waymark[mcp]'")
    if agent == "generic":
        print(
            "  your harness's hooks: `waymark hook generic EVENT --json` (stdin: the event; "
            "events SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop)"
        )


def _waymark(project: Path) -> str:
    """How the harness runs this waymark: ``waymark`` if that is the one on PATH, else its
    path (under the project: from ``$CLAUDE_PROJECT_DIR``, which Claude Code sets)."""
    here = Path(sys.executable).with_name("waymark")
    if not here.exists():
        return "waymark"
    found = shutil.which("waymark")
    if found is not None and Path(found).resolve() == here.resolve():
        return "waymark"
    if here.is_relative_to(project):
        return f'"$CLAUDE_PROJECT_DIR"/{shlex.quote(str(here.relative_to(project)))}'
    return shlex.quote(str(here))
