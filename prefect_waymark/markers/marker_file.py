"""``EXECUTION_MARKER.json``: one entry per run appended, never rewritten; checked against the
ledger before every append so a corrupt or hand-edited file is refused, and rebuildable.

The file keeps the newest :data:`MARKER_ENTRIES` entries; the whole history stays in the ledger
(``waymark marker PLAN --history``). A file that grew with every run cost every run its size to
read, check and write again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import LedgerMismatch
from ..ledger.base import LedgerReader
from ..ledger.urls import shown_url
from .generated_files import GENERATED_BY, MarkerFileError, atomic_write

__all__ = [
    "MARKER_ENTRIES",
    "MARKER_FILE",
    "marker_document",
    "read_marker_file",
    "verify_marker_file",
]

MARKER_FILE = "EXECUTION_MARKER.json"
#: How many runs ``EXECUTION_MARKER.json`` keeps: the newest; older ones are in the ledger only.
MARKER_ENTRIES = 50
_NOTE = f"{GENERATED_BY}: do not edit; rebuild with `waymark marker PLAN --rebuild`"


_ORDER = (
    "executed_at",
    "executor",
    "executed_steps",
    "outputs",
    "next_start",
    "result",
    "started_from",
    "skipped_count",
    "failed_steps",
    "receipts",
    "state_refs",
    "contract",
    "workdir",
    "flow_run_id",
    "run_id",
    "started_at",
    "plan_id",
    "marker_file",
)


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """The seed's field order first (executed_at, executor, executed_steps, outputs, ...)."""
    first = {k: entry[k] for k in _ORDER if k in entry}
    return {**first, **{k: v for k, v in entry.items() if k not in first}}


def marker_document(
    plan_id: str, history: list[dict[str, Any]], closed: dict[str, Any] | None = None
) -> str:
    """The file's text; a closed plan's (``waymark close``) says so and that nothing is next."""
    doc: dict[str, Any] = {"plan_id": plan_id}
    if closed is not None:
        doc["closed"] = {k: closed.get(k) for k in ("at", "by", "reason", "forced")}
        doc["next_start"] = {"step": None, "why": "the plan is closed"}
    doc["execution_history"] = [_ordered(e) for e in history[-MARKER_ENTRIES:]]
    body = json.dumps(doc, indent=2)
    # The first line says the file is generated (and is how waymark recognises its own file).
    return '{"generated_by": ' + json.dumps(_NOTE) + "," + body[1:] + "\n"


