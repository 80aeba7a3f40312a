"""Renaming a plan (or one of its steps) carries its history and receipts over to the new id,
in one transaction.

Events are append-only, so the old plan's events are copied under the new id (in their order,
with their runs, times and data), the projection of the new id is folded from the copies, the
receipt rows move to the new id **with their keys** (an action claimed as ``old/step/action``
keeps that key: :class:`~prefect_waymark.tasks.actions.Action` reuses a step's recorded key), and
a ``plan_renamed`` event closes the old id (a run under it is refused from then on) and opens the
new one. Refused while a run holds one of the old plan's branches, or when the new id already
has a history in this ledger.

Renaming steps (:meth:`PlanRenames.rename_steps`: ``waymark rename-step``, or a rename a run,
``next`` or a check-in found, :mod:`prefect_waymark.guards.plan_edits`) appends a
``step_renamed`` event to the new id holding the old id's state (its completion, receipts and
open intents), moves the old id's receipt rows to the new id **with their keys**, and starts
the old id afresh with a ``step_renamed`` event of its own. The old id's events stay where they
are: its history is read under its old id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import prefect_waymark.ledger.sql as sql

from ..errors import LedgerError
from .base import LedgerReader
from .events import STEP_EVENT_KINDS, EventKind, ProgressEvent
from .schema import event_from_row, event_values, kind_names
from .step_state import StepState, apply_event, has_history, row_fields

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from .connection import DbConnection as Connection

__all__ = ["PlanRenames", "check_not_renamed", "refuse_if_renamed", "renamed_to"]


_COPIED = ("step_id", "branch", "kind", "run_id", "at", "data")


def _renamed_key(plan_id: str) -> str:
    """The ``waymark_meta`` row that says a plan id was renamed away (a primary-key lookup,
    cheap enough for every step start and action claim)."""
    return f"renamed:{plan_id}"[:64]


def refuse_if_renamed(conn: Connection, plan_id: str) -> None:
    """Inside a write transaction: raise :class:`LedgerError` if ``plan_id`` was renamed away
    (a run that started under the old id must not start a step or claim an action after the
    rename: the next run under the new id would not see them, and could act again)."""
    row = conn.execute(sql.META_VALUE, {"p_key": _renamed_key(plan_id)}).first()
    if row is not None:
        raise LedgerError(
            f"plan {plan_id!r} was renamed to {row.value!r} while this run went on; it stops "
            f"here: run the plan file with `plan_id: {row.value}`"
        )


def renamed_to(last: ProgressEvent | None) -> str | None:
    """The new id of a plan whose last ``plan_renamed`` event is ``last``, if it was renamed
    away (a plan renamed *to* this id has ``from_plan`` instead)."""
    if last is None or last.kind != EventKind.plan_renamed:
        return None
    to = last.data.get("to_plan")
    return str(to) if to else None


def check_not_renamed(ledger: LedgerReader, plan_id: str, source: str) -> None:
    """Raise :class:`LedgerError` if ``plan_id`` was renamed away: its history and receipts
    live under the new id, and a run under the old one would start it afresh."""
    last = ledger.last_event(plan_id, [EventKind.plan_renamed])
    to = renamed_to(last)
    if to is not None and last is not None:
        raise LedgerError(
            f"{source}: plan {plan_id!r} was renamed to {to!r} ({last.at:%Y-%m-%d %H:%M} UTC, "
            f"by {last.data.get('by', '?')}); its history and receipts are under {to!r} now. "
            f"Set `plan_id: {to}` in the plan file; nothing ran."
        )


class PlanRenames:
    """``rename_plan`` of :class:`~prefect_waymark.ledger.SqlLedger` (mixed into it)."""

    if TYPE_CHECKING:  # provided by SqlLedger

        def _write(self, *, durable: bool = False) -> AbstractContextManager[Connection]: ...

        def _append(
            self, conn: Connection, ev: ProgressEvent, lease_seconds: float
        ) -> ProgressEvent: ...

    def rename_plan(self, old: str, new: str, *, by: str) -> dict[str, int]:
        """Carry plan ``old``'s history and receipts over to ``new``; return the counts
        (``events``, ``steps``, ``receipts``). Raises :class:`LedgerError` with the reason if
        the rename cannot be done; then nothing changed."""
        if old == new:
            raise LedgerError(f"the plan is already called {new!r}: nothing to rename")
        with self._write() as conn:
            # PostgreSQL: step starts (they take a hold first), action claims (they write
            # receipts) and appends to either id wait until the rename commits, then see it.
            for statement in sql.lock_tables(conn.backend, sql.HOLDS, sql.RECEIPTS, sql.STEPS):
                conn.execute_raw(statement)
            self._check_rename(conn, old, new)
            copied = self._copy_events(conn, old, new)
            steps = self._fold_copies(conn, new)
            moved = f"UPDATE {sql.RECEIPTS} SET plan_id = :new WHERE plan_id = :old"
            receipts = int(conn.execute(moved, {"new": new, "old": old}).rowcount)
            counts = {"events": copied, "steps": steps, "receipts": receipts}
            conn.execute(sql.INSERT_META, {"key": _renamed_key(old), "value": new[:256]})
            closed = conn.execute(sql.META_VALUE, {"p_key": f"closed:{old}"[:64]}).first()
            if closed is not None:  # a closed plan stays closed under its new id
                key = f"closed:{new}"[:64]
                conn.execute(sql.INSERT_META, {"key": key, "value": closed.value})
            for plan_id, data in (
                (new, {"from_plan": old, "by": by, **counts}),
                (old, {"to_plan": new, "by": by, **counts}),
            ):
                ev = ProgressEvent(plan_id=plan_id, kind=EventKind.plan_renamed, data=data)
                conn.execute(sql.INSERT_EVENT, event_values(ev))
        return counts

    def rename_steps(
        self,
        plan_id: str,
        renames: Mapping[str, str],
        *,
        rebase: Mapping[str, str],
        by: str,
        source: str,
    ) -> dict[str, int]:
        """Carry each renamed step's state and receipts (``renames``: old id to new) over to
        its new id, and record the definition hash under the new ids of the steps in ``rebase``
        (step to hash: renamed steps, and steps whose dependencies were renamed, whose
        definition did not change otherwise). One transaction; raises :class:`LedgerError`
        with the reason if a rename cannot be done (then nothing changed): the old id has no
        history, the new one has, or a run holds the old id's step."""
        with self._write() as conn:
            # as rename_plan: claims and starts wait (PostgreSQL)
            for statement in sql.lock_tables(conn.backend, sql.HOLDS, sql.RECEIPTS, sql.STEPS):
                conn.execute_raw(statement)
            states = {
                sid: self._state_of(conn, plan_id, sid) for pair in renames.items() for sid in pair
            }
            for old, new in renames.items():
                self._check_step_rename(conn, plan_id, old, new, states)
            receipts = 0
            common = {"by": by, "source": source}
            for old, new in renames.items():
                moved_rows = (
                    f"UPDATE {sql.RECEIPTS} SET step_id = :new "
                    "WHERE plan_id = :p_plan AND step_id = :old"
                )
                params = {"new": new, "p_plan": plan_id, "old": old}
                receipts += int(conn.execute(moved_rows, params).rowcount)
                carried = states[old]
                assert carried is not None
                state = carried.model_dump(mode="json", exclude={"step_id"})
                data = {"from_step": old, "state": state, **common}
                if new in rebase:
                    data["def_hash"] = rebase[new]
                self._append_renamed(conn, plan_id, new, data)
                self._append_renamed(conn, plan_id, old, {"to_step": new, **common})
            moved = {o: n for o, n in renames.items()}
            for sid, def_hash in rebase.items():
                if sid not in moved.values():
                    data = {"dependencies": moved, "def_hash": def_hash, **common}
                    self._append_renamed(conn, plan_id, sid, data)
        return {"steps": len(renames), "receipts": receipts, "rebased": len(rebase)}

    def _append_renamed(
        self, conn: Connection, plan_id: str, step_id: str, data: Mapping[str, object]
    ) -> None:
        ev = ProgressEvent(
            plan_id=plan_id, kind=EventKind.step_renamed, step_id=step_id, data=dict(data)
        )
        self._append(conn, ev, 60.0)

    @staticmethod
    def _state_of(conn: Connection, plan_id: str, step_id: str) -> StepState | None:
        row = conn.execute(sql.STEP_STATE, {"p_plan": plan_id, "p_step": step_id}).first()
        fields = row_fields(row.state if row is not None else None, step_id)
        return StepState.model_construct(**fields) if fields is not None else None

    @staticmethod
    def _check_step_rename(
        conn: Connection,
        plan_id: str,
        old: str,
        new: str,
        states: Mapping[str, StepState | None],
    ) -> None:
        if old == new:
            raise LedgerError(f"step {old!r} is already called {new!r}: nothing to rename")
        if not has_history(states[old]):
            raise LedgerError(
                f"step {old!r} has no history in plan {plan_id!r}: nothing to carry over"
            )
        if has_history(states[new]):
            st = states[new]
            raise LedgerError(
                f"step {new!r} already has a history ({st.status if st else '?'}): a rename "
                "never merges two histories"
            )
        held = conn.execute(
            f"SELECT run_id FROM {sql.HOLDS} WHERE plan_id = :p_plan AND step_id = :old",
            {"p_plan": plan_id, "old": old},
        ).first()
        if held is not None:
            raise LedgerError(
                f"a run ({held.run_id}) holds step {old!r}: let it end before renaming the step"
            )

    @staticmethod
    def _check_rename(conn: Connection, old: str, new: str) -> None:
        def count(plan_id: str) -> int:
            return int(conn.execute(sql.COUNT_EVENTS, {"p_plan": plan_id}).scalar_one())

        if count(old) == 0:
            raise LedgerError(f"plan {old!r} has no history in this ledger: nothing to carry over")
        last = conn.execute(
            sql.PLAN_EVENTS + " AND kind = :kind ORDER BY seq DESC LIMIT 1",
            {"p_plan": old, "kind": EventKind.plan_renamed.value},
        ).first()
        to = renamed_to(event_from_row(last) if last is not None else None)
        if to is not None:
            raise LedgerError(f"plan {old!r} was already renamed to {to!r}")
        if n := count(new):
            raise LedgerError(
                f"plan {new!r} already has {n} event(s) in this ledger: a rename never merges "
                "two histories; pick an id that is new to this ledger"
            )
        held = conn.execute(
            f"SELECT branch, step_id, run_id FROM {sql.HOLDS} WHERE plan_id = :p_plan",
            {"p_plan": old},
        ).first()
        if held is not None:
            raise LedgerError(
                f"a run ({held.run_id}) holds branch {held.branch!r} of plan {old!r} at step "
                f"{held.step_id!r}: let it end (or stop it) before renaming the plan"
            )

    @staticmethod
    def _copy_events(conn: Connection, old: str, new: str) -> int:
        """Copies in the old order (inserted one by one in it, so their ``seq`` keeps it)."""
        q = f"SELECT {', '.join(_COPIED)} FROM {sql.EVENTS} WHERE plan_id = :p_plan ORDER BY seq"
        rows: list[dict[str, Any]] = [
            {"plan_id": new, **dict(zip(_COPIED, r, strict=True))}
            for r in conn.execute(q, {"p_plan": old}).all()
        ]
        insert = (
            f"INSERT INTO {sql.EVENTS} (plan_id, {', '.join(_COPIED)}) "
            f"VALUES (:plan_id, {', '.join(':' + c for c in _COPIED)})"
        )
        conn.executemany(insert, rows)
        return len(rows)

    @staticmethod
    def _fold_copies(conn: Connection, plan_id: str) -> int:
        params: dict[str, Any] = {"p_plan": plan_id}
        where = sql.in_list("kind", "k", kind_names(STEP_EVENT_KINDS), params)
        states: dict[str, StepState] = {}
        last: dict[str, int] = {}
        for row in conn.execute(f"{sql.PLAN_EVENTS} AND {where} ORDER BY seq", params):
            ev = event_from_row(row)
            assert ev.step_id is not None and ev.seq is not None
            states[ev.step_id] = apply_event(states.get(ev.step_id), ev)
            last[ev.step_id] = ev.seq
        return sql.insert_step_states(conn, plan_id, states, last)
