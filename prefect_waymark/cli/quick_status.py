"""``waymark status PLAN`` (the table) and ``--json`` without pydantic, typer or PyYAML, for a
plan status has read before: an agent that polls its plan, or a person who looks, pays Python's
start-up and little more.

:func:`quick_status` answers only the common case and says ``None`` for anything else, which
the full command then answers (and reports, if it is a mistake). It answers when the arguments
are the plan, at most ``--json`` and at most ``--workdir``; the plan's status digest is kept for
this very file text, path and code (:mod:`..plan.status_digest`, kept by an earlier ``waymark
status`` of the plan); the plan pins no ledger and ``$WAYMARK_LEDGER_URL`` is unset (the ledger
is the default SQLite file); and no deployment runs the plan (its schedule is read from the
Prefect server). It prints what the full command prints, byte for byte, from the same
functions: the view (:func:`..ledger.progress_view.build_view`), the document
(:mod:`.status_document`) or the table (:func:`.status_output.print_table`) and the exit code
(:func:`.status_extras.status_exit_code`); ``tests/cli/test_quick_status.py`` and
``tests/cli/test_quick_status_table.py`` compare the two on many ledgers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import LedgerNotFound
from ..ledger import LEDGER_ENV, default_ledger_url
from ..ledger.progress_view import build_view
from ..ledger.sqlite_reader import SqliteReader
from ..plan.cache_files import read_regular_plan
from ..plan.status_digest import cached_digest
from .status_document import status_document, status_json
from .status_extras import ledger_extras, status_exit_code

__all__ = ["quick_status"]


def _arguments(args: list[str]) -> tuple[str, str | None, bool] | None:
    """``(plan, workdir, as_json)`` from ``status PLAN [--json] [--workdir DIR]`` in any order,
    else ``None``."""
    if not args or args[0] != "status":
        return None
    plan: str | None = None
    workdir: str | None = None
    as_json = False
    rest = iter(args[1:])
    for arg in rest:
        if arg == "--json" and not as_json:
            as_json = True
        elif arg == "--workdir" and workdir is None:
            workdir = next(rest, None)
            if workdir is None:
                return None
        elif arg.startswith("--workdir=") and workdir is None:
            workdir = arg.removeprefix("--workdir=")
        elif arg.startswith("-") or plan is not None:
            return None  # another option, or a second argument: the full command's to answer
        else:
            plan = arg
    if plan is None or workdir == "":
        return None
    return plan, workdir, as_json


def quick_status(args: list[str]) -> int | None:
    """Print ``waymark status PLAN``'s table or ``--json`` document and return its exit code, or
    return ``None`` (having printed nothing) when the full command must answer."""
    found = _arguments(args)
    if found is None or os.environ.get(LEDGER_ENV):
        return None
    given, workdir, as_json = found
    path = Path(given)
    text = read_regular_plan(path)  # a pipe, a huge or odd file: the full command reads it
    if text is None:
        return None
    try:
        digest = cached_digest(str(path), str(path.resolve()), text)
    except (OSError, RuntimeError):  # resolve(): a loop of links
        return None
    if digest is None:
        return None
    if workdir is not None and not Path(workdir).is_dir():
        return None  # the full command says so
    base = Path(workdir) if workdir is not None else digest.base_dir
    try:
        reader = SqliteReader(default_ledger_url(base.resolve()))
    except LedgerNotFound:
        reader = None  # nothing recorded yet: every step pending
    except Exception:  # noqa: BLE001 - a newer, locked or damaged ledger: the full command says
        return None
    extra: dict[str, object] = {}
    states = {}
    if reader is not None:
        try:
            states = reader.plain_step_states(digest.plan_id)
            extras, deployment_id = ledger_extras(
                lambda kinds: reader.plain_last_event(digest.plan_id, kinds)
            )
        except Exception:  # noqa: BLE001 - an odd ledger: the full command answers, or says why
            return None
        finally:
            reader.close()
        if deployment_id:
            return None  # its schedule and next run come from the Prefect server
        extra.update(extras)
    try:
        view = build_view(digest, states)
        text = status_json(status_document(view, extra)) if as_json else None
    except Exception:  # noqa: BLE001 - a digest and a ledger that do not fit: the full command
        return None
    try:
        if text is not None:
            print(text, flush=True)
        else:
            from .status_output import print_table  # rich: not needed by --json

            print_table(view, extra)
    except BrokenPipeError:  # `| head`: as the full command (click), quietly, exit 1
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
        return 1
    return status_exit_code(view, extra)