def read_marker_file(path: Path) -> dict[str, Any] | None:
    """The parsed file, ``None`` if absent; :class:`MarkerFileError` if corrupt."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MarkerFileError(
            f"{path}: corrupt marker file (JSON error at line {exc.lineno}: {exc.msg}); "
            "nothing was written. Rebuild it from the ledger with `waymark marker PLAN --rebuild`."
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("execution_history"), list):
        raise MarkerFileError(
            f"{path}: not a marker file (expected an object with an execution_history list); "
            "rebuild it with `waymark marker PLAN --rebuild`."
        )
    return doc


def _recorded_ledger(history: list[Any]) -> tuple[str, str] | None:
    """The identity and (password-masked) URL of the ledger the file's last entry that names
    one was written with; ``None`` for files of releases before ledger identities."""
    for entry in reversed(history):
        if isinstance(entry, dict) and entry.get("ledger_id"):
            return str(entry["ledger_id"]), str(entry.get("ledger") or "?")
    return None


def verify_marker_file(
    path: Path,
    plan_id: str,
    ledger_history: list[dict[str, Any]],
    *,
    ledger: LedgerReader | None = None,
    plan_file: str = "PLAN_FILE",
) -> None:
    """Refuse a file whose history is not exactly the ledger's (edited by hand, or corrupt), or
    that was written with another ledger than ``ledger`` (by the ledgers' identities).

    ``ledger_history``: the ledger's newest markers, oldest first (a window of the history, at
    least :data:`MARKER_ENTRIES` long, or all of it). The file's entries are compared with the
    window's, aligned on the run of the file's last entry (a file may lag the ledger by the runs
    whose file write a crash cut off); entries older than the window go at the next write."""
    doc = read_marker_file(path)
    if doc is None:
        return
    if doc.get("plan_id") != plan_id:
        # Not "use --markers-dir": for a renamed plan that starts it afresh under the new id,
        # every step and action included. Nothing was written; say what is safe.
        old = doc.get("plan_id")
        raise MarkerFileError(
            f"{path}: this folder's marker belongs to plan {old!r}, not {plan_id!r}; nothing "
            "was written. Its history and action receipts are recorded under that id, and a new "
            "id would run every step (and action) again. If you renamed the plan, carry them "
            f"over: `waymark rename-plan {plan_file} --from {old}`, or set `plan_id: {old}` "
            "back in the plan file. If this is really another plan, give it a folder of its own "
            "(copy the plan file there)."
        )
    history = doc["execution_history"]
    recorded = _recorded_ledger(history)
    if recorded is not None and ledger is not None and ledger.ledger_id not in (None, recorded[0]):
        raise LedgerMismatch(
            f"{path}: this folder's plan {plan_id!r} was run on ledger {recorded[0]} "
            f"({recorded[1]}), but this run opened ledger {ledger.ledger_id} "
            f"({shown_url(ledger.url)}); nothing ran. Running here would start the plan afresh "
            "on this ledger, actions included. Point --ledger (or $WAYMARK_LEDGER_URL) at the "
            "plan's ledger, or pin it in the plan file (`ledger:`). If this ledger was restored "
            "from an export of that one, restore it with its identity instead, into a ledger "
            "with no history: `waymark restore <export file> --ledger <new ledger URL> "
            "--keep-identity`."
        )
    mine_all, offset = _aligned(ledger_history, history)
    for i, (mine, theirs) in enumerate(zip(mine_all, history[offset:], strict=False), offset):
        if mine != theirs:
            fields = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise MarkerFileError(
                f"{path}: execution_history[{i}] differs from the ledger "
                f"(fields: {', '.join(fields)}); the file was edited by hand. Nothing was "
                "written; rebuild it from the ledger with `waymark marker PLAN --rebuild`."
            )
    if history and not ledger_history:
        named = f" on ledger {recorded[0]} ({recorded[1]})" if recorded is not None else ""
        raise MarkerFileError(
            f"{path}: records {len(history)} run(s) of plan {plan_id!r}{named}, but this ledger "
            "has none: the plan's ledger is elsewhere or gone; nothing was written. Point "
            "`--ledger` (or "
            "$WAYMARK_LEDGER_URL) at the plan's ledger; running on an empty one would run every "
            "step, actions included, again."
        )
    if len(history) - offset > len(mine_all):
        raise MarkerFileError(
            f"{path}: has {len(history)} entries, the ledger {len(ledger_history)}: the file "
            "belongs to another ledger (use that ledger, or --markers-dir for this one), or it was "
            "edited; if this ledger is the plan's, rebuild it with `waymark marker PLAN --rebuild`."
        )


def _aligned(
    ledger_history: list[dict[str, Any]], history: list[Any]
) -> tuple[list[dict[str, Any]], int]:
    """The ledger's markers the file's entries from ``offset`` on should equal, and that offset:
    the window up to the run of the file's last entry, its tail as long as the file (the
    file's older entries, beyond a full window, are not compared). A last entry whose run is
    not in the window is compared from the window's start, as if the file began there."""
    last = history[-1] if history else None
    run_id = last.get("run_id") if isinstance(last, dict) else None
    ids = [m.get("run_id") for m in ledger_history]
    if run_id is None or run_id not in ids:
        return ledger_history, 0
    end = len(ids) - ids[::-1].index(run_id)
    mine = ledger_history[:end]
    if len(history) <= len(mine):
        return mine[len(mine) - len(history) :], 0
    if len(ledger_history) < MARKER_ENTRIES:  # the ledger's whole history: the file has more
        return mine, 0
    return mine, len(history) - len(mine)


def write_marker_file(
    path: Path, plan_id: str, history: list[dict[str, Any]], closed: dict[str, Any] | None = None
) -> None:
    atomic_write(path, marker_document(plan_id, history, closed))
